/*
 * TransferOwnerTag: the owner (NetworkBackend::AcquireOwner: a job, a background generator)
 * of the transfer whose bytes a packet carries. The packet backend's transports put it on
 * their data as a byte tag when several owners share the fabric (byte tags survive TCP's
 * segmentation), and the egress queue discs count each owner's bytes per link.
 */
#ifndef GPUSIM_TRANSFER_OWNER_TAG_H
#define GPUSIM_TRANSFER_OWNER_TAG_H

#include "ns3/tag.h"

namespace ns3
{

class TransferOwnerTag : public Tag
{
  public:
    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    TransferOwnerTag(uint32_t owner = 0);

    uint32_t GetOwner() const;

    uint32_t GetSerializedSize() const override;
    void Serialize(TagBuffer buf) const override;
    void Deserialize(TagBuffer buf) override;
    void Print(std::ostream& os) const override;

  private:
    uint32_t m_owner;
};

} // namespace ns3

#endif // GPUSIM_TRANSFER_OWNER_TAG_H

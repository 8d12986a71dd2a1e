/*
 * GpuNode: an ns-3 Node that is one GPU (its spec, memory accounting) in a server.
 */
#ifndef GPUSIM_GPU_NODE_H
#define GPUSIM_GPU_NODE_H

#include "ns3/gpu-spec.h"
#include "ns3/node.h"
#include "ns3/nstime.h"
#include "ns3/traced-value.h"

namespace ns3
{

class GpuNode : public Node
{
  public:
    static TypeId GetTypeId();
    GpuNode();
    ~GpuNode() override;

    void SetSpec(const gpusim::GpuSpec& spec);
    const gpusim::GpuSpec& GetSpec() const;

    uint32_t GetGpuIndex() const;   //!< global GPU index in the cluster (= rank by default)
    void SetGpuIndex(uint32_t i);
    uint32_t GetServer() const;
    void SetServer(uint32_t s);
    uint32_t GetLocalIndex() const; //!< index within the server
    void SetLocalIndex(uint32_t i);

    /// Device memory accounting: false (and no change) when the allocation does not fit.
    bool Allocate(uint64_t bytes);
    void Release(uint64_t bytes);
    uint64_t GetMemoryUsed() const;
    uint64_t GetPeakMemoryUsed() const;

    /// How long a kernel with this modelled duration, starting now, runs on this GPU: the
    /// duration times SlowdownFactor from SlowdownStart on (a straggler), else unchanged.
    Time KernelTime(Time modelled) const;
    /// SlowdownFactor is not 1.
    bool IsStraggler() const;

  private:
    gpusim::GpuSpec m_spec;
    uint32_t m_gpuIndex = 0;
    uint32_t m_server = 0;
    uint32_t m_localIndex = 0;
    TracedValue<uint64_t> m_memoryUsed; //!< bytes allocated on the device
    uint64_t m_peakMemory = 0;
    double m_slowdown = 1.0; //!< SlowdownFactor
    Time m_slowdownStart;    //!< SlowdownStart
};

} // namespace ns3

#endif // GPUSIM_GPU_NODE_H

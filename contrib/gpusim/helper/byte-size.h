/*
 * Byte sizes as nccl-tests and the gpusim CLI write them: "64", "4K", "16M", "1G" (binary
 * multiples; "KiB"/"KB"/"B" suffixes accepted).
 */
#ifndef GPUSIM_BYTE_SIZE_H
#define GPUSIM_BYTE_SIZE_H

#include <cstdint>
#include <string>

namespace ns3
{
namespace gpusim
{

/// Parses a byte size; throws std::invalid_argument naming the bad input.
uint64_t ParseByteSize(const std::string& s);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_BYTE_SIZE_H

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

/// The size in the largest binary unit that keeps it >= 1, as the CLI prints it: "512 B",
/// "64 KiB", "1.50 GiB" (whole numbers without decimals).
std::string FormatByteSize(uint64_t bytes);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_BYTE_SIZE_H

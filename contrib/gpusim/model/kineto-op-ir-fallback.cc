/*
 * Weak definition of TraceFormatError's constructor so the Kineto reader links and is tested
 * before op-ir.cc (owned by another branch) lands. The linker prefers op-ir.cc's strong
 * definition once it exists; this file can then be deleted.
 */
#include "ns3/op-ir.h"

namespace ns3
{
namespace gpusim
{

__attribute__((weak)) TraceFormatError::TraceFormatError(const std::string& file,
                                                         uint64_t line,
                                                         const std::string& reason) :
    std::runtime_error(file + ":" + std::to_string(line) + ": " + reason),
    m_file(file),
    m_line(line),
    m_reason(reason)
{
}

} // namespace gpusim
} // namespace ns3

/*
 * ProfileTableCostModel: kernel durations measured on a real GPU, looked up by kernel name and
 * launch shape (grid/block) or GEMM shape (m, n, k, batch, dtype). Kernels the table does not
 * know fall back to the recorded duration, then to the roofline estimate. The table format is
 * documented in doc/record-simulate.md.
 */
#ifndef GPUSIM_PROFILE_TABLE_COST_MODEL_H
#define GPUSIM_PROFILE_TABLE_COST_MODEL_H

#include "ns3/kernel-cost-model.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace ns3
{
namespace gpusim
{

/// A parsed kernel table: durations in microseconds under the four key kinds.
struct KernelTable
{
    using Dim3 = std::array<uint32_t, 3>;
    using GemmKey = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, DataType>;

    std::string gpu; //!< GPU the table was measured on (informational)
    std::map<std::tuple<std::string, Dim3, Dim3>, double> byLaunch; //!< name + grid + block
    std::map<std::pair<std::string, GemmKey>, double> byNamedGemm;  //!< name + GEMM shape
    std::map<GemmKey, double> byGemm;                               //!< any GEMM of a shape
    std::map<std::string, double> byName;                           //!< any launch of a name

    size_t Size() const
    {
        return byLaunch.size() + byNamedGemm.size() + byGemm.size() + byName.size();
    }

    /// Measured duration (us) of a kernel op, or -1 if the table does not know it.
    double Lookup(const Op& op) const;
};

/// Reads a kernel table (JSON). Throws TraceFormatError naming the file and entry.
KernelTable LoadKernelTable(const std::string& file);

/// A kernel table to fill in on a real GPU: one entry per distinct kernel key of the job
/// (name + grid + block, or name + GEMM shape), with the roofline estimate on `gpu` as
/// `dur_us`, `"estimated": true` and the number of `launches`, most launched first. As written
/// it gives the same times as the roofline. Returns the JSON text.
std::string KernelTableTemplate(const JobTrace& job, const GpuSpec& gpu,
                                const std::string& gpuName);

} // namespace gpusim

class ProfileTableCostModel : public KernelCostModel
{
  public:
    static TypeId GetTypeId();
    ProfileTableCostModel();
    ~ProfileTableCostModel() override;

    /// Loads the table from a file (also the TableFile attribute). Throws on a bad file.
    void LoadTable(const std::string& file);
    void SetTable(const gpusim::KernelTable& table);
    const gpusim::KernelTable& GetTable() const;

    /// Kernel launches costed so far from the table / by the fallback.
    uint64_t GetHits() const;
    uint64_t GetMisses() const;

  protected:
    double DoGetSeconds(const gpusim::Op& op, const gpusim::GpuSpec& spec) const override;

  private:
    void SetTableFile(std::string file);
    std::string GetTableFile() const;

    std::string m_file;
    gpusim::KernelTable m_table;
    bool m_useRecorded;       //!< fallback uses Op::durUs before the roofline
    mutable uint64_t m_hits;
    mutable uint64_t m_misses;
};

} // namespace ns3

#endif // GPUSIM_PROFILE_TABLE_COST_MODEL_H

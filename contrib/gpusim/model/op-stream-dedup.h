/*
 * Deduplication of per-rank op streams: ranks whose op streams are the same program up to
 * their position in the job (comm rank, peer offsets, communicator and allocation ids) hash
 * identically and are grouped. See doc/record-simulate.md.
 */
#ifndef GPUSIM_OP_STREAM_DEDUP_H
#define GPUSIM_OP_STREAM_DEDUP_H

#include "ns3/op-ir.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ns3
{
namespace gpusim
{

/// Hash of one rank's op stream (64-bit FNV-1a over normalised fields, op by op).
/// Ignored: comm_init's `rank`, `rec_us`. Names local to a rank or process are replaced by
/// their order of first use: communicator ids, `ptr`, `group`, event ids (per process in the
/// shim), stream ids other than 0, thread tokens. Send/recv `peer` is hashed relative to the
/// rank's own comm rank ((peer - me) mod nranks). With `withTimings` false, `cpu_us` and `dur_us` are ignored too.
uint64_t HashOpStream(const RankTrace& rank, bool withTimings = true);
/// The same for rank r of a job, following RankTrace::opsFrom for shared op lists.
uint64_t HashOpStream(const JobTrace& job, uint32_t r, bool withTimings = true);

/// Ranks grouped by identical hashes (each group lists ranks in increasing order; groups are
/// ordered by their first rank).
struct DedupReport
{
    uint32_t ranks = 0;
    std::vector<std::vector<uint32_t>> groups;           //!< identical including host timings
    std::vector<std::vector<uint32_t>> structuralGroups; //!< identical but for cpu_us/dur_us
    uint64_t opsTotal = 0;                               //!< ops over all ranks
    uint64_t opsDistinct = 0;                            //!< ops over one rank per group

    /// "N ranks, K distinct op streams (S ignoring host timings)".
    std::string Summary() const;
};

DedupReport GroupIdenticalRanks(const JobTrace& job);

/// Memory deduplication for the engine: every rank whose ops equal an earlier rank's in every
/// field (comm_init's `rank` excepted) gives its op list up and points RankTrace::opsFrom at
/// that rank; its `ops` keep only its comm_init lines. Simulation results do not change.
/// Returns how many ranks now share. ValidateJobTrace and the engine understand shared ranks;
/// WriteJobTrace refuses them.
uint32_t ShareIdenticalRanks(JobTrace& job);

/// Incremental form of ShareIdenticalRanks, for ranks arriving one at a time.
class RankSharer
{
  public:
    /// Shares job.ranks[r]'s op list with an earlier offered rank that has the same ops.
    /// Returns true if it now shares.
    bool Offer(JobTrace& job, uint32_t r);

  private:
    std::map<uint64_t, std::vector<uint32_t>> m_candidates; //!< literal hash -> ranks
};

/// ReadJobTrace that shares identical ranks' op lists as it reads, so the duplicates are
/// never all in memory at once. `shared` (optional) receives how many ranks share.
JobTrace ReadJobTraceSharing(const std::string& dir, uint32_t* shared = nullptr);

/// True if two ops are the same in every field (comm_init's `rank` excepted when both are
/// comm_init).
bool SameOpForSharing(const Op& a, const Op& b);
/// True if a rank whose ops are `ops` may run `list` (equal op by op): on every communicator
/// the list sends or receives on, both have the same comm rank, so the list's peers, read as
/// offsets from the sharer's comm rank (RankTrace::opsFrom), are the ones written.
bool SamePeersWhenShared(const std::vector<Op>& list, const std::vector<Op>& ops);

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_OP_STREAM_DEDUP_H

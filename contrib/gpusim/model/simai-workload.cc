/*
 * SimAI workload files -> Op IR (simai-workload.h, doc/simai.md).
 *
 * What the format means is taken from SimAI's own reader and schedule, aliyun/SimAI at
 * commit cef83f9d, astra-sim-alibabacloud/astra-sim/ (cited below as Workload.cc, Layer.cc,
 * Sys.cc, Common.hh, network_frontend/ns3/AstraSimNetwork.cc), and from its communicator
 * layout, MockNcclGroup::MockNcclGroup (MockNcclGroup.cc, now in the SimCCL submodule;
 * astra-sim-alibabacloud/astra-sim/system/MockNcclGroup.cc in earlier SimAI commits).
 */
#include "ns3/simai-workload.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace ns3
{
namespace gpusim
{

namespace
{

/// Every policy word SimAI's decode_parallelsim knows (Workload.cc:1048-1072); only some run.
const std::vector<std::string> kSimaiPolicyWords = {
    "DATA",
    "HYBRID_TRANSFORMER",
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD",
    "HYBRID_DLRM",
    "HYBRID_DLRM_ENHANCED",
    "MODEL",
    "HYBRID_DATA_MODEL",
    "HYBRID_MODEL_DATA",
    "HYBRID_CUSTOMIZED",
    "MICRO",
    "DISTRIBUTED_INFERENCE",
};

/// Layer line columns (Workload.cc:1280-1311 reads exactly these twelve, in this order).
constexpr size_t kLayerColumns = 12;

enum class Phase : uint8_t
{
    Fwd,
    Ig,
    Wg,
};

const char*
PhaseColumn(Phase p)
{
    switch (p)
    {
    case Phase::Fwd:
        return "forward";
    case Phase::Ig:
        return "input-gradient";
    case Phase::Wg:
        return "weight-gradient";
    }
    return "?";
}

std::vector<std::string>
SplitWords(const std::string& line)
{
    std::vector<std::string> out;
    std::istringstream is(line);
    std::string w;
    while (is >> w)
    {
        out.push_back(w);
    }
    return out;
}

bool
ParseUnsigned(const std::string& s, uint64_t& out)
{
    if (s.empty() || s.size() > 20 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    {
        return false;
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0')
    {
        return false;
    }
    out = v;
    return true;
}

bool
ParseSigned(const std::string& s, int64_t& out)
{
    uint64_t v = 0;
    if (!s.empty() && s[0] == '-')
    {
        if (!ParseUnsigned(s.substr(1), v) || v > uint64_t(INT64_MAX))
        {
            return false;
        }
        out = -static_cast<int64_t>(v);
        return true;
    }
    if (!ParseUnsigned(s, v) || v > uint64_t(INT64_MAX))
    {
        return false;
    }
    out = static_cast<int64_t>(v);
    return true;
}

bool
EndsWith(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// One communication-type column. SimAI (Workload.cc:1317-1489) takes the collective from the
/// name's prefix and the group from its suffix: a bare name runs in the TP group for the
/// forward and input-gradient columns (Workload.cc:1436-1446, 1379-1389) and in the DP group
/// for the weight-gradient column (Workload.cc:1320-1330); "_EP" runs in the EP group and
/// "_DP_EP" in the DP_EP group. Any other word is no collective for SimAI (ComType::None);
/// gpusim rejects it, except NONE and BROADCAST (which AICB writes and SimAI skips).
SimaiComm
ParseComm(const std::string& type,
          Phase phase,
          SimaiPolicy policy,
          const std::string& bytesText,
          const std::string& file,
          uint64_t line)
{
    SimaiComm c;
    c.type = type;
    if (!ParseUnsigned(bytesText, c.bytes))
    {
        throw TraceFormatError(file, line,
                               std::string("the ") + PhaseColumn(phase) + " comm size '" +
                                   bytesText + "' is not a whole number of bytes");
    }
    if (type == "NONE" || type == "BROADCAST")
    {
        return c;
    }
    std::string base = type;
    SimaiGroup group = phase == Phase::Wg ? SimaiGroup::Dp : SimaiGroup::Tp;
    if (EndsWith(type, "_DP_EP"))
    {
        base = type.substr(0, type.size() - 6);
        group = SimaiGroup::DpEp;
    }
    else if (EndsWith(type, "_EP"))
    {
        base = type.substr(0, type.size() - 3);
        group = SimaiGroup::Ep;
    }
    if (base == "ALLREDUCE")
    {
        c.coll = SimaiCollective::AllReduce;
    }
    else if (base == "ALLGATHER")
    {
        c.coll = SimaiCollective::AllGather;
    }
    else if (base == "REDUCESCATTER")
    {
        c.coll = SimaiCollective::ReduceScatter;
    }
    else if (base == "ALLTOALL")
    {
        c.coll = SimaiCollective::AllToAll;
    }
    else if (base == "ALLREDUCEALLTOALL")
    {
        // SimAI tests the ALLREDUCE prefix first (Workload.cc:1320 before 1342), so this word
        // reaches it as an AllReduce in no group: there is nothing consistent to run.
        throw TraceFormatError(file, line,
                               "communication type '" + type +
                                   "' is not supported (SimAI itself reads it as an ALLREDUCE "
                                   "without a group)");
    }
    else
    {
        throw TraceFormatError(file, line,
                               "unknown communication type '" + type + "' in the " +
                                   PhaseColumn(phase) +
                                   " comm column (known: NONE, ALLREDUCE, ALLGATHER, "
                                   "REDUCESCATTER, ALLTOALL, each also with _EP or _DP_EP, "
                                   "and BROADCAST, which SimAI does not run)");
    }
    // MICRO: SimAI involves every dimension in the weight-gradient collective
    // (decode_involved_dimensions, Workload.cc:1085-1092): the whole job.
    c.group = policy == SimaiPolicy::Micro ? SimaiGroup::World : group;
    return c;
}

/// Reads "KEY: N" from the header tokens; returns false if KEY is absent.
bool
HeaderNumber(const std::vector<std::string>& tokens,
             const std::string& key,
             uint64_t& out,
             const std::string& file)
{
    for (size_t i = 1; i < tokens.size(); ++i)
    {
        if (tokens[i] != key)
        {
            continue;
        }
        if (i + 1 >= tokens.size() || !ParseUnsigned(tokens[i + 1], out))
        {
            throw TraceFormatError(file, 1,
                                   "header field '" + key + "' needs a whole number" +
                                       (i + 1 < tokens.size() ? ", got '" + tokens[i + 1] + "'"
                                                              : std::string(", got nothing")));
        }
        return true;
    }
    return false;
}

/// "KEY: N l1 .. lN" (checkpoints:, checkpoint_initiates:; Workload.cc:1196-1227 reads the
/// count and then the layer indices).
std::vector<uint64_t>
HeaderList(const std::vector<std::string>& tokens, const std::string& key, const std::string& file)
{
    std::vector<uint64_t> out;
    uint64_t n = 0;
    if (!HeaderNumber(tokens, key, n, file))
    {
        return out;
    }
    const size_t at = std::find(tokens.begin(), tokens.end(), key) - tokens.begin();
    for (uint64_t j = 0; j < n; ++j)
    {
        uint64_t layer = 0;
        const size_t k = at + 2 + j;
        if (k >= tokens.size() || !ParseUnsigned(tokens[k], layer))
        {
            throw TraceFormatError(file, 1,
                                   "header field '" + key + "' announces " + std::to_string(n) +
                                       " layer indices but index " + std::to_string(j + 1) +
                                       (k < tokens.size() ? " is '" + tokens[k] + "'"
                                                          : std::string(" is missing")));
        }
        out.push_back(layer);
    }
    return out;
}

std::string
CommName(SimaiGroup g, uint32_t index)
{
    switch (g)
    {
    case SimaiGroup::Tp:
        return "simai-tp-" + std::to_string(index);
    case SimaiGroup::Dp:
        return "simai-dp-" + std::to_string(index);
    case SimaiGroup::Ep:
        return "simai-ep-" + std::to_string(index);
    case SimaiGroup::DpEp:
        return "simai-dpep-" + std::to_string(index);
    case SimaiGroup::World:
        return "simai-world";
    case SimaiGroup::None:
        break;
    }
    return "?";
}

/// Index of `rank`'s group of kind g (names its communicator).
uint32_t
GroupIndex(SimaiGroup g, uint32_t tp, uint32_t ep, uint32_t rank)
{
    const uint32_t d = rank / tp; // DP index
    const uint32_t t = rank % tp; // TP index
    switch (g)
    {
    case SimaiGroup::Tp:
        return d;
    case SimaiGroup::Dp:
        return t;
    case SimaiGroup::Ep:
        return (d / ep) * tp + t;
    case SimaiGroup::DpEp:
        return (d % ep) * tp + t;
    default:
        return 0;
    }
}

CollKind
ToCollKind(SimaiCollective c)
{
    switch (c)
    {
    case SimaiCollective::AllGather:
        return CollKind::AllGather;
    case SimaiCollective::ReduceScatter:
        return CollKind::ReduceScatter;
    case SimaiCollective::AllToAll:
        return CollKind::AllToAll;
    default:
        return CollKind::AllReduce;
    }
}

/// Builds rank 0's op list (every rank runs the same program on its own communicators).
class SimaiEmitter
{
  public:
    SimaiEmitter(const SimaiWorkload& w, uint32_t world, uint32_t tp, uint32_t ep)
        : m_w(w),
          m_world(world),
          m_tp(tp),
          m_ep(ep)
    {
        for (SimaiGroup g : {SimaiGroup::Tp,
                             SimaiGroup::Dp,
                             SimaiGroup::Ep,
                             SimaiGroup::DpEp,
                             SimaiGroup::World})
        {
            m_groupSize[g] =
                static_cast<uint32_t>(SimaiGroupMembers(g, m_world, m_tp, m_ep, 0).size());
        }
    }

    /// Group size of g in this job (every group of a kind has the same size).
    uint32_t GroupSize(SimaiGroup g) const
    {
        auto it = m_groupSize.find(g);
        return it == m_groupSize.end() ? 1 : it->second;
    }

    /// Whether the collective runs: a collective, bytes to move, a group of several ranks.
    /// SimAI creates no communicator for a group of one (Sys.cc:1413-1428).
    bool Runs(const SimaiComm& c) const
    {
        return c.coll != SimaiCollective::None && c.bytes > 0 && GroupSize(c.group) > 1;
    }

    /// Groups some collective of the file runs in, in CommInit order.
    std::vector<SimaiGroup> UsedGroups() const
    {
        std::set<SimaiGroup> used;
        for (const SimaiLayer& l : m_w.layers)
        {
            for (const SimaiComm* c : {&l.fwd, &l.ig, &l.wg})
            {
                if (Runs(*c))
                {
                    used.insert(c->group);
                }
            }
        }
        return std::vector<SimaiGroup>(used.begin(), used.end());
    }

    /// CommInit ops of `rank`, one per used group.
    std::vector<Op> CommInits(uint32_t rank) const
    {
        std::vector<Op> out;
        for (SimaiGroup g : UsedGroups())
        {
            const std::vector<uint32_t> members = SimaiGroupMembers(g, m_world, m_tp, m_ep, rank);
            Op op;
            op.kind = OpKind::CommInit;
            op.comm = CommName(g, g == SimaiGroup::World ? 0 : GroupIndex(g, m_tp, m_ep, rank));
            op.nranks = static_cast<int32_t>(members.size());
            op.commRank =
                static_cast<int32_t>(std::find(members.begin(), members.end(), rank) -
                                     members.begin());
            out.push_back(op);
        }
        return out;
    }

    RankTrace Build(uint32_t passes)
    {
        m_ops = CommInits(0);
        for (int64_t s : {kCompute, kWgComm})
        {
            Op op;
            op.kind = OpKind::StreamCreate;
            op.stream = s;
            op.flags = 1; // non-blocking: no implicit ordering with the legacy stream
            m_ops.push_back(op);
        }
        m_wgDone.assign(m_w.layers.size(), 0);
        for (uint32_t p = 0; p < passes; ++p)
        {
            const std::string iteration = "iteration " + std::to_string(p);
            Marker(iteration, MarkerPhase::Begin);
            if (m_w.policy == SimaiPolicy::Micro)
            {
                MicroPass();
            }
            else
            {
                TransformerPass();
            }
            if (p + 1 < passes)
            {
                // The pass ends when its last compute is done (the host issues without
                // delay, so this sync moves no device work); weight-gradient collectives may
                // run on into the next pass, as in SimAI.
                Sync(OpKind::StreamSync, kCompute);
            }
            else
            {
                // SimAI reports once every stream has finished (Workload.cc:211-231).
                Sync(OpKind::DeviceSync, 0);
            }
            Marker(iteration, MarkerPhase::End);
        }
        RankTrace rt;
        rt.rank = 0;
        rt.ops = std::move(m_ops);
        return rt;
    }

  private:
    static constexpr int64_t kCompute = 1; //!< compute and blocking collectives
    static constexpr int64_t kWgComm = 2;  //!< non-blocking weight-gradient collectives

    /// HYBRID_TRANSFORMER(_FWD_IN_BCKWD): iterate_hybrid_parallel_Transformer (Workload.cc:
    /// 702-791) and its _fwd_in_bckwd variant (Workload.cc:793-931). Forward in layer order:
    /// wait for the layer's weight-gradient collective of the previous pass, compute, then
    /// the forward collective, blocking. Backward in reverse order: input-gradient compute
    /// and its collective (blocking), then weight-gradient compute and its collective, not
    /// blocking (issued FIFO, waited for by the next pass's forward of that layer).
    void TransformerPass()
    {
        const bool recompute = m_w.policy == SimaiPolicy::HybridTransformerFwdInBckwd;
        const size_t n = m_w.layers.size();
        for (size_t i = 0; i < n; ++i)
        {
            Forward(i);
        }
        for (size_t k = n; k-- > 0;)
        {
            const SimaiLayer& l = m_w.layers[k];
            if (recompute && l.initiatesRecompute)
            {
                // Activation recomputation: from the nearest checkpoint layer at or below
                // this one, re-run the forward of the layers before it (Workload.cc:867-880,
                // 902-929).
                size_t c = k;
                while (c > 0 && !m_w.layers[c].checkpoint)
                {
                    --c;
                }
                for (size_t j = c; j < k; ++j)
                {
                    Forward(j);
                }
            }
            Compute(l, l.igNs, ".ig");
            Blocking(l, l.ig, ".ig");
            Compute(l, l.wgNs, ".wg");
            WeightGradComm(k);
        }
    }

    /// MICRO: SimAI's iterate_micro_benchmark (Workload.cc:233-243) issues weight-gradient
    /// collectives only, not blocking. gpusim issues every line's, in file order (SimAI
    /// re-issues line 0's; doc/simai.md), one after another on one stream.
    void MicroPass()
    {
        for (size_t k = 0; k < m_w.layers.size(); ++k)
        {
            WeightGradComm(k);
        }
    }

    void Forward(size_t i)
    {
        const SimaiLayer& l = m_w.layers[i];
        if (m_wgDone[i])
        {
            Wait(kCompute, m_wgDone[i]);
        }
        Compute(l, l.fwdNs, ".fwd");
        SimaiComm c = l.fwd;
        if (m_w.policy == SimaiPolicy::HybridTransformerFwdInBckwd && c.bytes > 0 &&
            c.bytes < 4096)
        {
            c.bytes = 4096; // SimAI's floor for forward collectives (Workload.cc:813-815)
        }
        Blocking(l, c, ".fwd");
    }

    /// Compute: SimAI waits `ns` before the next step (Workload.cc:810-812: only when > 0).
    /// Its Tick is a nanosecond: CLOCK_PERIOD 1 (Common.hh:17-20) and the ns-3 front end
    /// schedules Tick deltas as NanoSeconds (AstraSimNetwork.cc:92-104).
    void Compute(const SimaiLayer& l, uint64_t ns, const char* suffix)
    {
        if (ns == 0)
        {
            return;
        }
        Kernel(kCompute, l.name + suffix, ns);
    }

    /// A blocking collective: in stream order on the compute stream, then the layer's update
    /// time (SimAI counts a collective finished update_time after its data arrive: Layer.cc:
    /// 90-113, the same delay for all three phases, Layer.cc:70-72).
    void Blocking(const SimaiLayer& l, const SimaiComm& c, const char* suffix)
    {
        if (!Runs(c))
        {
            return;
        }
        Collective(kCompute, c);
        if (l.updateNs > 0)
        {
            Kernel(kCompute, l.name + suffix + ".update", l.updateNs);
        }
    }

    void WeightGradComm(size_t k)
    {
        const SimaiLayer& l = m_w.layers[k];
        if (!Runs(l.wg))
        {
            return;
        }
        const uint64_t ready = Record(kCompute);
        Wait(kWgComm, ready);
        Collective(kWgComm, l.wg);
        if (l.updateNs > 0)
        {
            Kernel(kWgComm, l.name + ".wg.update", l.updateNs);
        }
        if (m_w.policy != SimaiPolicy::Micro)
        {
            m_wgDone[k] = Record(kWgComm);
        }
    }

    void Kernel(int64_t stream, const std::string& name, uint64_t ns)
    {
        Op op;
        op.kind = OpKind::Kernel;
        op.stream = stream;
        op.name = name;
        op.durUs = ns / 1e3;
        m_ops.push_back(op);
    }

    void Collective(int64_t stream, const SimaiComm& c)
    {
        // SimAI's size is the whole buffer of the collective: MockNccl cuts every collective
        // into data_size / nranks pieces (AllGather's output, ReduceScatter's input), which
        // is the Op IR's bytes (AllGather: receive buffer; others: send buffer).
        Op op;
        op.kind = OpKind::Collective;
        op.stream = stream;
        op.coll = ToCollKind(c.coll);
        op.comm = CommName(c.group, c.group == SimaiGroup::World
                                        ? 0
                                        : GroupIndex(c.group, m_tp, m_ep, 0));
        op.bytes = c.bytes;
        op.dtype = DataType::U8;
        op.count = c.bytes;
        op.seq = m_seq[op.comm]++;
        m_ops.push_back(op);
    }

    uint64_t Record(int64_t stream)
    {
        Op op;
        op.kind = OpKind::EventRecord;
        op.stream = stream;
        op.event = ++m_lastEvent;
        m_ops.push_back(op);
        return op.event;
    }

    void Wait(int64_t stream, uint64_t event)
    {
        Op op;
        op.kind = OpKind::StreamWaitEvent;
        op.stream = stream;
        op.event = event;
        m_ops.push_back(op);
    }

    void Sync(OpKind kind, int64_t stream)
    {
        Op op;
        op.kind = kind;
        op.stream = stream;
        m_ops.push_back(op);
    }

    void Marker(const std::string& name, MarkerPhase phase)
    {
        Op op;
        op.kind = OpKind::Marker;
        op.name = name;
        op.phase = phase;
        m_ops.push_back(op);
    }

    const SimaiWorkload& m_w;
    uint32_t m_world;
    uint32_t m_tp;
    uint32_t m_ep;
    std::vector<Op> m_ops;
    std::vector<uint64_t> m_wgDone; //!< per layer: event after its last wg collective, 0 = none
    uint64_t m_lastEvent = 0;
    std::map<std::string, uint64_t> m_seq;
    std::map<SimaiGroup, uint32_t> m_groupSize;
};

} // namespace

const char*
ToString(SimaiPolicy p)
{
    switch (p)
    {
    case SimaiPolicy::HybridTransformer:
        return "HYBRID_TRANSFORMER";
    case SimaiPolicy::HybridTransformerFwdInBckwd:
        return "HYBRID_TRANSFORMER_FWD_IN_BCKWD";
    case SimaiPolicy::Micro:
        return "MICRO";
    }
    return "?";
}

const char*
ToString(SimaiCollective c)
{
    switch (c)
    {
    case SimaiCollective::None:
        return "none";
    case SimaiCollective::AllReduce:
        return "allreduce";
    case SimaiCollective::AllGather:
        return "allgather";
    case SimaiCollective::ReduceScatter:
        return "reducescatter";
    case SimaiCollective::AllToAll:
        return "alltoall";
    }
    return "?";
}

const char*
ToString(SimaiGroup g)
{
    switch (g)
    {
    case SimaiGroup::None:
        return "none";
    case SimaiGroup::Tp:
        return "tp";
    case SimaiGroup::Dp:
        return "dp";
    case SimaiGroup::Ep:
        return "ep";
    case SimaiGroup::DpEp:
        return "dp_ep";
    case SimaiGroup::World:
        return "world";
    }
    return "?";
}

bool
IsSimaiWorkloadFile(const std::string& path)
{
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    {
        return false;
    }
    std::ifstream in(path);
    std::string first;
    if (!(in >> first))
    {
        return false;
    }
    return std::find(kSimaiPolicyWords.begin(), kSimaiPolicyWords.end(), first) !=
           kSimaiPolicyWords.end();
}

SimaiWorkload
ParseSimaiWorkload(std::istream& in, const std::string& file)
{
    SimaiWorkload w;
    w.file = file;
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
    {
        if (!line.empty() && line.back() == '\r')
        {
            line.pop_back();
        }
        lines.push_back(line);
    }
    if (lines.empty() || SplitWords(lines[0]).empty())
    {
        throw TraceFormatError(file, 1,
                               "missing header: the first line must name SimAI's parallelism "
                               "(e.g. HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: "
                               "8 ... all_gpus: 32)");
    }

    // Header (Workload.cc:1152-1271).
    const std::vector<std::string> header = SplitWords(lines[0]);
    w.policyName = header[0];
    if (w.policyName == "HYBRID_TRANSFORMER_FWD_IN_BCKWD")
    {
        w.policy = SimaiPolicy::HybridTransformerFwdInBckwd;
    }
    else if (w.policyName == "HYBRID_TRANSFORMER")
    {
        w.policy = SimaiPolicy::HybridTransformer;
    }
    else if (w.policyName == "MICRO")
    {
        w.policy = SimaiPolicy::Micro;
    }
    else if (std::find(kSimaiPolicyWords.begin(), kSimaiPolicyWords.end(), w.policyName) !=
             kSimaiPolicyWords.end())
    {
        throw TraceFormatError(file, 1,
                               "SimAI parallelism '" + w.policyName +
                                   "' is not supported (gpusim runs "
                                   "HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_TRANSFORMER and "
                                   "MICRO)");
    }
    else
    {
        throw TraceFormatError(file, 1,
                               "missing header: the first line must start with SimAI's "
                               "parallelism (HYBRID_TRANSFORMER_FWD_IN_BCKWD, "
                               "HYBRID_TRANSFORMER or MICRO), not '" +
                                   w.policyName + "'");
    }
    uint64_t v = 0;
    const bool hasTp = HeaderNumber(header, "model_parallel_NPU_group:", v, file);
    w.tp = hasTp ? static_cast<uint32_t>(v) : 0;
    if (!hasTp && w.policy != SimaiPolicy::Micro)
    {
        throw TraceFormatError(file, 1,
                               "the header has no model_parallel_NPU_group: (the TP size)");
    }
    auto atLeastOne = [&](const std::string& key, uint32_t& field) {
        if (HeaderNumber(header, key, v, file))
        {
            if (v == 0)
            {
                throw TraceFormatError(file, 1, "header field '" + key + "' must be at least 1");
            }
            field = static_cast<uint32_t>(v);
        }
    };
    atLeastOne("ep:", w.ep);
    atLeastOne("pp:", w.pp);
    atLeastOne("vpp:", w.vpp);
    atLeastOne("ga:", w.ga);
    if (HeaderNumber(header, "all_gpus:", v, file))
    {
        w.allGpus = static_cast<uint32_t>(v);
    }
    // "pp_comm" and "pp_comm:" both (Workload.cc:1258-1262).
    if (!HeaderNumber(header, "pp_comm", w.ppCommBytes, file))
    {
        HeaderNumber(header, "pp_comm:", w.ppCommBytes, file);
    }
    const std::vector<uint64_t> checkpoints = HeaderList(header, "checkpoints:", file);
    const std::vector<uint64_t> initiates = HeaderList(header, "checkpoint_initiates:", file);

    // Layer count, then the layers (Workload.cc:1274-1311).
    if (lines.size() < 2)
    {
        throw TraceFormatError(file, 2, "missing the number of layers after the header");
    }
    const std::vector<std::string> countWords = SplitWords(lines[1]);
    uint64_t count = 0;
    if (countWords.size() != 1 || !ParseUnsigned(countWords[0], count))
    {
        throw TraceFormatError(file, 2,
                               "expected the number of layers, got '" + lines[1] + "'");
    }
    if (count == 0)
    {
        throw TraceFormatError(file, 2, "the workload has no layers");
    }
    size_t at = 2;
    while (w.layers.size() < count)
    {
        if (at >= lines.size())
        {
            throw TraceFormatError(file, lines.size(),
                                   "the file ends after " + std::to_string(w.layers.size()) +
                                       " of the " + std::to_string(count) +
                                       " layers line 2 announces");
        }
        const uint64_t lineNo = at + 1;
        const std::vector<std::string> c = SplitWords(lines[at++]);
        if (c.empty())
        {
            continue;
        }
        if (c.size() != kLayerColumns)
        {
            throw TraceFormatError(file, lineNo,
                                   "a layer line has 12 columns (name, dependency, fwd compute, "
                                   "fwd comm type, fwd comm size, ig compute, ig comm type, ig "
                                   "comm size, wg compute, wg comm type, wg comm size, update "
                                   "time), this one has " +
                                       std::to_string(c.size()));
        }
        SimaiLayer l;
        l.line = lineNo;
        l.name = c[0];
        if (!ParseSigned(c[1], l.dependency))
        {
            throw TraceFormatError(file, lineNo,
                                   "the dependency column '" + c[1] + "' is not a whole number");
        }
        auto time = [&](const std::string& s, const char* what) {
            uint64_t ns = 0;
            if (!ParseUnsigned(s, ns))
            {
                throw TraceFormatError(file, lineNo,
                                       std::string("the ") + what + " time '" + s +
                                           "' is not a whole number of nanoseconds");
            }
            return ns;
        };
        l.fwdNs = time(c[2], "forward compute");
        l.fwd = ParseComm(c[3], Phase::Fwd, w.policy, c[4], file, lineNo);
        l.igNs = time(c[5], "input-gradient compute");
        l.ig = ParseComm(c[6], Phase::Ig, w.policy, c[7], file, lineNo);
        l.wgNs = time(c[8], "weight-gradient compute");
        l.wg = ParseComm(c[9], Phase::Wg, w.policy, c[10], file, lineNo);
        l.updateNs = time(c[11], "update");
        w.layers.push_back(l);
    }
    for (; at < lines.size(); ++at)
    {
        if (!SplitWords(lines[at]).empty())
        {
            throw TraceFormatError(file, at + 1,
                                   "more layer lines than the " + std::to_string(count) +
                                       " line 2 announces");
        }
    }
    for (const auto& [list, key] : {std::make_pair(&checkpoints, "checkpoints:"),
                                    std::make_pair(&initiates, "checkpoint_initiates:")})
    {
        for (uint64_t layer : *list)
        {
            if (layer >= count)
            {
                throw TraceFormatError(file, 1,
                                       std::string("header field '") + key + "' names layer " +
                                           std::to_string(layer) + " but there are " +
                                           std::to_string(count) + " (0-based)");
            }
            (list == &checkpoints ? w.layers[layer].checkpoint
                                  : w.layers[layer].initiatesRecompute) = true;
        }
    }
    return w;
}

SimaiWorkload
ReadSimaiWorkload(const std::string& file)
{
    std::ifstream in(file);
    if (!in)
    {
        throw TraceFormatError(file, 0, "cannot open the SimAI workload file");
    }
    return ParseSimaiWorkload(in, file);
}

std::vector<uint32_t>
SimaiGroupMembers(SimaiGroup g, uint32_t world, uint32_t tp, uint32_t ep, uint32_t rank)
{
    // MockNcclGroup's layout with one pipeline stage (SimAI fixes PP_size = 1, Sys.cc:1395,
    // 1408): DP = world / TP, DP_EP = DP / EP (Sys.cc:1396-1398). With d = rank / TP (DP
    // index) and t = rank % TP: TP groups are consecutive ranks; a DP group is every d for
    // one t; an EP group is EP consecutive TP groups' rank t; a DP_EP group takes every EP-th
    // TP group starting at d mod EP.
    if (tp == 0)
    {
        tp = world;
    }
    std::vector<uint32_t> out;
    const uint32_t dp = world / tp;
    const uint32_t d = rank / tp;
    const uint32_t t = rank % tp;
    switch (g)
    {
    case SimaiGroup::Tp:
        for (uint32_t j = 0; j < tp; ++j)
        {
            out.push_back(d * tp + j);
        }
        break;
    case SimaiGroup::Dp:
        for (uint32_t j = 0; j < dp; ++j)
        {
            out.push_back(j * tp + t);
        }
        break;
    case SimaiGroup::Ep:
        for (uint32_t e = 0; e < ep; ++e)
        {
            out.push_back(((d / ep) * ep + e) * tp + t);
        }
        break;
    case SimaiGroup::DpEp:
        for (uint32_t e = 0; e < dp / ep; ++e)
        {
            out.push_back(((d % ep) + e * ep) * tp + t);
        }
        break;
    case SimaiGroup::World:
        for (uint32_t r = 0; r < world; ++r)
        {
            out.push_back(r);
        }
        break;
    case SimaiGroup::None:
        out.push_back(rank);
        break;
    }
    return out;
}

JobTrace
SimaiToJobTrace(const SimaiWorkload& w, const SimaiConvertOptions& opt)
{
    uint32_t world = w.allGpus;
    if (world == 0)
    {
        world = opt.ranks;
    }
    else if (opt.ranks != 0 && opt.ranks != world)
    {
        throw TraceFormatError(w.file, 1,
                               "the header says all_gpus: " + std::to_string(w.allGpus) +
                                   " but a job of " + std::to_string(opt.ranks) +
                                   " ranks was asked for");
    }
    if (world == 0)
    {
        throw TraceFormatError(w.file, 1,
                               "the header has no all_gpus: and no number of ranks was given");
    }
    if (opt.passes == 0)
    {
        throw std::invalid_argument("a SimAI job needs at least one pass");
    }
    const uint32_t tp = w.tp == 0 ? world : w.tp;
    if (w.policy != SimaiPolicy::Micro)
    {
        if (world % tp != 0)
        {
            throw TraceFormatError(w.file, 1,
                                   std::to_string(world) + " ranks do not divide into TP groups "
                                   "of model_parallel_NPU_group: " + std::to_string(tp));
        }
        if ((world / tp) % w.ep != 0)
        {
            throw TraceFormatError(w.file, 1,
                                   "the DP size " + std::to_string(world / tp) +
                                       " (all_gpus / model_parallel_NPU_group) is not a "
                                       "multiple of ep: " + std::to_string(w.ep));
        }
    }
    const uint32_t ep = w.policy == SimaiPolicy::Micro ? 1 : w.ep;
    const uint32_t tpUsed = w.policy == SimaiPolicy::Micro ? world : tp;

    SimaiEmitter emitter(w, world, tpUsed, ep);
    JobTrace job;
    job.source = "simai";
    job.ranks.resize(world);
    job.ranks[0] = emitter.Build(opt.passes);
    // Every rank runs rank 0's program on its own communicators (RankTrace::opsFrom).
    for (uint32_t r = 1; r < world; ++r)
    {
        job.ranks[r].rank = r;
        job.ranks[r].opsFrom = 0;
        job.ranks[r].ops = emitter.CommInits(r);
    }
    job.metadata["simai_file"] = w.file;
    job.metadata["simai_policy"] = w.policyName;
    job.metadata["simai_tp"] = std::to_string(tpUsed);
    job.metadata["simai_dp"] = std::to_string(world / tpUsed);
    job.metadata["simai_ep"] = std::to_string(ep);
    job.metadata["simai_pp"] = std::to_string(w.pp);
    job.metadata["simai_vpp"] = std::to_string(w.vpp);
    job.metadata["simai_ga"] = std::to_string(w.ga);
    job.metadata["simai_layers"] = std::to_string(w.layers.size());
    job.metadata["simai_passes"] = std::to_string(opt.passes);
    return job;
}

JobTrace
ImportSimai(const std::string& file, const SimaiConvertOptions& opt)
{
    return SimaiToJobTrace(ReadSimaiWorkload(file), opt);
}

} // namespace gpusim
} // namespace ns3

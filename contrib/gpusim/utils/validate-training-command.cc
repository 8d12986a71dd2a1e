#include "ns3/validate-training-command.h"

#include "ns3/gpusim-commands.h"

#include "ns3/boolean.h"
#include "ns3/cli-options.h"
#include "ns3/cuda-stream.h"
#include "ns3/flow-backend.h"
#include "ns3/gpu-cluster-helper.h"
#include "ns3/gpu-spec.h"
#include "ns3/gpu-workload.h"
#include "ns3/gpu-workload-helper.h"
#include "ns3/double.h"
#include "ns3/json-writer.h"
#include "ns3/simulator.h"
#include "ns3/training-generator.h"
#include "ns3/training-simulation.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

namespace
{

double
Median(std::vector<double> v)
{
    if (v.empty())
    {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

uint32_t
RowCount(simdjson::dom::element re, const char* key, const std::string& where)
{
    uint64_t v = 0;
    if (re[key].get(v) || v == 0 || v > (1u << 30))
    {
        throw std::runtime_error(where + ": '" + key + "' missing or not a positive integer");
    }
    return static_cast<uint32_t>(v);
}

double
RowNumber(simdjson::dom::element re, const char* key, const std::string& where)
{
    double v = 0;
    simdjson::dom::element e;
    if (re[key].get(e))
    {
        throw std::runtime_error(where + ": '" + key + "' missing");
    }
    if (e.is<double>())
    {
        v = double(e);
    }
    else if (e.is<uint64_t>())
    {
        v = double(uint64_t(e));
    }
    else if (e.is<int64_t>())
    {
        v = double(int64_t(e));
    }
    else
    {
        throw std::runtime_error(where + ": '" + key + "' is not a number");
    }
    if (!std::isfinite(v) || v <= 0)
    {
        throw std::runtime_error(where + ": '" + key + "' must be positive");
    }
    return v;
}

/// A row's plan: the artifact's options where the row gives them ("micro_batch", "ddp",
/// "layers_per_virtual_stage"), else the table's "interleaved" rule with micro-batch 1.
TrainingPlan
ReadRowPlan(simdjson::dom::element re, const ModelSpec& model, uint32_t tp, uint32_t pp,
            uint32_t gpus, bool interleaved, const std::string& where)
{
    const uint32_t batch = RowCount(re, "batch", where);
    simdjson::dom::element unused;
    const bool artifact = !re["micro_batch"].get(unused) || !re["ddp"].get(unused) ||
                          !re["layers_per_virtual_stage"].get(unused);
    if (!artifact)
    {
        return MegatronPlan(model, tp, pp, gpus, batch, interleaved);
    }
    MegatronRunOptions run;
    run.microBatch = RowCount(re, "micro_batch", where);
    std::string_view ddp;
    if (re["ddp"].get(ddp) || (ddp != "torch" && ddp != "local"))
    {
        throw std::runtime_error(where + ": 'ddp' missing or not \"torch\" or \"local\"");
    }
    run.torchDdp = ddp == "torch";
    uint64_t lpvs = 0;
    if (re["layers_per_virtual_stage"].get(unused) == simdjson::SUCCESS &&
        (re["layers_per_virtual_stage"].get(lpvs) || lpvs > model.layers))
    {
        throw std::runtime_error(where + ": 'layers_per_virtual_stage' is not a count");
    }
    run.layersPerVirtualStage = static_cast<uint32_t>(lpvs);
    TrainingPlan p;
    try
    {
        p = MegatronPlan(model, tp, pp, gpus, batch, run);
    }
    catch (const std::invalid_argument& e)
    {
        throw std::runtime_error(where + ": " + e.what());
    }
    // Later Megatron-LM code than the SC'21 artifact: the row names what differs.
    std::string_view text;
    if (re["recompute"].get(unused) == simdjson::SUCCESS)
    {
        if (re["recompute"].get(text) || !ParseRecompute(std::string(text), p.recompute))
        {
            throw std::runtime_error(where + ": 'recompute' is not \"none\", \"selective\" "
                                             "or \"full\"");
        }
    }
    if (re["sequence_parallel"].get(unused) == simdjson::SUCCESS &&
        re["sequence_parallel"].get(p.sequenceParallel))
    {
        throw std::runtime_error(where + ": 'sequence_parallel' is not a boolean");
    }
    if (re["grad_accum"].get(unused) == simdjson::SUCCESS)
    {
        if (re["grad_accum"].get(text) ||
            (text != "fused" && text != "main_grad" && text != "autograd"))
        {
            throw std::runtime_error(where + ": 'grad_accum' is not \"fused\", \"main_grad\" "
                                             "or \"autograd\"");
        }
        p.gradAccum = text == "fused"       ? GradAccumulation::Fused
                      : text == "main_grad" ? GradAccumulation::MainGradHook
                                            : GradAccumulation::Autograd;
    }
    return p;
}

/// An optional key: absent gives `fallback`, present must have the type.
std::string
OptionalString(simdjson::dom::element re, const char* key, const std::string& fallback,
               const std::string& where)
{
    simdjson::dom::element e;
    if (re[key].get(e))
    {
        return fallback;
    }
    std::string_view v;
    if (e.get(v))
    {
        throw std::runtime_error(where + ": '" + key + "' is not a string");
    }
    return std::string(v);
}

bool
OptionalBool(simdjson::dom::element re, const char* key, bool fallback, const std::string& where)
{
    simdjson::dom::element e;
    if (re[key].get(e))
    {
        return fallback;
    }
    bool v = false;
    if (e.get(v))
    {
        throw std::runtime_error(where + ": '" + key + "' is not a boolean");
    }
    return v;
}

uint32_t
OptionalCount(simdjson::dom::element re, const char* key, uint32_t fallback,
              const std::string& where)
{
    simdjson::dom::element e;
    return re[key].get(e) ? fallback : RowCount(re, key, where);
}

/// A row of a "recipe": "megatron-core" table: today's model families (CoreArch) and
/// Megatron-Core's plan as NVIDIA's performance recipes run it (MegatronCorePlan).
void
ReadCoreRow(simdjson::dom::element re, const std::string& where, TrainingValidationRow& r)
{
    CoreArch arch;
    const std::string archName = OptionalString(re, "arch", "gpt", where);
    if (!ParseCoreArch(archName, arch))
    {
        throw std::runtime_error(where + ": 'arch' \"" + archName +
                                 "\" is not gpt, llama or nemotron");
    }
    CoreModelDims d;
    d.layers = RowCount(re, "layers", where);
    d.hidden = RowCount(re, "hidden", where);
    d.heads = RowCount(re, "heads", where);
    d.kvHeads = OptionalCount(re, "kv_heads", 0, where);
    d.ffn = OptionalCount(re, "ffn", 0, where);
    d.vocab = RowCount(re, "vocab", where);
    d.seqLength = RowCount(re, "seq_length", where);
    // fp8: a bf16 model whose transformer-layer GEMMs run in fp8 (Transformer Engine's hybrid
    // format, "fp8_recipe" delayed or current scaling).
    const std::string dtype = OptionalString(re, "dtype", "bf16", where);
    if (dtype != "bf16" && dtype != "fp16" && dtype != "fp8")
    {
        throw std::runtime_error(where + ": 'dtype' \"" + dtype + "\" is not bf16, fp16 or fp8");
    }
    r.model = MegatronCoreModel(d, arch, dtype == "fp16" ? DataType::F16 : DataType::BF16,
                                OptionalBool(re, "tied_embeddings", arch == CoreArch::Gpt, where));
    const std::string grad = OptionalString(re, "grad_dtype", "f32", where);
    if (grad != "f32" && grad != "bf16")
    {
        throw std::runtime_error(where + ": 'grad_dtype' \"" + grad + "\" is not f32 or bf16");
    }
    try
    {
        r.plan = MegatronCorePlan(RowCount(re, "tp", where), RowCount(re, "pp", where),
                                  OptionalCount(re, "cp", 1, where),
                                  OptionalCount(re, "vpp", 1, where), RowCount(re, "gpus", where),
                                  RowCount(re, "batch", where), RowCount(re, "micro_batch", where),
                                  grad == "f32" ? DataType::F32 : DataType::BF16);
    }
    catch (const std::invalid_argument& e)
    {
        throw std::runtime_error(where + ": " + e.what());
    }
    if (!ParseRecompute(OptionalString(re, "recompute", "none", where), r.plan.recompute))
    {
        throw std::runtime_error(where + ": 'recompute' is not \"none\", \"selective\" or "
                                         "\"full\"");
    }
    if (re["recompute_num_layers"].error() == simdjson::SUCCESS)
    {
        // Megatron's --recompute-method block --recompute-num-layers N.
        r.plan.recompute = Recompute::Full;
        r.plan.recomputeLayers = RowCount(re, "recompute_num_layers", where);
    }
    r.plan.sequenceParallel =
        OptionalBool(re, "sequence_parallel", r.plan.sequenceParallel, where);
    r.plan.tpCommOverlap = OptionalBool(re, "tp_comm_overlap", false, where);
    const std::string recipe = OptionalString(re, "fp8_recipe", "delayed", where);
    if (dtype == "fp8" && (!ParseFp8Recipe(recipe, r.plan.fp8) || r.plan.fp8 == Fp8Recipe::None))
    {
        throw std::runtime_error(where + ": 'fp8_recipe' \"" + recipe +
                                 "\" is not delayed or current");
    }
    r.plan.overlapP2pComm = OptionalBool(re, "overlap_p2p_comm", true, where);
    r.measuredIterationS = RowNumber(re, "iteration_s", where);
}

std::string
Fixed(double v, int digits)
{
    char s[64];
    std::snprintf(s, sizeof(s), "%.*f", digits, v);
    return s;
}

} // namespace

std::vector<TrainingValidationRow>
ReadTrainingValidation(const std::string& file, const std::string& only)
{
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto err = parser.load(file).get(doc))
    {
        throw std::runtime_error(file + ": " + simdjson::error_message(err));
    }
    simdjson::dom::array tables;
    if (doc["tables"].get(tables))
    {
        throw std::runtime_error(file + ": no \"tables\" array");
    }
    std::vector<TrainingValidationRow> rows;
    size_t ti = 0;
    for (simdjson::dom::element te : tables)
    {
        ++ti;
        std::string_view sv;
        const std::string id = te["id"].get(sv) ? "table " + std::to_string(ti) : std::string(sv);
        if (!only.empty() && id != only)
        {
            continue;
        }
        const std::string preset = te["preset"].get(sv) ? "dgx-a100" : std::string(sv);
        const std::string recipe =
            te["recipe"].get(sv) ? "megatron-lm-2021" : std::string(sv);
        if (recipe != "megatron-lm-2021" && recipe != "megatron-core")
        {
            throw std::runtime_error(file + ": table " + id + ": 'recipe' \"" + recipe +
                                     "\" is not megatron-lm-2021 or megatron-core");
        }
        bool interleaved = false;
        if (te["interleaved"].get(interleaved) == simdjson::INCORRECT_TYPE)
        {
            throw std::runtime_error(file + ": table " + id + ": 'interleaved' is not a boolean");
        }
        simdjson::dom::array ra;
        if (te["rows"].get(ra))
        {
            throw std::runtime_error(file + ": table " + id + ": no \"rows\" array");
        }
        size_t ri = 0;
        for (simdjson::dom::element re : ra)
        {
            ++ri;
            const std::string where = file + ": table " + id + " row " + std::to_string(ri);
            TrainingValidationRow r;
            r.table = id;
            r.preset = preset;
            double pb = 0;
            if (!re["params_b"].get(pb))
            {
                r.paramsB = pb;
            }
            if (recipe == "megatron-core")
            {
                ReadCoreRow(re, where, r);
                try
                {
                    ValidatePlan(r.model, r.plan);
                }
                catch (const std::exception& e)
                {
                    throw std::runtime_error(where + ": " + e.what());
                }
                r.flopsPerIteration = ModelFlopsPerIteration(r.model, r.plan);
                r.measuredTflops =
                    r.flopsPerIteration / (r.measuredIterationS * r.plan.Gpus()) / 1e12;
                rows.push_back(r);
                continue;
            }
            r.model = MegatronGptModel(RowCount(re, "layers", where), RowCount(re, "hidden", where),
                                       RowCount(re, "heads", where));
            const uint32_t tp = RowCount(re, "tp", where);
            const uint32_t pp = RowCount(re, "pp", where);
            const uint32_t gpus = RowCount(re, "gpus", where);
            if (gpus % (uint64_t(tp) * pp)) // tp x pp may pass 2^32 (each is at most 2^30)
            {
                throw std::runtime_error(where + ": gpus " + std::to_string(gpus) +
                                         " is not a multiple of tp x pp");
            }
            r.plan = ReadRowPlan(re, r.model, tp, pp, gpus, interleaved, where);
            uint64_t vpp = 0;
            if (!re["vpp"].get(vpp))
            {
                r.plan.virtualStages = static_cast<uint32_t>(std::max<uint64_t>(vpp, 1));
            }
            // Published as TFLOP/s per GPU (eq. 3), or as an iteration time that eq. 3 turns
            // into one: the error is then that of the iteration time.
            r.flopsPerIteration = MegatronPaperFlops(r.plan.globalBatch, kMegatron2021Seq,
                                                     r.model.layers, r.model.hidden,
                                                     kMegatron2021Vocab);
            simdjson::dom::element given;
            if (re["iteration_s"].get(given) == simdjson::SUCCESS)
            {
                r.measuredIterationS = RowNumber(re, "iteration_s", where);
                r.measuredTflops =
                    r.flopsPerIteration / (r.measuredIterationS * r.plan.Gpus()) / 1e12;
            }
            else
            {
                r.measuredTflops = RowNumber(re, "tflops_per_gpu", where);
            }
            try
            {
                ValidatePlan(r.model, r.plan);
            }
            catch (const std::exception& e)
            {
                throw std::runtime_error(where + ": " + e.what());
            }
            rows.push_back(r);
        }
    }
    if (rows.empty())
    {
        throw std::runtime_error(file + ": no rows" + (only.empty() ? "" : " in table " + only));
    }
    return rows;
}

namespace
{

/// Simulates a row's iteration as RunTrainingValidationRow describes; `inspect` (if set) sees
/// the workload before the simulator is destroyed.
TrainingReport
SimulateRow(const TrainingValidationRow& row, double gemmEfficiency, double memoryEfficiency,
            const TrainingSpeed& speed, const std::function<void(const GpuWorkload&)>& inspect)
{
    ClusterSpec spec;
    if (!LookupClusterPreset(row.preset, spec))
    {
        throw std::runtime_error("unknown cluster preset '" + row.preset + "'");
    }
    GpuSpec gpu;
    LookupGpuSpec(spec.gpuModel, gpu);
    const bool shapeModel = gemmEfficiency == kGemmShapeModel;
    gpu.gemmEfficiency = gemmEfficiency > 0 ? gemmEfficiency : gpu.gemmEfficiency;
    gpu.memoryEfficiency = memoryEfficiency > 0 ? memoryEfficiency : gpu.memoryEfficiency;
    spec.servers = (row.plan.Gpus() + spec.gpusPerServer - 1) / spec.gpusPerServer;
    GeneratedTraining g = GenerateTraining(row.model, row.plan);
    GpuClusterHelper cluster;
    cluster.SetSpec(spec);
    NodeContainer gpus = cluster.Create();
    Ptr<FlowBackend> backend = CreateObject<FlowBackend>();
    backend->SetTopology(cluster.GetTopology());
    GpuWorkloadHelper helper;
    helper.SetBackend(backend);
    helper.SetCostModel("ns3::RooflineCostModel");
    ConfigureTrainingSpeed(helper, speed);
    // Every GEMM at the GPU's measured efficiency (or the what-if's); on request the shape
    // model instead (tile and wave quantization, GpuSpec::gemmTileEfficiency).
    helper.SetCostModelAttribute("GemmShapeModel", BooleanValue(shapeModel));
    // A GPU with timed GEMMs (the H100 and H200) prices each GEMM from those of its shape;
    // the what-ifs (--gemm-efficiency, --gemm-shape-model) replace them.
    helper.SetCostModelAttribute("MeasuredGemms",
                                 BooleanValue(!shapeModel && gemmEfficiency <= 0));
    if (gpu.gemmEfficiency > 0)
    {
        helper.SetCostModelAttribute("ComputeEfficiency", DoubleValue(gpu.gemmEfficiency));
    }
    if (gpu.memoryEfficiency > 0)
    {
        helper.SetCostModelAttribute("MemoryEfficiency", DoubleValue(gpu.memoryEfficiency));
    }
    TrainingReport rep;
    try
    {
        Ptr<GpuWorkload> w;
        rep = SimulateTraining(g, helper, gpus, inspect ? &w : nullptr);
        if (inspect && w && rep.completed)
        {
            inspect(*w);
        }
        if (w)
        {
            w->Dispose();
        }
    }
    catch (...)
    {
        Simulator::Destroy();
        throw;
    }
    Simulator::Destroy();
    return rep;
}

} // namespace

void
RunTrainingValidationRow(TrainingValidationRow& row, double gemmEfficiency,
                         double memoryEfficiency, const TrainingSpeed& speed)
{
    if (row.flopsPerIteration <= 0)
    {
        throw std::invalid_argument("validation row " + row.table +
                                    " has no FLOP count per iteration");
    }
    const auto t0 = std::chrono::steady_clock::now();
    const TrainingReport rep = SimulateRow(row, gemmEfficiency, memoryEfficiency, speed, {});
    row.wallS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep.oom)
    {
        row.note = "OOM: " + rep.oomInfo.Describe();
        return;
    }
    if (!rep.completed)
    {
        row.note = "did not complete: " + rep.stuck;
        return;
    }
    row.run = true;
    row.iterationMs = rep.iterationUs / 1e3;
    row.simulatedTflops =
        row.flopsPerIteration / (rep.iterationUs * 1e-6 * row.plan.Gpus()) / 1e12;
    row.errorPct = (row.simulatedTflops - row.measuredTflops) / row.measuredTflops * 100;
}

LayerTimes
SimulatedLayerTimes(const TrainingValidationRow& row, double gemmEfficiency)
{
    if (row.model.layers / row.plan.pp / row.plan.virtualStages < 3 ||
        MicroBatches(row.model, row.plan) != 1)
    {
        throw std::runtime_error("layer times need 3 layers per model chunk and one micro-batch");
    }
    std::vector<double> norms, qkvBackwardEnds; // rank 0, compute stream, in time order
    const TrainingReport rep =
        SimulateRow(row, gemmEfficiency, 0, TrainingSpeed(), [&](const GpuWorkload& w) {
            for (const StreamActivity& a : w.GetActivities())
            {
                if (a.rank != 0 || a.communication || !a.op || a.op->kind != OpKind::Kernel)
                {
                    continue;
                }
                if (a.op->name == "norm")
                {
                    norms.push_back(a.start.GetSeconds() * 1e3);
                }
                else if (a.op->name == "qkv_bwd")
                {
                    qkvBackwardEnds.push_back(a.end.GetSeconds() * 1e3);
                }
            }
        });
    if (!rep.completed || norms.size() < 6 || qkvBackwardEnds.size() < 3)
    {
        throw std::runtime_error("layer times: the iteration did not run (" +
                                 (rep.oom ? rep.oomInfo.Describe() : rep.stuck) + ")");
    }
    std::sort(norms.begin(), norms.end());
    std::sort(qkvBackwardEnds.begin(), qkvBackwardEnds.end());
    // Two LayerNorms per layer forward: layer 1 starts at norm 2, layer 2 at norm 4.
    LayerTimes t;
    t.forwardMs = norms[4] - norms[2];
    t.backwardMs = qkvBackwardEnds[2] - qkvBackwardEnds[1];
    return t;
}

std::string
TrainingValidationMarkdown(const std::vector<TrainingValidationRow>& rows)
{
    std::ostringstream os;
    os << "| table | params (B) | l | h | a | TP | PP | DP | VPP | MBS | recompute | GPUs | batch "
          "| measured TFLOP/s | simulated TFLOP/s | error | iteration (ms) | measured (ms) |\n";
    os << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: "
          "| ---: | ---: | ---: | ---: | ---: |\n";
    std::vector<double> errs;
    for (const auto& r : rows)
    {
        os << "| " << r.table << " | " << Fixed(r.paramsB, 1) << " | " << r.model.layers << " | "
           << r.model.hidden << " | " << r.model.heads << " | " << r.plan.tp << " | " << r.plan.pp
           << " | " << r.plan.dp << " | " << r.plan.virtualStages << " | " << r.plan.microBatch
           << " | " << ToString(r.plan.recompute) << (r.plan.sequenceParallel ? " + SP" : "")
           << " | " << r.plan.Gpus()
           << " | " << r.plan.globalBatch << " | " << Fixed(r.measuredTflops, 0) << " | ";
        if (r.run)
        {
            os << Fixed(r.simulatedTflops, 1) << " | " << (r.errorPct >= 0 ? "+" : "")
               << Fixed(r.errorPct, 1) << " % | " << Fixed(r.iterationMs, 0) << " | "
               << (r.measuredIterationS > 0 ? Fixed(r.measuredIterationS * 1e3, 0) : "") << " |\n";
            errs.push_back(std::fabs(r.errorPct));
        }
        else
        {
            os << "not run | " << r.note << " | | |\n";
        }
    }
    if (!errs.empty())
    {
        os << "\n|error| over " << errs.size() << " rows run: median "
           << Fixed(Median(errs), 1) << " %, worst "
           << Fixed(*std::max_element(errs.begin(), errs.end()), 1) << " %\n";
    }
    return os.str();
}

std::string
TrainingValidationSvg(const std::vector<TrainingValidationRow>& rows)
{
    // One column per row (published order), TFLOP/s per GPU from 0 to the largest value
    // (at least 200, in steps of 50): measured (circle) and simulated (square) where run.
    double most = 200;
    for (const auto& r : rows)
    {
        most = std::max({most, r.measuredTflops, r.run ? r.simulatedTflops : 0.0});
    }
    const double scale = 50 * std::ceil(most / 50);
    const double w = 60.0 * rows.size() + 100, hgt = 320, top = 30, bottom = 260, left = 60;
    auto y = [&](double t) { return bottom - (bottom - top) * std::min(t, scale) / scale; };
    std::ostringstream os;
    os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << hgt
       << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
       << "<text x=\"" << left << "\" y=\"18\">achieved TFLOP/s per GPU: measured (circle, "
          "as published) vs gpusim (square)</text>\n";
    const int step = scale > 400 ? 100 : 50;
    for (int t = 0; t <= scale; t += step)
    {
        os << "<line x1=\"" << left << "\" x2=\"" << w - 20 << "\" y1=\"" << y(t) << "\" y2=\""
           << y(t) << "\" stroke=\"#ddd\"/><text x=\"20\" y=\"" << y(t) + 4 << "\">" << t
           << "</text>\n";
    }
    for (size_t i = 0; i < rows.size(); ++i)
    {
        const auto& r = rows[i];
        const double x = left + 30 + 60.0 * i;
        os << "<circle cx=\"" << x << "\" cy=\"" << y(r.measuredTflops)
           << "\" r=\"5\" fill=\"#1f77b4\"/>\n";
        if (r.run)
        {
            os << "<rect x=\"" << x - 5 << "\" y=\"" << y(r.simulatedTflops) - 5
               << "\" width=\"10\" height=\"10\" fill=\"#ff7f0e\"/>\n";
        }
        os << "<text x=\"" << x - 20 << "\" y=\"" << bottom + 18 << "\">" << Fixed(r.paramsB, 1)
           << "B</text><text x=\"" << x - 20 << "\" y=\"" << bottom + 32 << "\">"
           << r.plan.Gpus() << " GPUs</text>\n";
    }
    os << "</svg>\n";
    return os.str();
}

namespace
{

std::string
RowsJson(const std::vector<TrainingValidationRow>& rows)
{
    std::ostringstream os;
    os << "{\"rows\": [";
    for (size_t i = 0; i < rows.size(); ++i)
    {
        const auto& r = rows[i];
        os << (i ? ",\n  " : "\n  ") << "{\"table\": \"" << r.table << "\", \"params_b\": "
           << r.paramsB << ", \"tp\": " << r.plan.tp << ", \"pp\": " << r.plan.pp
           << ", \"dp\": " << r.plan.dp << ", \"vpp\": " << r.plan.virtualStages
           << ", \"micro_batch\": " << r.plan.microBatch
           << ", \"gpus\": " << r.plan.Gpus() << ", \"batch\": " << r.plan.globalBatch
           << ", \"recompute\": \"" << ToString(r.plan.recompute)
           << "\", \"sequence_parallel\": " << (r.plan.sequenceParallel ? "true" : "false")
           << ", \"measured_tflops\": " << r.measuredTflops;
        if (r.measuredIterationS > 0)
        {
            os << ", \"measured_iteration_s\": " << r.measuredIterationS;
        }
        os << ", \"run\": "
           << (r.run ? "true" : "false");
        if (r.run)
        {
            os << ", \"iteration_ms\": " << Fixed(r.iterationMs, 3)
               << ", \"simulated_tflops\": " << Fixed(r.simulatedTflops, 3)
               << ", \"error_pct\": " << Fixed(r.errorPct, 3);
        }
        os << ", \"wall_s\": " << Fixed(r.wallS, 2) << "}";
    }
    os << "\n]}\n";
    return os.str();
}

void
PrintUsage(std::ostream& os)
{
    os << "usage: gpusim validate-training FILE [--table ID] [--max-gpus N]\n"
          "         [--json FILE] [--markdown FILE] [--svg FILE]\n"
          "  FILE: published training throughput rows, e.g.\n"
          "  contrib/gpusim/test/data/megatron-lm-2021-throughput.json or\n"
          "  contrib/gpusim/test/data/megatron-lm-2022-iteration-time.json\n"
          "  --max-gpus N: rows with more GPUs are listed as not run (default: all run)\n"
          "  --gemm-efficiency E: what-if, every GEMM at E of peak (default: the GPU's measured\n"
          "  GEMM efficiency, gpu-spec.cc); --gemm-shape-model: what-if, GEMMs by tile and\n"
          "  wave quantization (kernel-cost-model.cc)\n"
          "  --memory-efficiency E: what-if replacement of the GPU's HBM efficiency\n"
          "  --host-launch-us US: what-if, the host's time before each kernel, copy and\n"
          "  collective of every row (as for 'generate')\n"
          "  --fidelity auto|chunk|collective|flows (default flows), --ranks\n"
          "  all|mirrored|lockstep\n"
          "  (default mirrored): as for 'generate'; '--fidelity chunk --ranks all' is the\n"
          "  detailed model\n";
}

} // namespace

int
ValidateTrainingCommand(const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err)
{
    try
    {
        Options o(args,
                  {"table", "max-gpus", "json", "markdown", "svg", "gemm-efficiency",
                   "memory-efficiency", "fidelity", "ranks", "host-launch-us"},
                  {"help", "gemm-shape-model"});
        if (o.Has("help"))
        {
            PrintUsage(out);
            return 0;
        }
        if (o.Positional().size() != 1)
        {
            throw UsageError("give one FILE");
        }
        auto rows = ReadTrainingValidation(o.Positional().front(), o.Get("table", ""));
        const uint32_t maxGpus = o.Count("max-gpus", 0);
        const double gemmEff = o.Number("gemm-efficiency", 0);
        if (o.Has("gemm-shape-model") && gemmEff > 0)
        {
            throw UsageError("--gemm-shape-model and --gemm-efficiency exclude each other");
        }
        const double memEff = o.Number("memory-efficiency", 0);
        if (gemmEff < 0 || gemmEff > 1 || memEff < 0 || memEff > 1)
        {
            throw UsageError("--gemm-efficiency and --memory-efficiency must be in (0, 1]");
        }
        const double hostLaunchUs = o.Number("host-launch-us", -1);
        if (o.Has("host-launch-us") && !(hostLaunchUs >= 0 && hostLaunchUs <= 1e6))
        {
            throw UsageError("--host-launch-us must be 0 to 1000000");
        }
        TrainingSpeed speed;
        speed.fidelity = FidelityOption(o, speed.fidelity);
        speed.mirrorRanks = MirroredRanksOption(o, "mirrored");
        speed.splitClasses = o.Get("ranks", "mirrored") != "lockstep";
        for (auto& r : rows)
        {
            if (maxGpus && r.plan.Gpus() > maxGpus)
            {
                r.note = "more than --max-gpus " + std::to_string(maxGpus) + " GPUs";
                continue;
            }
            if (hostLaunchUs >= 0)
            {
                r.plan.hostLaunchUs = hostLaunchUs;
            }
            RunTrainingValidationRow(r, o.Has("gemm-shape-model") ? kGemmShapeModel : gemmEff,
                                     memEff, speed);
            out << "# " << r.table << " " << Fixed(r.paramsB, 1) << "B on " << r.plan.Gpus()
                << " GPUs: "
                << (r.run ? Fixed(r.simulatedTflops, 1) + " TFLOP/s/GPU (measured " +
                                Fixed(r.measuredTflops, 0) + "), error " +
                                Fixed(r.errorPct, 1) + " %"
                          : r.note)
                << ", wall " << Fixed(r.wallS, 1) << " s\n";
            out.flush();
        }
        const std::string md = TrainingValidationMarkdown(rows);
        out << md;
        if (o.Has("markdown"))
        {
            WriteFileAtomically(o.Get("markdown", ""), md);
        }
        if (o.Has("json"))
        {
            WriteFileAtomically(o.Get("json", ""), RowsJson(rows));
        }
        if (o.Has("svg"))
        {
            WriteFileAtomically(o.Get("svg", ""), TrainingValidationSvg(rows));
        }
        return 0;
    }
    catch (const UsageError& e)
    {
        err << "gpusim validate-training: " << e.what() << "\n";
        PrintUsage(err);
        Simulator::Destroy();
        return 1;
    }
    catch (const std::exception& e)
    {
        err << "gpusim validate-training: error: " << e.what() << "\n";
        Simulator::Destroy();
        return 2;
    }
}

} // namespace gpusim
} // namespace ns3

#include "ns3/llm-model.h"

#include "ns3/context-parallel.h"

#include "ns3/yaml-fields.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

namespace ns3
{
namespace gpusim
{

namespace
{

ModelSpec
Gpt3_175b()
{
    // Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1: 96 layers,
    // d_model 12288, 96 heads of 128, context 2048, batch 3.2M tokens (= 1536 x 2048); GPT-2 BPE
    // vocabulary of 50257 (Radford et al. 2019); f = 4 d_model, learned positions, LayerNorm,
    // biases, dropout, tied input/output embeddings as in GPT-2 and Megatron-LM's GPT.
    ModelSpec m;
    m.name = "gpt3-175b";
    m.layers = 96;
    m.hidden = 12288;
    m.heads = 96;
    m.kvHeads = 96;
    m.ffn = 4 * 12288;
    m.vocab = 50257;
    m.seqLength = 2048;
    m.tiedEmbeddings = true;
    m.learnedPositions = true;
    m.biases = true;
    m.dropout = true;
    m.defaultGlobalBatch = 1536;
    m.source = "Brown et al. 2020 (arXiv:2005.14165) Table 2.1";
    return m;
}

ModelSpec
Llama3(const std::string& name, uint32_t layers, uint32_t hidden, uint32_t ffn, uint32_t heads)
{
    // Llama Team 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783) Table 3: 8 KV heads,
    // vocabulary 128,000 (128256 entries in the released config.json), SwiGLU, RMSNorm, RoPE,
    // untied embeddings, no biases, no dropout; pre-training sequences of 8192 tokens. Section
    // 3.4.1: the 405B model's batch grows to 16M tokens (2048 x 8192), used as the default for
    // all three sizes.
    ModelSpec m;
    m.name = name;
    m.layers = layers;
    m.hidden = hidden;
    m.heads = heads;
    m.kvHeads = 8;
    m.ffn = ffn;
    m.vocab = 128256;
    m.seqLength = 8192;
    m.gatedMlp = true;
    m.rmsNorm = true;
    m.defaultGlobalBatch = 2048;
    m.source = "Llama Team 2024 (arXiv:2407.21783) Table 3; Meta-Llama-3 config.json";
    return m;
}

ModelSpec
Mixtral8x7b()
{
    // Jiang et al. 2024, "Mixtral of Experts" (arXiv:2401.04088) Table 1: dim 4096, 32 layers,
    // head_dim 128, hidden_dim 14336, 32 heads, 8 KV heads, vocab 32000, 8 experts, top-2.
    // Training sequence length and batch are not published: 4096 x 1024 sequences here.
    ModelSpec m;
    m.name = "mixtral-8x7b";
    m.layers = 32;
    m.hidden = 4096;
    m.heads = 32;
    m.kvHeads = 8;
    m.ffn = 14336;
    m.vocab = 32000;
    m.seqLength = 4096;
    m.experts = 8;
    m.topK = 2;
    m.gatedMlp = true;
    m.rmsNorm = true;
    m.defaultGlobalBatch = 1024;
    m.source = "Jiang et al. 2024 (arXiv:2401.04088) Table 1";
    return m;
}

class ModelReader : public YamlFieldReader
{
  public:
    using YamlFieldReader::YamlFieldReader;

    ModelSpec Read(const YAML::Node& root) const
    {
        if (!root.IsMap())
        {
            Fail(root.Mark(), "expected a mapping of model keys (e.g. 'layers: 32')");
        }
        ModelSpec m;
        for (const auto& kv : root)
        {
            const std::string key = Scalar(kv.first, "<key>");
            if (NormaliseYamlKey(key) == "preset")
            {
                const std::string name = Scalar(kv.second, key);
                if (!LookupModelPreset(name, m))
                {
                    Fail(kv.second.Mark(), "key 'preset': unknown model '" + name +
                                               "' (known: " + KnownModelPresets() + ")");
                }
            }
        }
        using Setter = std::function<void(const YAML::Node&, const std::string&)>;
        const std::pair<const char*, Setter> fields[] = {
            {"name", [&](auto& v, auto& k) { m.name = Scalar(v, k); }},
            {"layers", [&](auto& v, auto& k) { m.layers = Unsigned(v, k); }},
            {"hidden", [&](auto& v, auto& k) { m.hidden = Unsigned(v, k); }},
            {"heads", [&](auto& v, auto& k) { m.heads = Unsigned(v, k); }},
            {"kvheads", [&](auto& v, auto& k) { m.kvHeads = Unsigned(v, k); }},
            {"ffn", [&](auto& v, auto& k) { m.ffn = Unsigned(v, k); }},
            {"vocab", [&](auto& v, auto& k) { m.vocab = Unsigned(v, k); }},
            {"seqlength", [&](auto& v, auto& k) { m.seqLength = Unsigned(v, k); }},
            {"experts", [&](auto& v, auto& k) { m.experts = Unsigned(v, k); }},
            {"topk", [&](auto& v, auto& k) { m.topK = Unsigned(v, k); }},
            {"gatedmlp", [&](auto& v, auto& k) { m.gatedMlp = Boolean(v, k); }},
            {"tiedembeddings", [&](auto& v, auto& k) { m.tiedEmbeddings = Boolean(v, k); }},
            {"learnedpositions", [&](auto& v, auto& k) { m.learnedPositions = Boolean(v, k); }},
            {"biases", [&](auto& v, auto& k) { m.biases = Boolean(v, k); }},
            {"dropout", [&](auto& v, auto& k) { m.dropout = Boolean(v, k); }},
            {"rmsnorm", [&](auto& v, auto& k) { m.rmsNorm = Boolean(v, k); }},
            {"globalbatch", [&](auto& v, auto& k) { m.defaultGlobalBatch = Unsigned(v, k); }},
            {"dtype",
             [&](auto& v, auto& k) {
                 const std::string s = Scalar(v, k);
                 if (!ParseDataType(s, m.dtype) || DataTypeSize(m.dtype) != 2)
                 {
                     Fail(v.Mark(), "key '" + k + "': expected bf16 or f16, got '" + s + "'");
                 }
             }},
        };
        for (const auto& kv : root)
        {
            const std::string key = Scalar(kv.first, "<key>");
            const std::string norm = NormaliseYamlKey(key);
            if (norm == "preset")
            {
                continue;
            }
            bool known = false;
            for (const auto& [name, set] : fields)
            {
                if (norm == name)
                {
                    set(kv.second, key);
                    known = true;
                    break;
                }
            }
            if (!known)
            {
                Fail(kv.first.Mark(),
                     "unknown key '" + key +
                         "' (known: preset, name, layers, hidden, heads, kvHeads, ffn, vocab, "
                         "seqLength, experts, topK, gatedMlp, tiedEmbeddings, learnedPositions, "
                         "biases, dropout, rmsNorm, globalBatch, dtype)");
            }
        }
        if (m.kvHeads == 0)
        {
            m.kvHeads = m.heads;
        }
        if (m.ffn == 0)
        {
            m.ffn = 4 * m.hidden;
        }
        if (m.source.empty())
        {
            m.source = Source();
        }
        try
        {
            ValidateModel(m);
        }
        catch (const std::invalid_argument& e)
        {
            Fail(root.Mark(), e.what());
        }
        return m;
    }

};

void
Require(bool ok, const std::string& what)
{
    if (!ok)
    {
        throw std::invalid_argument(what);
    }
}

std::string
Str(uint64_t x)
{
    return std::to_string(x);
}

} // namespace

bool
LookupModelPreset(const std::string& name, ModelSpec& out)
{
    if (name == "gpt3-175b")
    {
        out = Gpt3_175b();
    }
    else if (name == "llama3-8b")
    {
        out = Llama3(name, 32, 4096, 14336, 32);
    }
    else if (name == "llama3-70b")
    {
        out = Llama3(name, 80, 8192, 28672, 64);
    }
    else if (name == "llama3-405b")
    {
        out = Llama3(name, 126, 16384, 53248, 128);
    }
    else if (name == "mixtral-8x7b")
    {
        out = Mixtral8x7b();
    }
    else
    {
        return false;
    }
    return true;
}

std::string
KnownModelPresets()
{
    return "gpt3-175b, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b";
}

ModelSpec
ParseModelSpecYaml(const std::string& text, const std::string& sourceName)
{
    ModelReader reader(sourceName);
    return reader.Read(reader.Load(text));
}

ModelSpec
LoadModelSpecYaml(const std::string& file)
{
    return ParseModelSpecYaml(ReadYamlFile(file, "model description"), file);
}

void
ValidateModel(const ModelSpec& m)
{
    Require(m.layers > 0 && m.hidden > 0 && m.heads > 0 && m.vocab > 0 && m.seqLength > 0 &&
                m.ffn > 0,
            "model '" + m.name + "': layers, hidden, heads, ffn, vocab and seqLength must be > 0");
    Require(m.hidden % m.heads == 0,
            "model '" + m.name + "': hidden " + Str(m.hidden) + " is not a multiple of heads " +
                Str(m.heads));
    Require(m.kvHeads > 0 && m.heads % m.kvHeads == 0,
            "model '" + m.name + "': heads " + Str(m.heads) + " is not a multiple of kvHeads " +
                Str(m.kvHeads));
    Require((m.experts == 0) == (m.topK == 0) && m.topK <= m.experts,
            "model '" + m.name + "': MoE needs 1 <= topK <= experts (or neither)");
}

void
ValidatePlan(const ModelSpec& m, const TrainingPlan& p)
{
    ValidateModel(m);
    Require(p.tp >= 1 && p.pp >= 1 && p.dp >= 1 && p.cp >= 1 && p.ep >= 1 &&
                p.virtualStages >= 1 && p.microBatch >= 1,
            "tp, pp, dp, cp, ep, virtual stages and micro-batch must be >= 1");
    Require(m.heads % p.tp == 0 && m.kvHeads % p.tp == 0,
            "TP " + Str(p.tp) + " must divide heads " + Str(m.heads) + " and KV heads " +
                Str(m.kvHeads));
    Require(m.ffn % p.tp == 0, "TP " + Str(p.tp) + " must divide ffn " + Str(m.ffn));
    const uint32_t chunks = p.pp * p.virtualStages;
    Require(m.layers % chunks == 0, "layers " + Str(m.layers) + " must be a multiple of PP x " +
                                        "virtual stages = " + Str(chunks));
    Require(p.virtualStages == 1 || p.pp > 1, "virtual stages need PP > 1");
    const uint32_t chunkLayers = m.layers / chunks;
    const uint32_t s = SeqLength(m, p);
    ValidateContextParallel(m, p);
    Require(!p.sequenceParallel || (s / p.cp) % p.tp == 0,
            "sequence parallelism needs TP " + Str(p.tp) + " to divide the sequence " + Str(s) +
                (p.cp > 1 ? " / CP " + Str(p.cp) + " = " + Str(s / p.cp) : std::string()));
    Require(p.recomputeLayers == 0 ||
                (p.recompute == Recompute::Full && p.recomputeLayers <= chunkLayers),
            "recomputing " + Str(p.recomputeLayers) +
                " layers per model chunk needs full recomputation and at most the chunk's " +
                Str(chunkLayers) + " layers");
    Require(!p.tpCommOverlap || p.tp < 2 || p.sequenceParallel,
            "TP communication overlap needs sequence parallelism (Megatron-Core requires it)");
    Require(p.ep == 1 || m.experts > 0, "expert parallelism needs an MoE model");
    Require(p.ep == 1 || (p.DpCp() % p.ep == 0 && m.experts % p.ep == 0),
            "EP " + Str(p.ep) + " must divide DP " +
                (p.cp > 1 ? "x CP = " + Str(p.DpCp()) : Str(p.dp)) + " and experts " +
                Str(m.experts));
    const uint32_t gb = GlobalBatch(m, p);
    Require(gb > 0, "no global batch: give one (the model has no default)");
    Require(gb % (p.microBatch * p.dp) == 0,
            "global batch " + Str(gb) + " is not a multiple of micro-batch x DP = " +
                Str(p.microBatch * p.dp));
    const uint32_t mb = gb / (p.microBatch * p.dp);
    Require(p.virtualStages == 1 || mb % p.pp == 0,
            "the interleaved schedule needs micro-batches (" + Str(mb) +
                ") to be a multiple of PP " + Str(p.pp));
    if (p.fp8 != Fp8Recipe::None)
    {
        // Transformer Engine's assert_dim_for_fp8_exec (transformer_engine/pytorch/utils.py):
        // an fp8 GEMM operand's leading dims must multiply to a multiple of 8 and its last dim
        // be a multiple of 16; here the tokens of a GEMM and every weight's input and output
        // width (QKV, projection, fc1, fc2 on one TP rank).
        const uint32_t tokens = s / p.cp * p.microBatch;
        const uint32_t qkv = (m.hidden + 2 * m.kvHeads * m.HeadDim()) / p.tp;
        const uint32_t fc1 = m.ffn * (m.gatedMlp ? 2 : 1) / p.tp;
        Require(tokens % 8 == 0 && m.hidden % 16 == 0 && (m.hidden / p.tp) % 16 == 0 &&
                    (m.ffn / p.tp) % 16 == 0 && qkv % 8 == 0 && fc1 % 8 == 0,
                "fp8 GEMMs need their tokens (" + Str(tokens) + ") to be a multiple of 8 and " +
                    "hidden " + Str(m.hidden) + ", hidden / TP and ffn / TP to be multiples " +
                    "of 16");
    }
}

const char*
ToString(Recompute r)
{
    switch (r)
    {
    case Recompute::None:
        return "none";
    case Recompute::Selective:
        return "selective";
    case Recompute::Full:
        return "full";
    }
    return "?";
}

bool
ParseRecompute(const std::string& s, Recompute& out)
{
    for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    {
        if (s == ToString(r))
        {
            out = r;
            return true;
        }
    }
    return false;
}

const char*
ToString(Fp8Recipe r)
{
    switch (r)
    {
    case Fp8Recipe::None:
        return "none";
    case Fp8Recipe::Delayed:
        return "delayed";
    case Fp8Recipe::CurrentScaling:
        return "current";
    }
    return "?";
}

bool
ParseFp8Recipe(const std::string& s, Fp8Recipe& out)
{
    if (s == "tensorwise")
    {
        out = Fp8Recipe::CurrentScaling; // Megatron-Core's name for it
        return true;
    }
    for (Fp8Recipe r : {Fp8Recipe::None, Fp8Recipe::Delayed, Fp8Recipe::CurrentScaling})
    {
        if (s == ToString(r))
        {
            out = r;
            return true;
        }
    }
    return false;
}

uint32_t
SeqLength(const ModelSpec& m, const TrainingPlan& p)
{
    return p.seqLength ? p.seqLength : m.seqLength;
}

uint32_t
GlobalBatch(const ModelSpec& m, const TrainingPlan& p)
{
    return p.globalBatch ? p.globalBatch : m.defaultGlobalBatch;
}

uint32_t
MicroBatches(const ModelSpec& m, const TrainingPlan& p)
{
    return GlobalBatch(m, p) / (p.microBatch * p.dp);
}

uint64_t
PaddedVocab(const ModelSpec& m, uint32_t tp)
{
    // Megatron-LM --make-vocab-size-divisible-by 128, times TP (_vocab_size_with_padding).
    const uint64_t mult = 128ull * tp;
    return (m.vocab + mult - 1) / mult * mult;
}

double
LayerParams(const ModelSpec& m)
{
    const double h = m.hidden;
    const double f = m.ffn;
    const double qkv = h + 2.0 * m.kvHeads * m.HeadDim();
    double attn = h * qkv + h * h + (m.biases ? qkv + h : 0);
    const double fc1Out = f * (m.gatedMlp ? 2 : 1);
    double mlp = h * fc1Out + f * h + (m.biases ? fc1Out + h : 0);
    if (m.experts > 0)
    {
        mlp = mlp * m.experts + h * m.experts; // experts + router
    }
    const double norms = 2 * (m.rmsNorm ? h : 2 * h);
    return attn + mlp + norms;
}

double
TotalParams(const ModelSpec& m)
{
    const double h = m.hidden;
    double p = m.layers * LayerParams(m) + double(m.vocab) * h;
    p += m.learnedPositions ? double(m.seqLength) * h : 0;
    p += m.rmsNorm ? h : 2 * h; // final norm
    p += m.tiedEmbeddings ? 0 : double(m.vocab) * h;
    return p;
}

double
LayerFp8WeightParams(const ModelSpec& m, const TrainingPlan& p)
{
    const double h = m.hidden;
    const double f = m.ffn;
    const double qkv = h + 2.0 * m.kvHeads * m.HeadDim();
    const double mlp = h * f * (m.gatedMlp ? 2 : 1) + f * h;
    return (h * qkv + h * h + mlp * (m.experts ? double(m.experts) / p.ep : 1)) / p.tp;
}

double
LayerFp8Gemms(const ModelSpec& m, const TrainingPlan& p)
{
    return m.experts ? 2 + 2.0 * m.experts / p.ep : 4;
}

double
ModelFlopsPerIteration(const ModelSpec& m, const TrainingPlan& p)
{
    const double h = m.hidden;
    const double f = m.ffn;
    const double s = SeqLength(m, p);
    const double qkv = h + 2.0 * m.kvHeads * m.HeadDim();
    const double active = m.experts ? m.topK : 1;
    double perToken = 2 * (h * qkv + h * h) + 4 * s * h;
    perToken += 2 * active * (h * f * (m.gatedMlp ? 2 : 1) + f * h);
    perToken += m.experts ? 2 * h * m.experts : 0; // router
    const double forward = double(GlobalBatch(m, p)) * s * (m.layers * perToken + 2 * h * m.vocab);
    return 3 * forward;
}

namespace
{

double
LayerActivations(const ModelSpec& m, const TrainingPlan& p, bool selective)
{
    const double e = DataTypeSize(m.dtype);
    const double T = double(SeqLength(m, p)) * p.microBatch / p.cp; // the rank's tokens
    const double h = m.hidden;
    const double f = m.ffn;
    const double t = p.tp;
    const double k = m.experts ? m.topK : 1; // tokens through the MLP per token
    // Replicated over TP (split by SP): norm1 in, QKV in, norm2 in, MLP in; dropout masks.
    double rep = 3 * e * T * h + k * e * T * h + (m.dropout ? 2 * T * h : 0);
    if (p.sequenceParallel)
    {
        rep /= t;
    }
    // Split over TP: Q/K/V, projection input, fc1 output (its GELU/SwiGLU input), fc2 input.
    double par = e * T * (h + 2.0 * m.kvHeads * m.HeadDim()) + e * T * h;
    par += k * e * T * f * (m.gatedMlp ? 2 : 1) + k * e * T * f;
    // Attention core: scores (and dropout mask and output) unless fused; fused kernels keep
    // one fp32 log-sum-exp per head and token.
    const double s = SeqLength(m, p);
    double core = 0;
    if (p.flashAttention)
    {
        core = 4 * T * m.heads;
    }
    else
    {
        core = e * m.heads * s * T + (m.dropout ? (1 + e) * m.heads * s * T : 0);
    }
    if (selective)
    {
        core = 0; // recomputed in the backward
    }
    return rep + (par + core) / t;
}

} // namespace

double
LayerActivationBytesNoRecompute(const ModelSpec& m, const TrainingPlan& p)
{
    return LayerActivations(m, p, false);
}

uint32_t
RecomputedLayers(const TrainingPlan& p, uint32_t layers)
{
    if (p.recompute != Recompute::Full)
    {
        return 0;
    }
    return p.recomputeLayers ? std::min(p.recomputeLayers, layers) : layers;
}

double
ChunkLayersActivationBytes(const ModelSpec& m, const TrainingPlan& p, uint32_t layers)
{
    const uint32_t recomputed = RecomputedLayers(p, layers);
    return recomputed * LayerActivationBytes(m, p) +
           (layers - recomputed) * (p.recompute == Recompute::Full
                                        ? LayerActivationBytesNoRecompute(m, p)
                                        : LayerActivationBytes(m, p));
}

double
LayerActivationBytes(const ModelSpec& m, const TrainingPlan& p)
{
    if (p.recompute == Recompute::Full)
    {
        const double input = double(DataTypeSize(m.dtype)) * SeqLength(m, p) * p.microBatch *
                             m.hidden / p.cp;
        return p.sequenceParallel ? input / p.tp : input;
    }
    return LayerActivations(m, p, p.recompute == Recompute::Selective);
}

} // namespace gpusim
} // namespace ns3

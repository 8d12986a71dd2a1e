// Models, plans, clusters and op-list access the training-generator tests share.
#ifndef GPUSIM_TRAINING_TEST_UTIL_H
#define GPUSIM_TRAINING_TEST_UTIL_H

#include "ns3/cluster-spec.h"
#include "ns3/llm-model.h"
#include "ns3/op-ir.h"

#include <gtest/gtest.h>

namespace gpusim_test
{

/// A small GPT (LayerNorm, GELU, biases, dropout, tied embeddings, learned positions).
inline ns3::gpusim::ModelSpec
TinyGpt(uint32_t layers = 4)
{
    ns3::gpusim::ModelSpec m;
    m.name = "tiny-gpt";
    m.layers = layers;
    m.hidden = 256;
    m.heads = 4;
    m.kvHeads = 4;
    m.ffn = 1024;
    m.vocab = 1000;
    m.seqLength = 128;
    m.tiedEmbeddings = true;
    m.learnedPositions = true;
    m.biases = true;
    m.dropout = true;
    m.defaultGlobalBatch = 8;
    return m;
}

/// TinyGpt 4x wider (h 1024, 8 heads, FFN 4096, vocabulary 8000), so GEMMs and collectives
/// take microseconds to milliseconds; its pipeline activations (2 x seqLength x 1024 bytes)
/// take ~0.2 ms on a 400 Gb/s link at 4096, so a shared spine link shows.
inline ns3::gpusim::ModelSpec
WideTinyGpt(uint32_t seqLength = 512)
{
    ns3::gpusim::ModelSpec m = TinyGpt();
    m.name = "wide-tiny-gpt";
    m.hidden = 1024;
    m.heads = 8;
    m.kvHeads = 8;
    m.ffn = 4096;
    m.vocab = 8000;
    m.seqLength = seqLength;
    return m;
}

/// A GEMM-bound GPT: TinyGpt widened to h 4096 (32 heads), FFN 16384, sequence 2048.
inline ns3::gpusim::ModelSpec
GemmBoundGpt(uint32_t layers)
{
    ns3::gpusim::ModelSpec m = TinyGpt(layers);
    m.hidden = 4096;
    m.heads = 32;
    m.kvHeads = 32;
    m.ffn = 16384;
    m.seqLength = 2048;
    return m;
}

inline ns3::gpusim::TrainingPlan
Plan(uint32_t tp, uint32_t pp, uint32_t dp, uint32_t globalBatch)
{
    ns3::gpusim::TrainingPlan p;
    p.tp = tp;
    p.pp = pp;
    p.dp = dp;
    p.globalBatch = globalBatch;
    return p;
}

/// Rank r's ops (the list it shares when it shares one).
inline const std::vector<ns3::gpusim::Op>&
OpsOf(const ns3::gpusim::JobTrace& job, uint32_t r)
{
    const ns3::gpusim::RankTrace& rt = job.ranks.at(r);
    return rt.opsFrom >= 0 ? job.ranks.at(rt.opsFrom).ops : rt.ops;
}

/// The dgx-h100 preset, with `servers` servers (0: the spec's default).
inline ns3::gpusim::ClusterSpec
DgxH100(uint32_t servers = 0)
{
    ns3::gpusim::ClusterSpec s;
    EXPECT_TRUE(ns3::gpusim::LookupClusterPreset("dgx-h100", s));
    s.servers = servers > 0 ? servers : s.servers;
    return s;
}

} // namespace gpusim_test

#endif // GPUSIM_TRAINING_TEST_UTIL_H

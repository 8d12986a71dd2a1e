// Checks the trace that test/train.cc left in GPUSIM_TRACE_DIR (set by ctest):
// EXPECT_RANKS ranks, EXPECT_ITERS iterations, EXPECT_MODE "procs" (one process per rank,
// gpusim-launch -n) or "devices" (one process driving every rank).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "trace-reader.h"

using namespace shimtest;

namespace {

std::string Env(const char* name, const char* dflt) {
  const char* v = getenv(name);
  return v ? v : dflt;
}

struct TraceCheck : ::testing::Test {
  std::string dir = Env("GPUSIM_TRACE_DIR", "");
  int ranks = std::stoi(Env("EXPECT_RANKS", "2"));
  int iters = std::stoi(Env("EXPECT_ITERS", "3"));
  bool perProcess = Env("EXPECT_MODE", "procs") == "procs";
  std::vector<std::vector<Op>> files;

  void SetUp() override {
    ASSERT_FALSE(dir.empty()) << "GPUSIM_TRACE_DIR not set";
    for (int r = 0; r < ranks; ++r) {
      files.push_back(ReadRank(dir + "/rank-" + std::to_string(r) + ".jsonl"));
      ASSERT_FALSE(files.back().empty()) << "rank " << r << " has no ops";
    }
  }
};

TEST_F(TraceCheck, ManifestListsEveryRank) {
  std::string m = ReadFile(dir + "/manifest.json");
  EXPECT_NE(m.find("\"format\":\"gpusim-trace\""), std::string::npos) << m;
  EXPECT_NE(m.find("\"version\":1"), std::string::npos);
  EXPECT_NE(m.find("\"source\":\"shim\""), std::string::npos);
  for (int r = 0; r < ranks; ++r) {
    std::string entry = "{\"rank\":" + std::to_string(r) + ",\"file\":\"rank-" + std::to_string(r) +
                        ".jsonl\",\"device\":\"NVIDIA H100 80GB HBM3\"}";
    EXPECT_NE(m.find(entry), std::string::npos) << m;
  }
  EXPECT_EQ(m.find("\"rank\":" + std::to_string(ranks)), std::string::npos) << "extra rank in " << m;
}

TEST_F(TraceCheck, EveryLineHasCommonFields) {
  for (const auto& ops : files)
    for (const Op& o : ops) {
      ASSERT_EQ(o.line.front(), '{');
      ASSERT_EQ(o.line.back(), '}');
      EXPECT_FALSE(o.op().empty()) << o.line;
      EXPECT_TRUE(o.Has("t") && o.Has("cpu_us")) << o.line;
    }
}

TEST_F(TraceCheck, CommunicatorsMatchAcrossRanks) {
  std::vector<std::string> firstComm;
  for (int r = 0; r < ranks; ++r) {
    auto inits = Select(files[r], "comm_init");
    ASSERT_EQ(inits.size(), perProcess ? 1u : 2u) << "rank " << r;
    EXPECT_EQ(inits[0].Int("rank"), r);
    EXPECT_EQ(inits[0].Int("nranks"), ranks);
    EXPECT_EQ(inits[0].Get("comm").size(), 16u);
    firstComm.push_back(inits[0].Get("comm"));
  }
  for (int r = 1; r < ranks; ++r) EXPECT_EQ(firstComm[r], firstComm[0]);
}

TEST_F(TraceCheck, CollectivesCarrySequenceNumbers) {
  // procs: broadcast + 4 per iteration on one communicator; devices: 1 allreduce per iteration
  // on the first communicator and 1 broadcast per iteration on the second.
  for (int r = 0; r < ranks; ++r) {
    std::map<std::string, std::vector<long long>> seqs;
    for (const Op& c : Select(files[r], "coll")) {
      std::string kind = c.Get("coll");
      if (kind == "send" || kind == "recv") {
        EXPECT_FALSE(c.Has("seq")) << c.line;
        continue;
      }
      seqs[c.Get("comm")].push_back(c.Int("seq"));
      EXPECT_TRUE(c.Has("count") && c.Has("dtype") && c.Has("bytes") && c.Has("stream")) << c.line;
    }
    size_t total = 0;
    for (auto& kv : seqs) {
      for (size_t i = 0; i < kv.second.size(); ++i) EXPECT_EQ(kv.second[i], (long long)i) << kv.first;
      total += kv.second.size();
    }
    EXPECT_EQ(total, perProcess ? 1u + 4u * iters : 2u * iters) << "rank " << r;
  }
}

TEST_F(TraceCheck, CollectiveSizes) {
  const size_t params = 1024ull * 4096;
  for (int r = 0; r < ranks; ++r) {
    auto ar = Select(files[r], "coll", "coll", "allreduce");
    ASSERT_FALSE(ar.empty());
    EXPECT_EQ(ar[0].Int("count"), (long long)params);
    EXPECT_EQ(ar[0].Get("dtype"), "f32");
    EXPECT_EQ(ar[0].Int("bytes"), (long long)params * 4);
    if (!perProcess) {
      EXPECT_GT(ar[0].Int("group"), 0) << ar[0].line;
      continue;
    }
    auto rs = Select(files[r], "coll", "coll", "reducescatter");
    auto ag = Select(files[r], "coll", "coll", "allgather");
    ASSERT_EQ(rs.size(), (size_t)iters);
    ASSERT_EQ(ag.size(), (size_t)iters);
    EXPECT_EQ(rs[0].Get("dtype"), "bf16");
    // ReduceScatter: bytes of the send buffer = recvcount * nranks; AllGather: of the receive one.
    EXPECT_EQ(rs[0].Int("bytes"), rs[0].Int("count") * 2 * ranks);
    EXPECT_EQ(ag[0].Int("bytes"), ag[0].Int("count") * 2 * ranks);
    auto bc = Select(files[r], "coll", "coll", "broadcast");
    ASSERT_EQ(bc.size(), 1u);
    EXPECT_EQ(bc[0].Int("root"), 0);
    EXPECT_EQ(bc[0].Int("seq"), 0);
  }
}

TEST_F(TraceCheck, PipelineSendRecvInsideGroups) {
  if (!perProcess) GTEST_SKIP() << "the single-process variant has no pipeline stages";
  for (int r = 0; r < ranks; ++r) {
    auto sends = Select(files[r], "coll", "coll", "send");
    auto recvs = Select(files[r], "coll", "coll", "recv");
    EXPECT_EQ(sends.size(), r + 1 < ranks ? (size_t)iters : 0u) << "rank " << r;
    EXPECT_EQ(recvs.size(), r > 0 ? (size_t)iters : 0u) << "rank " << r;
    for (const Op& s : sends) {
      EXPECT_EQ(s.Int("peer"), r + 1);
      EXPECT_GT(s.Int("group"), 0);
    }
    for (const Op& s : recvs) {
      EXPECT_EQ(s.Int("peer"), r - 1);
      EXPECT_GT(s.Int("group"), 0);
    }
  }
}

TEST_F(TraceCheck, GemmShapes) {
  for (int r = 0; r < ranks; ++r) {
    int gemms = 0;
    for (const Op& k : Select(files[r], "kernel")) {
      if (!k.Has("gemm")) continue;
      ++gemms;
      std::string name = k.Get("name");
      double flops = std::stod(k.Get("flops"));
      EXPECT_DOUBLE_EQ(flops, 2.0 * k.Gemm("m") * k.Gemm("n") * k.Gemm("k") * k.Gemm("batch")) << k.line;
      if (name == "cublasLtMatmul") {
        EXPECT_EQ(k.Gemm("m"), 512);
        EXPECT_EQ(k.Gemm("n"), 4096);
        EXPECT_EQ(k.Gemm("k"), 1024);
        EXPECT_EQ(k.Get("dtype"), "f16");
      } else if (name == "cublasGemmEx") {
        EXPECT_EQ(k.Gemm("k"), 4096);
        EXPECT_EQ(k.Get("dtype"), "bf16");
      } else if (name == "cublasGemmStridedBatchedEx") {
        EXPECT_EQ(k.Gemm("batch"), 8);
      } else if (name == "cublasSgemm") {
        EXPECT_EQ(k.Gemm("m"), 1024);
        // train.cc puts its handle in CUBLAS_TF32_TENSOR_OP_MATH: FP32 data, TF32 tensor cores.
        EXPECT_EQ(k.Get("dtype"), "tf32");
        EXPECT_EQ(k.Int("mem_bytes"), (1024LL * 512 + 512LL * 4096 + 1024LL * 4096) * 4) << "FP32 storage";
      } else {
        EXPECT_EQ(name, "cublasHgemm");
      }
      EXPECT_GT(k.Int("stream"), 0) << "GEMMs run on the handle's stream";
    }
    EXPECT_EQ(gemms, 5 * iters) << "rank " << r;
  }
}

TEST_F(TraceCheck, RegisteredKernelsAreDemangled) {
  for (int r = 0; r < ranks; ++r) {
    auto sgd = Select(files[r], "kernel", "mangled", "_Z10sgd_updatePfPKffi");
    auto ln = Select(files[r], "kernel", "mangled", "_Z9layernormILi256EEvPfi");
    ASSERT_EQ(sgd.size(), (size_t)iters);
    ASSERT_EQ(ln.size(), (size_t)iters);
    EXPECT_EQ(sgd[0].Get("name"), "sgd_update(float*, float const*, float, int)");
    EXPECT_EQ(ln[0].Get("name"), "void layernorm<256>(float*, int)");
    EXPECT_EQ(sgd[0].Get("block"), "[1024,1,1]");
    EXPECT_EQ(ln[0].Get("grid"), "[512,1,1]");
  }
}

TEST_F(TraceCheck, StreamsEventsAndSyncs) {
  for (int r = 0; r < ranks; ++r) {
    const auto& ops = files[r];
    auto creates = Select(ops, "stream_create");
    ASSERT_EQ(creates.size(), 2u);
    EXPECT_EQ(creates[1].Int("flags"), 1);
    EXPECT_EQ(creates[1].Int("priority"), -5);
    long long compute = creates[0].Int("stream"), comm = creates[1].Int("stream");
    // Every wait names an event recorded earlier on the other stream.
    std::map<long long, long long> recordedOn;
    int waits = 0;
    for (const Op& o : ops) {
      if (o.op() == "event_record") recordedOn[o.Int("event")] = o.Int("stream");
      if (o.op() == "stream_wait_event") {
        ++waits;
        ASSERT_TRUE(recordedOn.count(o.Int("event"))) << o.line;
        EXPECT_NE(recordedOn[o.Int("event")], o.Int("stream"));
        EXPECT_TRUE(o.Int("stream") == compute || o.Int("stream") == comm);
      }
    }
    EXPECT_EQ(waits, 2 * iters);
    EXPECT_EQ(Select(ops, "stream_sync").size(), (size_t)iters);
    EXPECT_EQ(Select(ops, "event_sync").size(), (size_t)iters);
    EXPECT_GE(Select(ops, "device_sync").size(), 1u);
    auto copies = Select(ops, "memcpy");
    ASSERT_EQ(copies.size(), (size_t)iters);
    EXPECT_EQ(copies[0].Get("kind"), "d2h");
    EXPECT_EQ(copies[0].Get("async"), "true");
    EXPECT_EQ(Select(ops, "malloc").size(), 5u);
    EXPECT_EQ(Select(ops, "free").size(), 5u);
  }
}

}  // namespace

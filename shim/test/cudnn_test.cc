// libcudnn.so.9: attention graphs built as cudnn-frontend builds them (cudnn-graphs.h) run as one
// recorded fused kernel each; other graphs and misuse get cuDNN's statuses. ctest runs this
// twice: with GPUSIM_RECORD_DIR (the recorded ops are checked) and without (state only).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_runtime.h"
#include "cudnn-graphs.h"
#include "trace-reader.h"

using namespace cudnntest;
using shimtest::Op;

namespace {

const char* RecordDir() { return getenv("GPUSIM_RECORD_DIR"); }

// The cuDNN kernels recorded on device 0 so far (cudaDeviceReset flushes the trace).
std::vector<Op> CudnnKernels() {
  cudaDeviceReset();
  std::vector<Op> out;
  for (const Op& op : shimtest::Select(shimtest::ReadRank(std::string(RecordDir()) + "/rank-0.jsonl"), "kernel"))
    if (op.Get("name").rfind("cudnn_", 0) == 0) out.push_back(op);
  return out;
}

// A field of the op's nested "sdpa" object.
std::string SdpaField(const Op& op, const std::string& key) { return op.Get(key, op.line.find("\"sdpa\":{")); }

std::string LastError() {
  char buf[1024];
  cudnnGetLastErrorString(buf, sizeof buf);
  return buf;
}

struct Device {
  cudnnHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  void* buffer = nullptr;
  Device() {
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&buffer, 256), cudaSuccess);
    EXPECT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnSetStream(handle, stream), CUDNN_STATUS_SUCCESS);
  }
  ~Device() {
    cudnnDestroy(handle);
    cudaFree(buffer);
    cudaStreamDestroy(stream);
  }
  long long StreamId() const {
    unsigned long long id = 0;
    cudaStreamGetId(stream, &id);
    return (long long)(id & 0xffffffffu);
  }
};

// Builds, plans and executes one attention graph; returns the plan's workspace size.
int64_t RunAttention(const Device& dev, const Sdpa& a, bool backward) {
  Backend be;
  Scalars values(a);
  std::vector<Descriptor> ops = backward ? BackwardOps(be, a) : ForwardOps(be, a);
  Descriptor graph = be.Graph(dev.handle, ops);
  int64_t workspace = -1;
  Descriptor plan = be.Plan(graph, &workspace);
  EXPECT_TRUE(be.ok()) << be.where() << ": " << cudnnGetErrorString(be.status()) << " " << LastError();
  if (!plan) return -1;
  EXPECT_EQ(be.Execute(dev.handle, plan, dev.buffer, dev.buffer, values.Map()), CUDNN_STATUS_SUCCESS) << LastError();
  EXPECT_TRUE(be.ok()) << be.where();
  return workspace;
}

// FLOPs and bytes of an attention (cudnn-sdpa.cc): forward 4 b h s_q s_kv d times the kept
// share; backward twice that; Q, K, V, O once (backward: and their gradients).
double Flops(const Sdpa& a, double kept, bool backward) {
  return (backward ? 2 : 1) * 4.0 * a.b * a.hq * a.sq * a.skv * a.d * kept;
}
long long Bytes(const Sdpa& a, int elt, bool backward) {
  return (backward ? 2 : 1) * (long long)elt * a.b * a.d * (2 * a.hq * a.sq + 2 * a.hk * a.skv);
}

TEST(Cudnn, VersionsErrorStringsAndLegacyCalls) {
  EXPECT_EQ(cudnnGetVersion(), 91301u);
  EXPECT_EQ(cudnnGetCudartVersion(), 13000u);
  int major = 0, minor = 0, patch = 0;
  EXPECT_EQ(cudnnGetProperty(MAJOR_VERSION, &major), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetProperty(MINOR_VERSION, &minor), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetProperty(PATCH_LEVEL, &patch), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(major * 10000 + minor * 100 + patch, CUDNN_VERSION);
  EXPECT_EQ(cudnnGetProperty(MAJOR_VERSION, nullptr), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED");
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED), "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED");
  EXPECT_EQ(cudnnGraphVersionCheck(), CUDNN_STATUS_SUCCESS);
  // The legacy API is exported so that programs load, and refuses to run.
  cudnnTensorDescriptor_t t;
  EXPECT_EQ(cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_NOT_SUPPORTED);
}

TEST(Cudnn, HandlesAndStreams) {
  cudnnHandle_t h;
  ASSERT_EQ(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudaStream_t s = (cudaStream_t)0x99, created;
  ASSERT_EQ(cudnnGetStream(h, &s), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(s, nullptr) << "a new handle works on the legacy default stream";
  ASSERT_EQ(cudaStreamCreate(&created), cudaSuccess);
  ASSERT_EQ(cudnnSetStream(h, created), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnGetStream(h, &s), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(s, created);
  EXPECT_EQ(cudnnSetStream(h, (cudaStream_t)0x1234), CUDNN_STATUS_BAD_PARAM) << "not a stream";
  EXPECT_EQ(cudnnSetStream(nullptr, created), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  EXPECT_EQ(cudnnCreate(nullptr), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  EXPECT_EQ(cudnnDestroy(h), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnDestroy(h), CUDNN_STATUS_BAD_PARAM) << "destroyed twice";
  EXPECT_EQ(cudnnSetStream(h, created), CUDNN_STATUS_BAD_PARAM);
  cudaStreamDestroy(created);
}

TEST(Cudnn, CausalForwardIsOneFusedAttentionKernel) {
  size_t before = RecordDir() ? CudnnKernels().size() : 0;
  Sdpa a;
  a.b = 2, a.hq = a.hk = 16, a.sq = a.skv = 2048, a.d = 128, a.causal = true;
  long long stream;
  {
    Device dev;
    stream = dev.StreamId();
    EXPECT_EQ(RunAttention(dev, a, false), 0) << "the forward needs no workspace";
  }
  if (!RecordDir()) return;
  auto ops = CudnnKernels();
  ASSERT_EQ(ops.size(), before + 1) << "one kernel per execute";
  const Op& op = ops.back();
  EXPECT_EQ(op.Get("name"), "cudnn_sdpa_flash_fwd");
  EXPECT_EQ(op.Int("stream"), stream) << "the handle's stream";
  EXPECT_EQ(op.Gemm("m"), 2048) << op.line;
  EXPECT_EQ(op.Gemm("n"), 2048);
  EXPECT_EQ(op.Gemm("k"), 128);
  EXPECT_EQ(op.Gemm("batch"), 32) << "sequences x query heads";
  EXPECT_EQ(op.Get("dtype", op.line.find("\"gemm\"")), "bf16");
  EXPECT_DOUBLE_EQ(std::stod(op.Get("flops")), Flops(a, 0.5, false)) << "causal: half the scores";
  EXPECT_EQ(op.Int("mem_bytes"), Bytes(a, 2, false));
  EXPECT_EQ(SdpaField(op, "mask"), "causal");
  EXPECT_EQ(SdpaField(op, "kept"), "0.5");
}

TEST(Cudnn, UnmaskedFp16ForwardCountsEveryScore) {
  size_t before = RecordDir() ? CudnnKernels().size() : 0;
  Sdpa a;
  a.b = 3, a.hq = a.hk = 4, a.sq = 1024, a.skv = 512, a.d = 64, a.dtype = CUDNN_DATA_HALF, a.stats = false;
  {
    Device dev;
    RunAttention(dev, a, false);
  }
  if (!RecordDir()) return;
  auto ops = CudnnKernels();
  ASSERT_EQ(ops.size(), before + 1);
  const Op& op = ops.back();
  EXPECT_EQ(op.Gemm("m"), 1024);
  EXPECT_EQ(op.Gemm("n"), 512);
  EXPECT_EQ(op.Get("dtype", op.line.find("\"gemm\"")), "f16");
  EXPECT_DOUBLE_EQ(std::stod(op.Get("flops")), Flops(a, 1, false));
  EXPECT_EQ(op.Int("mem_bytes"), Bytes(a, 2, false));
  EXPECT_EQ(SdpaField(op, "mask"), "none");
}

// cudnn-frontend's FP8 forward scales P V into O with pointwise operations.
TEST(Cudnn, Fp8ForwardWithScaledOutput) {
  size_t before = RecordDir() ? CudnnKernels().size() : 0;
  Sdpa a;
  a.sq = a.skv = 512, a.d = 128, a.causal = true, a.dtype = CUDNN_DATA_FP8_E4M3, a.scaledOutput = true;
  {
    Device dev;
    RunAttention(dev, a, false);
  }
  if (!RecordDir()) return;
  auto ops = CudnnKernels();
  ASSERT_EQ(ops.size(), before + 1);
  EXPECT_EQ(ops.back().Get("dtype", ops.back().line.find("\"gemm\"")), "f8e4m3");
  EXPECT_DOUBLE_EQ(std::stod(ops.back().Get("flops")), Flops(a, 0.5, false));
  EXPECT_EQ(ops.back().Int("mem_bytes"), Bytes(a, 1, false)) << "one byte per element";
}

TEST(Cudnn, GroupedQueryBackwardIsOneFusedAttentionKernel) {
  size_t before = RecordDir() ? CudnnKernels().size() : 0;
  Sdpa a;
  a.b = 1, a.hq = 32, a.hk = 8, a.sq = a.skv = 4096, a.d = 128, a.causal = true;
  {
    Device dev;
    EXPECT_EQ(RunAttention(dev, a, true), 0) << "dQ accumulates in the graph's own FP32 tensor";
    a.deterministic = true;
    EXPECT_EQ(RunAttention(dev, a, true), 2LL * 1 * 32 * 4096 * 4096) << "dP in the workspace, 16-bit";
  }
  if (!RecordDir()) return;
  auto ops = CudnnKernels();
  ASSERT_EQ(ops.size(), before + 2);
  EXPECT_EQ(ops[before].line.substr(ops[before].line.find("\"name\"")),
            ops.back().line.substr(ops.back().line.find("\"name\"")))
      << "both implementations record the same kernel";
  const Op& op = ops.back();
  EXPECT_EQ(op.Get("name"), "cudnn_sdpa_flash_bwd");
  EXPECT_EQ(op.Gemm("batch"), 32);
  EXPECT_EQ(op.Gemm("k"), 128);
  EXPECT_EQ(SdpaField(op, "h_q"), "32");
  EXPECT_EQ(SdpaField(op, "h_k"), "8");
  EXPECT_DOUBLE_EQ(std::stod(op.Get("flops")), Flops(a, 0.5, true)) << "backward: twice the forward";
  EXPECT_EQ(op.Int("mem_bytes"), Bytes(a, 2, true)) << "K and V (and dK, dV) have 8 heads";
}

TEST(Cudnn, BandMasksKeepTheirShareOfScores) {
  size_t before = RecordDir() ? CudnnKernels().size() : 0;
  // Bottom-right causal, 512 queries over 2048 keys: query i sees keys up to i + 1536.
  Sdpa br;
  br.sq = 512, br.skv = 2048, br.causal = true, br.bottomRight = true;
  // Causal with a 256-key sliding window on 1024 x 1024.
  Sdpa win;
  win.sq = win.skv = 1024, win.causal = true, win.window = 256;
  {
    Device dev;
    RunAttention(dev, br, false);
    RunAttention(dev, win, true);
  }
  if (!RecordDir()) return;
  auto ops = CudnnKernels();
  ASSERT_EQ(ops.size(), before + 2);
  double keptBr = (512.0 * 2048 - 512.0 * 512 / 2) / (512.0 * 2048);
  EXPECT_EQ(SdpaField(ops[before], "mask"), "causal");
  EXPECT_NEAR(std::stod(SdpaField(ops[before], "kept")), keptBr, 1e-12);
  EXPECT_DOUBLE_EQ(std::stod(ops[before].Get("flops")), Flops(br, keptBr, false));
  // A band 256 wide below the diagonal: 1024 * 256 - 256^2 / 2 of 1024^2.
  double keptWin = (1024.0 * 256 - 256.0 * 256 / 2) / (1024.0 * 1024);
  EXPECT_EQ(SdpaField(ops[before + 1], "mask"), "band");
  EXPECT_NEAR(std::stod(SdpaField(ops[before + 1], "kept")), keptWin, 1e-12);
  EXPECT_DOUBLE_EQ(std::stod(ops[before + 1].Get("flops")), Flops(win, keptWin, true));
}

// cuDNN 9.13's dedicated operation (what cudnn-frontend uses for an unmasked forward from 9.13.1).
TEST(Cudnn, SdpaForwardOperation) {
  size_t before = RecordDir() ? CudnnKernels().size() : 0;
  Sdpa a;
  a.b = 4, a.hq = 8, a.hk = 2, a.sq = a.skv = 1024, a.d = 64;
  {
    Device dev;
    Backend be;
    std::vector<int64_t> q = {a.b, a.hq, a.sq, a.d}, k = {a.b, a.hk, a.skv, a.d};
    Descriptor op = be.Make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    be.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, be.Tensor(kQ, q, Contiguous(q), a.dtype));
    be.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, be.Tensor(kK, k, Contiguous(k), a.dtype));
    be.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, be.Tensor(kV, k, Contiguous(k), a.dtype));
    be.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, be.Tensor(kO, q, Contiguous(q), a.dtype));
    be.SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, be.Scalar(kScale, CUDNN_DATA_FLOAT));
    be.Finalize(op);
    int64_t workspace = -1;
    Descriptor plan = be.Plan(be.Graph(dev.handle, {op}), &workspace);
    ASSERT_TRUE(plan) << be.where() << " " << LastError();
    Scalars values(a);
    EXPECT_EQ(be.Execute(dev.handle, plan, dev.buffer, nullptr, values.Map()), CUDNN_STATUS_SUCCESS) << LastError();
  }
  if (!RecordDir()) return;
  auto ops = CudnnKernels();
  ASSERT_EQ(ops.size(), before + 1);
  EXPECT_EQ(ops.back().Get("name"), "cudnn_sdpa_flash_fwd");
  EXPECT_DOUBLE_EQ(std::stod(ops.back().Get("flops")), Flops(a, 1, false));
  EXPECT_EQ(ops.back().Int("mem_bytes"), Bytes(a, 2, false));
}

// Builds a graph of `ops` and asks for an engine: refused, with the operations named.
void ExpectRefused(const Device& dev, Backend& be, const std::vector<Descriptor>& ops, const std::string& listed) {
  ASSERT_TRUE(be.ok()) << be.where() << " " << LastError();
  Descriptor graph = be.Graph(dev.handle, ops);
  ASSERT_TRUE(be.ok()) << "an operation graph finalizes whatever it holds: " << LastError();
  Descriptor heur = be.Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  be.SetDesc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  be.Set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  EXPECT_EQ(cudnnBackendFinalize(heur), CUDNN_STATUS_NOT_SUPPORTED);
  std::string msg = LastError();
  EXPECT_NE(msg.find("CUDNN_STATUS_NOT_SUPPORTED: cuDNN graph with operations " + listed + " is not emulated"),
            std::string::npos)
      << msg;
  // Nor by picking engine 0 directly.
  Descriptor engine = be.Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  be.SetDesc(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph);
  be.SetInt(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0);
  EXPECT_EQ(cudnnBackendFinalize(engine), CUDNN_STATUS_NOT_SUPPORTED);
}

TEST(Cudnn, OtherGraphsAreRefusedByName) {
  Device dev;
  {
    Backend be;  // a lone pointwise add
    std::vector<int64_t> d = {1, 8, 64, 64};
    Descriptor x = be.Tensor(1, d, Contiguous(d), CUDNN_DATA_HALF), y = be.Tensor(2, d, Contiguous(d), CUDNN_DATA_HALF);
    ExpectRefused(dev, be, {be.Pointwise(CUDNN_POINTWISE_ADD, x, x, y)}, "[pointwise add]");
  }
  {
    Backend be;  // a convolution (its descriptors are stored unchecked)
    std::vector<int64_t> xd = {8, 64, 56, 56}, wd = {64, 64, 3, 3};
    Descriptor x = be.Tensor(1, xd, Contiguous(xd), CUDNN_DATA_HALF);
    Descriptor w = be.Tensor(2, wd, Contiguous(wd), CUDNN_DATA_HALF);
    Descriptor y = be.Tensor(3, xd, Contiguous(xd), CUDNN_DATA_HALF);
    Descriptor conv = be.Make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    int64_t dims = 2, pad[2] = {1, 1}, one[2] = {1, 1};
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    be.Set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
    be.Set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    be.Set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    be.Set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    be.Set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    be.Set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one);
    be.Set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, one);
    be.Finalize(conv);
    Descriptor op = be.Make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    be.SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
    be.SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
    be.SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
    be.SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
    be.Finalize(op);
    ExpectRefused(dev, be, {op}, "[convolution forward]");
  }
  {
    Backend be;  // two chained matmuls with a GELU between (an MLP), not a softmax
    std::vector<int64_t> a = {1, 1, 128, 256}, w = {1, 1, 256, 256};
    Descriptor x = be.Tensor(1, a, Contiguous(a), CUDNN_DATA_HALF),
               w1 = be.Tensor(2, w, Contiguous(w), CUDNN_DATA_HALF);
    Descriptor w2 = be.Tensor(3, w, Contiguous(w), CUDNN_DATA_HALF),
               y = be.Tensor(4, a, Contiguous(a), CUDNN_DATA_HALF);
    Descriptor h = be.Virtual(a), g = be.Virtual(a);
    ExpectRefused(dev, be,
                  {be.Matmul(x, w1, h), be.Pointwise(CUDNN_POINTWISE_GELU_FWD, h, nullptr, g), be.Matmul(g, w2, y)},
                  "[matmul x2, pointwise gelu]");
  }
}

TEST(Cudnn, MisuseGetsCudnnStatuses) {
  Device dev;
  Backend be;
  Descriptor t = be.Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  int32_t dims32[4] = {1, 2, 3, 4};
  int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT32, 4, dims32),
            CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
  EXPECT_EQ(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 9, dims),
            CUDNN_STATUS_BAD_PARAM)
      << "more than CUDNN_DIM_MAX dimensions";
  EXPECT_EQ(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, nullptr),
            CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  EXPECT_EQ(cudnnBackendSetAttribute(t, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, dims32),
            CUDNN_STATUS_BAD_PARAM)
      << "not an attribute of a tensor";
  int64_t n = 0;
  EXPECT_EQ(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, &n, dims),
            CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  EXPECT_EQ(cudnnBackendFinalize(t), CUDNN_STATUS_BAD_PARAM) << "required attributes missing";
  EXPECT_NE(LastError().find("required"), std::string::npos) << LastError();

  std::vector<int64_t> d = {1, 1, 64, 32}, e = {1, 1, 16, 64};
  Descriptor a = be.Tensor(1, d, Contiguous(d), CUDNN_DATA_HALF);
  EXPECT_EQ(cudnnBackendSetAttribute(a, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, dims),
            CUDNN_STATUS_NOT_INITIALIZED)
      << "already finalized";
  EXPECT_EQ(cudnnBackendGetAttribute(a, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, &n, dims),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(dims[2], 64);
  EXPECT_EQ(cudnnBackendGetAttribute(a, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_DOUBLE, 4, &n, dims),
            CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
  // A matmul [64 x 32] x [16 x 64]: the inner dimensions differ.
  Descriptor b = be.Tensor(2, e, Contiguous(e), CUDNN_DATA_HALF), c = be.Virtual({1, 1, 64, 64});
  Descriptor mmDesc = be.Make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  be.Set(mmDesc, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  be.Finalize(mmDesc);
  ASSERT_TRUE(be.ok()) << be.where();
  Descriptor mm = be.Make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  EXPECT_EQ(cudnnBackendSetAttribute(mm, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a),
            CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
      << "a tensor where a matmul descriptor belongs";
  Descriptor fresh = be.Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  EXPECT_EQ(cudnnBackendSetAttribute(mm, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &fresh),
            CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  for (auto [name, v] :
       {std::pair{CUDNN_ATTR_OPERATION_MATMUL_ADESC, a}, std::pair{CUDNN_ATTR_OPERATION_MATMUL_BDESC, b},
        std::pair{CUDNN_ATTR_OPERATION_MATMUL_CDESC, c}, std::pair{CUDNN_ATTR_OPERATION_MATMUL_DESC, mmDesc}})
    EXPECT_EQ(cudnnBackendSetAttribute(mm, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendFinalize(mm), CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
  EXPECT_NE(LastError().find("[1,1,64,32] x [1,1,16,64]"), std::string::npos) << LastError();

  // Descriptors: null, unknown, destroyed.
  EXPECT_EQ(cudnnBackendFinalize(nullptr), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  EXPECT_EQ(cudnnBackendFinalize((Descriptor)0x1234), CUDNN_STATUS_BAD_PARAM);
  Descriptor gone;
  ASSERT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &gone), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnBackendDestroyDescriptor(gone), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendDestroyDescriptor(gone), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnBackendCreateDescriptor((cudnnBackendDescriptorType_t)77, &gone), CUDNN_STATUS_NOT_SUPPORTED);

  // Engines, plans and execution.
  Sdpa s;
  Backend g;
  Descriptor graph = g.Graph(dev.handle, ForwardOps(g, s));
  Descriptor engine = g.Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  g.SetDesc(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph);
  g.SetInt(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 1);
  ASSERT_TRUE(g.ok()) << g.where();
  EXPECT_EQ(cudnnBackendFinalize(engine), CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND) << "one engine: 0";
  Descriptor unfinished = g.Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  Descriptor pack = g.Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  EXPECT_EQ(cudnnBackendExecute(dev.handle, unfinished, pack), CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  EXPECT_EQ(cudnnBackendExecute(dev.handle, pack, unfinished), CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE);
  int64_t workspace;
  Descriptor plan = g.Plan(graph, &workspace);
  ASSERT_TRUE(plan) << g.where() << " " << LastError();
  EXPECT_EQ(cudnnBackendExecute(nullptr, plan, pack), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  // A variant pack without Q's pointer.
  int64_t uids[1] = {kK};
  void* ptrs[1] = {dev.buffer};
  g.Set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 1, uids);
  g.Set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 1, ptrs);
  g.Finalize(pack);
  ASSERT_TRUE(g.ok()) << g.where();
  EXPECT_EQ(cudnnBackendExecute(dev.handle, plan, pack), CUDNN_STATUS_BAD_PARAM);
  EXPECT_NE(LastError().find("no data pointer for tensor uid 1"), std::string::npos) << LastError();
  EXPECT_EQ(
      cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0, &n, nullptr),
      CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudnnBackendPopulateCudaGraph(dev.handle, plan, pack, nullptr),
            CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API);
}

// A program may destroy descriptors once they are set on others (cudnn-frontend does).
TEST(Cudnn, DescriptorsLiveOnWhereTheyAreUsed) {
  Device dev;
  Sdpa a;
  Descriptor plan = nullptr;
  {
    Backend be;
    Descriptor graph = be.Graph(dev.handle, ForwardOps(be, a));
    int64_t workspace;
    Descriptor p = be.Plan(graph, &workspace);
    ASSERT_TRUE(p) << be.where();
    // Copy the plan out through its engine config before `be` destroys every descriptor.
    Descriptor config = be.Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t n;
    ASSERT_EQ(cudnnBackendGetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                       &config),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                       &config),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnBackendFinalize(plan), CUDNN_STATUS_SUCCESS);
  }
  Backend be;
  Scalars values(a);
  ForwardOps(be, a);  // registers the same uids for the variant pack
  EXPECT_EQ(be.Execute(dev.handle, plan, dev.buffer, nullptr, values.Map()), CUDNN_STATUS_SUCCESS) << LastError();
  cudnnBackendDestroyDescriptor(plan);
}

struct Seen {
  int calls = 0;
  cudnnSeverity_t sev;
  cudnnStatus_t status;
  std::string msg;
};

TEST(Cudnn, ErrorsReachTheRegisteredCallback) {
  Seen seen;
  auto cb = [](cudnnSeverity_t sev, void* udata, const cudnnDebug_t* dbg, const char* msg) {
    auto* s = static_cast<Seen*>(udata);
    ++s->calls;
    s->sev = sev;
    s->status = dbg->cudnnStatus;
    s->msg = msg;
  };
  ASSERT_EQ(cudnnSetCallback(CUDNN_SEV_ERROR_EN, &seen, cb), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendFinalize(nullptr), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  ASSERT_EQ(cudnnSetCallback(0, nullptr, nullptr), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnBackendFinalize(nullptr), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.sev, CUDNN_SEV_ERROR);
  EXPECT_EQ(seen.status, CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  EXPECT_NE(seen.msg.find("null backend descriptor"), std::string::npos) << seen.msg;
}

}  // namespace

// A miniature data/pipeline-parallel training loop written the way real CUDA programs are,
// against the shim's stub headers. Kernels go through nvcc's registration ABI by hand: a host
// stub registered with __cudaRegisterFunction, launched with __cudaPushCallConfiguration +
// the stub (cudaLaunchKernel) or with __cudaGetKernel + __cudaLaunchKernel (what CUDA 13 emits
// for <<<>>>).
//
//   train [--iters N] [--devices N] [--id-file PATH]
//
// Multi-process (gpusim-launch -n N): rank and size come from GPUSIM_RANK / GPUSIM_WORLD_SIZE;
// the unique id is broadcast through --id-file if given (what real programs do over MPI or a
// file), else every rank calls ncclGetUniqueId and the shim shares it (GPUSIM_UNIQUE_ID_FILE).
// --devices N: one process drives N devices (ncclCommInitAll, plus a second communicator made
// of ncclCommInitRank calls inside one group).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cublasLt.h"
#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "nccl.h"

#include "check-macros.h"
#include "program-util.h"

// ---- what nvcc generates for two __global__ functions ----

static void** g_fatbin;

// __global__ void sgd_update(float* w, const float* g, float lr, int n)
static void sgd_update(float* w, const float* g, float lr, int n) {
  void* args[] = {&w, &g, &lr, &n};
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
  if (__cudaPopCallConfiguration(&grid, &block, &smem, &stream) != cudaSuccess) return;
  CHECK_CUDA(cudaLaunchKernel((const void*)sgd_update, grid, block, args, smem, stream));
}

// template <int B> __global__ void layernorm(float*, int)  — launched the CUDA 13 way.
static void layernorm_256(float* x, int n) {
  static cudaKernel_t handle;
  static bool ok = __cudaGetKernel(&handle, (const void*)layernorm_256) == cudaSuccess;
  void* args[] = {&x, &n};
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
  if (!ok || __cudaPopCallConfiguration(&grid, &block, &smem, &stream) != cudaSuccess) return;
  CHECK_CUDA(__cudaLaunchKernel(handle, grid, block, args, smem, stream));
}

static void UnregisterKernels() { __cudaUnregisterFatBinary(g_fatbin); }

// Runs before main, like nvcc's __sti____cudaRegisterAll.
__attribute__((constructor)) static void RegisterKernels() {
  static const unsigned long long fakeFatbin[4] = {0x466243b1ull, 1, 0, 0};
  g_fatbin = __cudaRegisterFatBinary((void*)fakeFatbin);
  __cudaRegisterFunction(g_fatbin, (const char*)sgd_update, (char*)"_Z10sgd_updatePfPKffi", "_Z10sgd_updatePfPKffi", -1,
                         nullptr, nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFunction(g_fatbin, (const char*)layernorm_256, (char*)"_Z9layernormILi256EEvPfi",
                         "_Z9layernormILi256EEvPfi", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(g_fatbin);
  atexit(UnregisterKernels);
}

// sgd_update<<<grid, block, 0, stream>>>(...)
static void LaunchSgd(dim3 grid, dim3 block, cudaStream_t s, float* w, const float* g, int n) {
  if (__cudaPushCallConfiguration(grid, block, 0, s) == 0) sgd_update(w, g, 0.01f, n);
}
static void LaunchLayernorm(dim3 grid, dim3 block, cudaStream_t s, float* x, int n) {
  if (__cudaPushCallConfiguration(grid, block, 0, s) == 0) layernorm_256(x, n);
}

// ---- model ----

constexpr int kHidden = 1024, kBatch = 512, kFfn = 4096;
constexpr size_t kParams = (size_t)kHidden * kFfn;

struct Rank {
  int device = 0;
  int rank = 0;
  int size = 1;
  ncclComm_t comm = nullptr;
  cudaStream_t compute = nullptr, comm_stream = nullptr;
  cudaEvent_t grads_ready = nullptr, comm_done = nullptr, t0 = nullptr, t1 = nullptr;
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  float *w = nullptr, *grad = nullptr, *act = nullptr, *pipe = nullptr;
  float* loss_host = nullptr;
  void* shard = nullptr;
};

static void Setup(Rank& r) {
  CHECK_CUDA(cudaSetDevice(r.device));
  CHECK_CUDA(cudaStreamCreate(&r.compute));
  int lo, hi;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CHECK_CUDA(cudaStreamCreateWithPriority(&r.comm_stream, cudaStreamNonBlocking, hi));
  CHECK_CUDA(cudaEventCreateWithFlags(&r.grads_ready, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&r.comm_done, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreate(&r.t0));
  CHECK_CUDA(cudaEventCreate(&r.t1));
  CHECK_CUDA(cudaMalloc(&r.w, kParams * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&r.act, (size_t)kBatch * kFfn * sizeof(float)));
  CHECK_NCCL(ncclMemAlloc((void**)&r.grad, kParams * sizeof(float)));
  CHECK_NCCL(ncclMemAlloc((void**)&r.pipe, (size_t)kBatch * kHidden * sizeof(float)));
  CHECK_NCCL(ncclMemAlloc(&r.shard, kParams * 2));
  CHECK_CUDA(cudaMallocHost((void**)&r.loss_host, sizeof(float)));
  CHECK_BLAS(cublasCreate(&r.blas));
  CHECK_BLAS(cublasSetStream(r.blas, r.compute));
  CHECK_BLAS(cublasSetMathMode(r.blas, CUBLAS_TF32_TENSOR_OP_MATH));
  CHECK_BLAS(cublasLtCreate(&r.lt));
}

// cuBLASLt: activations[kBatch x kFfn] = x[kBatch x kHidden] * W1[kHidden x kFfn], fp16.
static void LtMatmul(Rank& r) {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulPreference_t pref;
  CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t t = CUBLAS_OP_T;
  CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&a, CUDA_R_16F, kHidden, kBatch, kHidden));  // A^T: k x m
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&b, CUDA_R_16F, kHidden, kFfn, kHidden));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&c, CUDA_R_16F, kBatch, kFfn, kBatch));
  CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = 32 << 20;
  CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t heur[4];
  int found = 0;
  CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(r.lt, desc, a, b, c, c, pref, 4, heur, &found));
  if (found < 1) {
    fprintf(stderr, "no cuBLASLt algorithm\n");
    exit(1);
  }
  float one = 1, zero = 0;
  CHECK_BLAS(cublasLtMatmul(r.lt, desc, &one, r.act, a, r.w, b, &zero, r.act, c, r.act, c, &heur[0].algo, nullptr, 0,
                            r.compute));
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(c);
  cublasLtMatmulDescDestroy(desc);
}

static void Forward(Rank& r) {
  CHECK_CUDA(cudaSetDevice(r.device));
  CHECK_CUDA(cudaEventRecord(r.t0, r.compute));
  LaunchLayernorm(dim3(kBatch), dim3(256), r.compute, r.act, kBatch * kHidden);
  LtMatmul(r);
  float one = 1, zero = 0;
  // Output projection in bf16 through cublasGemmEx: [kBatch x kHidden] = act * W2.
  CHECK_BLAS(cublasGemmEx(r.blas, CUBLAS_OP_N, CUBLAS_OP_N, kBatch, kHidden, kFfn, &one, r.act, CUDA_R_16BF, kBatch,
                          r.w, CUDA_R_16BF, kFfn, &zero, r.act, CUDA_R_16BF, kBatch, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
  // Attention-like batched product: 8 heads of [128 x 128] x [128 x 64].
  CHECK_BLAS(cublasGemmStridedBatchedEx(r.blas, CUBLAS_OP_N, CUBLAS_OP_T, 128, 128, 64, &one, r.act, CUDA_R_16F, 128,
                                        128 * 64, r.act, CUDA_R_16F, 128, 128 * 64, &zero, r.act, CUDA_R_16F, 128,
                                        128 * 128, 8, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void Backward(Rank& r) {
  float one = 1, zero = 0;
  // dW = act^T * dY in fp32.
  CHECK_BLAS(cublasSgemm(r.blas, CUBLAS_OP_T, CUBLAS_OP_N, kHidden, kFfn, kBatch, &one, r.act, kBatch, r.act, kBatch,
                         &zero, r.grad, kHidden));
  __half hone{0x3c00}, hzero{0};
  CHECK_BLAS(cublasHgemm(r.blas, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &hone, (__half*)r.act, 256, (__half*)r.act,
                         256, &hzero, (__half*)r.act, 256));
  CHECK_CUDA(cudaEventRecord(r.grads_ready, r.compute));
}

static void Communicate(Rank& r) {
  CHECK_CUDA(cudaStreamWaitEvent(r.comm_stream, r.grads_ready, 0));
  CHECK_NCCL(ncclAllReduce(r.grad, r.grad, kParams, ncclFloat, ncclSum, r.comm, r.comm_stream));
  CHECK_NCCL(ncclReduceScatter(r.shard, r.shard, kParams / r.size / 2, ncclBfloat16, ncclSum, r.comm, r.comm_stream));
  CHECK_NCCL(ncclAllGather(r.shard, r.shard, kParams / r.size / 2, ncclBfloat16, r.comm, r.comm_stream));
}

// Pipeline stage boundary: activations go to the next rank, gradients come back.
static void PipelineExchange(Rank& r) {
  size_t n = (size_t)kBatch * kHidden;
  CHECK_NCCL(ncclGroupStart());
  if (r.rank > 0) CHECK_NCCL(ncclRecv(r.pipe, n, ncclFloat, r.rank - 1, r.comm, r.comm_stream));
  if (r.rank + 1 < r.size) CHECK_NCCL(ncclSend(r.pipe, n, ncclFloat, r.rank + 1, r.comm, r.comm_stream));
  CHECK_NCCL(ncclGroupEnd());
}

static void Step(Rank& r) {
  CHECK_CUDA(cudaEventRecord(r.comm_done, r.comm_stream));
  CHECK_CUDA(cudaStreamWaitEvent(r.compute, r.comm_done, 0));
  LaunchSgd(dim3((unsigned)(kParams / 1024)), dim3(1024), r.compute, r.w, r.grad, (int)kParams);
  CHECK_CUDA(cudaMemcpyAsync(r.loss_host, r.grad, sizeof(float), cudaMemcpyDeviceToHost, r.compute));
  CHECK_CUDA(cudaEventRecord(r.t1, r.compute));
  CHECK_CUDA(cudaStreamSynchronize(r.compute));
  CHECK_CUDA(cudaEventSynchronize(r.t1));
  float ms = -1;
  CHECK_CUDA(cudaEventElapsedTime(&ms, r.t0, r.t1));
  if (ms < 0) {
    fprintf(stderr, "negative step time\n");
    exit(1);
  }
}

static void Teardown(Rank& r) {
  CHECK_CUDA(cudaSetDevice(r.device));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_NCCL(ncclMemFree(r.grad));
  CHECK_NCCL(ncclMemFree(r.pipe));
  CHECK_NCCL(ncclMemFree(r.shard));
  CHECK_CUDA(cudaFree(r.w));
  CHECK_CUDA(cudaFree(r.act));
  CHECK_CUDA(cudaFreeHost(r.loss_host));
  cublasDestroy(r.blas);
  cublasLtDestroy(r.lt);
  cudaEventDestroy(r.t0);
  cudaEventDestroy(r.t1);
  cudaEventDestroy(r.grads_ready);
  cudaEventDestroy(r.comm_done);
  cudaStreamDestroy(r.compute);
  cudaStreamDestroy(r.comm_stream);
  CHECK_NCCL(ncclCommDestroy(r.comm));
}



int main(int argc, char** argv) {
  int iters = 3, devices = 0;
  const char* idFile = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iters"))
      iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--devices"))
      devices = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--id-file"))
      idFile = argv[i + 1];
  }
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));

  std::vector<Rank> ranks;
  if (devices > 0) {
    // One process, `devices` GPUs: a data-parallel communicator from ncclCommInitAll ...
    if (devices > ndev) return 1;
    ranks.resize(devices);
    std::vector<ncclComm_t> comms(devices);
    CHECK_NCCL(ncclCommInitAll(comms.data(), devices, nullptr));
    for (int d = 0; d < devices; ++d) {
      ranks[d].device = d;
      ranks[d].rank = d;
      ranks[d].size = devices;
      ranks[d].comm = comms[d];
      Setup(ranks[d]);
    }
    // ... and a second one built from ncclCommInitRank calls grouped on this one thread.
    ncclUniqueId id;
    CHECK_NCCL(ncclGetUniqueId(&id));
    std::vector<ncclComm_t> second(devices);
    CHECK_NCCL(ncclGroupStart());
    for (int d = 0; d < devices; ++d) {
      CHECK_CUDA(cudaSetDevice(d));
      CHECK_NCCL(ncclCommInitRank(&second[d], devices, id, d));
    }
    CHECK_NCCL(ncclGroupEnd());
    for (int it = 0; it < iters; ++it) {
      for (Rank& r : ranks) Forward(r), Backward(r);
      CHECK_NCCL(ncclGroupStart());
      for (Rank& r : ranks) {
        CHECK_CUDA(cudaStreamWaitEvent(r.comm_stream, r.grads_ready, 0));
        CHECK_NCCL(ncclAllReduce(r.grad, r.grad, kParams, ncclFloat, ncclSum, r.comm, r.comm_stream));
      }
      CHECK_NCCL(ncclGroupEnd());
      CHECK_NCCL(ncclGroupStart());
      for (int d = 0; d < devices; ++d)
        CHECK_NCCL(ncclBroadcast(ranks[d].w, ranks[d].w, 1024, ncclFloat, 0, second[d], ranks[d].comm_stream));
      CHECK_NCCL(ncclGroupEnd());
      for (Rank& r : ranks) {
        CHECK_CUDA(cudaSetDevice(r.device));
        Step(r);
      }
    }
    for (int d = 0; d < devices; ++d) CHECK_NCCL(ncclCommDestroy(second[d]));
  } else {
    Rank r;
    r.rank = EnvInt("GPUSIM_RANK", 0);
    r.size = EnvInt("GPUSIM_WORLD_SIZE", 1);
    r.device = r.rank % ndev;
    CHECK_CUDA(cudaSetDevice(r.device));
    ncclUniqueId id;
    ShareId(&id, r.rank, idFile);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    CHECK_NCCL(ncclCommInitRankConfig(&r.comm, r.size, id, r.rank, &config));
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) CHECK_NCCL(ncclCommGetAsyncError(r.comm, &state));
    CHECK_NCCL(state);
    int count = 0, me = -1;
    CHECK_NCCL(ncclCommCount(r.comm, &count));
    CHECK_NCCL(ncclCommUserRank(r.comm, &me));
    if (count != r.size || me != r.rank) return 1;
    Setup(r);
    CHECK_NCCL(ncclBroadcast(r.w, r.w, kParams, ncclFloat, 0, r.comm, r.comm_stream));
    ncclRedOp_t avg;
    float scale = 1.0f / r.size;
    CHECK_NCCL(ncclRedOpCreatePreMulSum(&avg, &scale, ncclFloat, ncclScalarHostImmediate, r.comm));
    for (int it = 0; it < iters; ++it) {
      Forward(r);
      PipelineExchange(r);
      Backward(r);
      Communicate(r);
      CHECK_NCCL(ncclAllReduce(r.loss_host ? r.grad : nullptr, r.grad, 1, ncclFloat, avg, r.comm, r.comm_stream));
      Step(r);
    }
    CHECK_NCCL(ncclRedOpDestroy(avg, r.comm));
    ranks.push_back(r);
  }
  for (Rank& r : ranks) Teardown(r);
  printf("%s: %zu rank(s) x %d iterations done\n", prop.name, ranks.size(), iters);
  return 0;
}

// A GPT-2-shaped data-parallel trainer written the way llm.c's train_gpt2.cu is: one process
// per GPU, rank and GPU from the launcher's environment (RANK, WORLD_SIZE, LOCAL_RANK), the
// NCCL id shared through a file (llm.c's `-pi fs`), cuBLASLt GEMMs, llm.c's unfused attention
// (permute, two strided-batched GEMMs, softmax), gradients reduced with NCCL (all-reduce, or
// ZeRO-1: reduce-scatter, the optimizer on the shard, all-gather), and each step timed with
// clock_gettime(CLOCK_MONOTONIC) around a synchronised step, printed like llm.c prints it.
//
//   gpt_train [--steps N] [--batch B] [--seq T] [--layers L] [--channels C] [--heads H]
//             [--vocab V] [--zero 0|1] [--id-file PATH] [--host-work-us US]
//
// Kernels have no device code (the shim runs none): each is registered as nvcc registers a
// __global__ function and launched through the runtime like <<<>>> does.
#include <time.h>

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

namespace {

// ---- kernels, registered the way nvcc's host stubs do ----

void** g_fatbin;

struct Kernel {
  const char* mangled;
};
// The host-side handles of llm.c's kernels (a static object's address stands for each stub).
Kernel kEncoder{"_Z22encoder_forward_kernelP13__nv_bfloat16PKiS1_S1_iii"};
Kernel kLayernorm{"_Z24layernorm_forward_kernelP13__nv_bfloat16PfS1_PKS_S3_S3_iii"};
Kernel kPermute{"_Z14permute_kernelP13__nv_bfloat16S0_S0_PKS_iiii"};
Kernel kSoftmax{"_Z25softmax_forward_kernel5P13__nv_bfloat16fPKS_ii"};
Kernel kUnpermute{"_Z16unpermute_kernelP13__nv_bfloat16S0_iiii"};
Kernel kResidual{"_Z23residual_forward_kernelP13__nv_bfloat16PKS_S2_i"};
Kernel kGelu{"_Z19gelu_forward_kernelP13__nv_bfloat16PKS_i"};
Kernel kClassifier{"_Z24fused_classifier_kernel5P13__nv_bfloat16PfS1_PKS_PKiiii"};
Kernel kLayernormBwd{"_Z25layernorm_backward_kernelP13__nv_bfloat16S0_S0_PfPKS_S3_S3_PKfS5_iii"};
Kernel kSoftmaxBwd{"_Z26softmax_autoregressive_backward_kernelP13__nv_bfloat16PKS_S2_iiif"};
Kernel kGeluBwd{"_Z24gelu_backward_kernelP13__nv_bfloat16PKS_S2_i"};
Kernel kAdamW{"_Z13adamw_kernel3P13__nv_bfloat16PfS1_S1_S1_mmmmfffffffj"};
Kernel* const kKernels[] = {&kEncoder, &kLayernorm,  &kPermute,      &kSoftmax,    &kUnpermute, &kResidual,
                            &kGelu,    &kClassifier, &kLayernormBwd, &kSoftmaxBwd, &kGeluBwd,   &kAdamW};

__attribute__((constructor)) void RegisterKernels() {
  static const unsigned long long fatbin[4] = {0x466243b1ull, 1, 0, 0};
  g_fatbin = __cudaRegisterFatBinary((void*)fatbin);
  for (Kernel* k : kKernels)
    __cudaRegisterFunction(g_fatbin, (const char*)k, (char*)k->mangled, k->mangled, -1, nullptr, nullptr, nullptr,
                           nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(g_fatbin);
}

void Launch(const Kernel& k, size_t threads, cudaStream_t s) {
  const unsigned block = 512;
  const unsigned grid = (unsigned)((threads + block - 1) / block);
  CHECK_CUDA(cudaLaunchKernel((const void*)&k, dim3(grid ? grid : 1), dim3(block), nullptr, 0, s));
}

// ---- options ----

struct Options {
  int steps = 5, batch = 4, seq = 1024, layers = 12, channels = 768, heads = 12, vocab = 50304, zero = 1;
  const char* idFile = nullptr;
  int hostWorkUs = 0;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto num = [&](int& out) {
      if (!v) {
        fprintf(stderr, "%s needs a value\n", k.c_str());
        exit(2);
      }
      out = atoi(v);
      ++i;
    };
    if (k == "--steps")
      num(o.steps);
    else if (k == "--batch")
      num(o.batch);
    else if (k == "--seq")
      num(o.seq);
    else if (k == "--layers")
      num(o.layers);
    else if (k == "--channels")
      num(o.channels);
    else if (k == "--heads")
      num(o.heads);
    else if (k == "--vocab")
      num(o.vocab);
    else if (k == "--zero")
      num(o.zero);
    else if (k == "--host-work-us")
      num(o.hostWorkUs);
    else if (k == "--id-file" && v)
      o.idFile = argv[++i];
    else {
      fprintf(stderr, "unknown argument %s\n", k.c_str());
      exit(2);
    }
  }
  return o;
}


double NowMs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}



// ---- the model's GEMMs through cuBLASLt, as llm.c's matmul_cublaslt ----

struct Blas {
  cublasLtHandle_t lt;
  cublasHandle_t handle;  // strided-batched attention GEMMs
  void* workspace;
  size_t workspaceBytes = 32 << 20;
};

// Per sequence and head: out[m x n] = a[m x k] * b[k x n], `batch` times (attention's
// scores Q K^T and values att V).
void BatchedMatmul(Blas& b, void* out, const void* x, const void* y, int m, int n, int k, int batch) {
  const float one = 1, zero = 0;
  CHECK_BLAS(cublasGemmStridedBatchedEx(b.handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, x, CUDA_R_16BF, k,
                                        (long long)m * k, y, CUDA_R_16BF, k, (long long)k * n, &zero, out, CUDA_R_16BF,
                                        m, (long long)m * n, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// out[m x n] = inp[m x k] * weight^T (weight n x k), bf16 in and out, fp32 compute.
void Matmul(Blas& b, cudaStream_t s, void* out, const void* inp, const void* weight, int m, int n, int k, bool transA,
            bool transB) {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulPreference_t pref;
  CHECK_BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = transA ? CUBLAS_OP_T : CUBLAS_OP_N, tb = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CHECK_BLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  CHECK_BLAS(transA ? cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, n, k)
                    : cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, k, n));
  CHECK_BLAS(transB ? cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, m, k, m)
                    : cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, m, k));
  CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, m, n));
  CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
  CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &b.workspaceBytes,
                                                  sizeof b.workspaceBytes));
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  CHECK_BLAS(cublasLtMatmulAlgoGetHeuristic(b.lt, desc, la, lb, lc, lc, pref, 1, &heur, &found));
  if (found < 1) {
    fprintf(stderr, "no cuBLASLt algorithm for %d x %d x %d\n", m, n, k);
    exit(1);
  }
  const float one = 1, zero = 0;
  CHECK_BLAS(cublasLtMatmul(b.lt, desc, &one, weight, la, inp, lb, &zero, out, lc, out, lc, &heur.algo, b.workspace,
                            b.workspaceBytes, s));
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  const int rank = EnvInt("RANK", 0), world = EnvInt("WORLD_SIZE", 1), local = EnvInt("LOCAL_RANK", 0);
  int ndev = 0;
  CHECK_CUDA(cudaGetDeviceCount(&ndev));
  // cudaSetDevice(LOCAL_RANK); a launcher that pins one GPU per process (CUDA_VISIBLE_DEVICES)
  // leaves one device, device 0.
  const int device = ndev == 1 ? 0 : local;
  CHECK_CUDA(cudaSetDevice(device));
  ncclUniqueId id;
  ShareId(&id, rank, o.idFile);
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));

  const size_t B = o.batch, T = o.seq, C = o.channels, L = o.layers, NH = o.heads, V = o.vocab;
  const size_t params = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;  // GPT-2 parameter count
  const size_t shard = (params + world - 1) / world;
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  Blas blas;
  CHECK_BLAS(cublasLtCreate(&blas.lt));
  CHECK_BLAS(cublasCreate(&blas.handle));
  CHECK_BLAS(cublasSetStream(blas.handle, s));
  CHECK_CUDA(cudaMalloc(&blas.workspace, blas.workspaceBytes));
  void *weights, *grads, *acts, *logits, *master;
  CHECK_CUDA(cudaMalloc(&weights, params * 2));
  CHECK_CUDA(cudaMalloc(&grads, params * 2));
  CHECK_CUDA(cudaMalloc(&acts, B * T * C * 2 * 16));
  CHECK_CUDA(cudaMalloc(&logits, B * T * V * 2));
  CHECK_CUDA(cudaMalloc(&master, (o.zero ? shard : params) * 4 * 3));  // fp32 master, m, v
  float* lossHost;
  CHECK_CUDA(cudaMallocHost((void**)&lossHost, sizeof(float)));
  char* a = (char*)acts;
  char* w = (char*)weights;

  const double flopsPerStep = 6.0 * params * B * T * world + 12.0 * L * C * T * B * T * world;
  if (rank == 0)
    printf("gpt_train: %d processes, %zu layers, %zu channels, %zu heads, B=%zu T=%zu, %.1fM parameters, ZeRO-%d\n",
           world, L, C, NH, B, T, params / 1e6, o.zero);
  double total = 0;
  for (int step = 0; step < o.steps; ++step) {
    const double t0 = NowMs();
    BurnCpu(o.hostWorkUs);
    // Forward.
    Launch(kEncoder, B * T * C, s);
    for (size_t l = 0; l < L; ++l) {
      Launch(kLayernorm, B * T * C, s);
      Matmul(blas, s, a, a, w, B * T, 3 * C, C, true, false);  // qkv
      Launch(kPermute, B * T * 3 * C, s);
      BatchedMatmul(blas, a, a, a, T, T, C / NH, B * NH);  // scores Q K^T
      Launch(kSoftmax, B * NH * T * T, s);
      BatchedMatmul(blas, a, a, a, T, C / NH, T, B * NH);  // att V
      Launch(kUnpermute, B * T * C, s);
      Matmul(blas, s, a, a, w, B * T, C, C, true, false);  // attention projection
      Launch(kResidual, B * T * C, s);
      Launch(kLayernorm, B * T * C, s);
      Matmul(blas, s, a, a, w, B * T, 4 * C, C, true, false);  // fc
      Launch(kGelu, B * T * 4 * C, s);
      Matmul(blas, s, a, a, w, B * T, C, 4 * C, true, false);  // fc projection
      Launch(kResidual, B * T * C, s);
    }
    Launch(kLayernorm, B * T * C, s);
    Matmul(blas, s, logits, a, w, B * T, V, C, true, false);  // lm head
    Launch(kClassifier, B * T * V, s);
    // Backward: every GEMM twice (input and weight gradients).
    Matmul(blas, s, a, logits, w, B * T, C, V, false, false);
    Matmul(blas, s, grads, a, logits, C, V, B * T, false, true);
    for (size_t l = 0; l < L; ++l) {
      Launch(kResidual, B * T * C, s);
      Matmul(blas, s, a, a, w, B * T, 4 * C, C, false, false);
      Matmul(blas, s, grads, a, a, 4 * C, C, B * T, false, true);
      Launch(kGeluBwd, B * T * 4 * C, s);
      Matmul(blas, s, a, a, w, B * T, C, 4 * C, false, false);
      Matmul(blas, s, grads, a, a, C, 4 * C, B * T, false, true);
      Launch(kLayernormBwd, B * T * C, s);
      Matmul(blas, s, a, a, w, B * T, C, C, false, false);
      Matmul(blas, s, grads, a, a, C, C, B * T, false, true);
      Launch(kPermute, B * T * C, s);
      BatchedMatmul(blas, a, a, a, T, T, C / NH, B * NH);  // d(att) = d(out) V^T
      BatchedMatmul(blas, a, a, a, C / NH, T, T, B * NH);  // dV = att^T d(out)
      Launch(kSoftmaxBwd, B * NH * T * T, s);
      BatchedMatmul(blas, a, a, a, T, C / NH, T, B * NH);  // dQ = d(scores) K
      BatchedMatmul(blas, a, a, a, C / NH, T, T, B * NH);  // dK = d(scores)^T Q
      Launch(kUnpermute, B * T * 3 * C, s);
      Matmul(blas, s, a, a, w, B * T, C, 3 * C, false, false);
      Matmul(blas, s, grads, a, a, 3 * C, C, B * T, false, true);
      Launch(kLayernormBwd, B * T * C, s);
    }
    // Gradients across the data-parallel ranks, then the optimizer.
    if (o.zero) {
      CHECK_NCCL(ncclReduceScatter(grads, (char*)grads + rank * shard * 2, shard, ncclBfloat16, ncclAvg, comm, s));
      Launch(kAdamW, shard, s);
      CHECK_NCCL(ncclAllGather((char*)weights + rank * shard * 2, weights, shard, ncclBfloat16, comm, s));
    } else {
      CHECK_NCCL(ncclAllReduce(grads, grads, params, ncclBfloat16, ncclAvg, comm, s));
      Launch(kAdamW, params, s);
    }
    // The loss to the host, as llm.c reads it every step.
    CHECK_CUDA(cudaMemcpyAsync(lossHost, logits, sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    const double ms = NowMs() - t0;
    if (step > 0) total += ms;  // the first step warms up, as llm.c skips it
    if (rank == 0)
      printf("step %4d/%d | %.3f ms | %.1f%% bf16 MFU | %.0f tok/s\n", step + 1, o.steps, ms,
             100.0 * flopsPerStep / (ms * 1e-3) / (989e12 * world), B * T * world / (ms * 1e-3));
    fflush(stdout);
  }
  if (rank == 0 && o.steps > 1) printf("average step %.3f ms\n", total / (o.steps - 1));
  CHECK_CUDA(cudaStreamSynchronize(s));
  CHECK_NCCL(ncclCommDestroy(comm));
  return 0;
}

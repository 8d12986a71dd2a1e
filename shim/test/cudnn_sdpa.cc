// An attention layer through cuDNN's backend API, as cudnn-frontend drives it: builds the SDPA
// forward and backward graphs once and executes both --iters times on a created stream.
//
//   shim_cudnn_sdpa [--b N] [--hq N] [--hk N] [--s N] [--d N] [--dtype bf16|f16] [--causal]
//                   [--iters N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_runtime.h"
#include "cudnn-graphs.h"

using namespace cudnntest;

namespace {

int Fail(const char* what, const Backend& be) {
  char msg[1024];
  cudnnGetLastErrorString(msg, sizeof msg);
  fprintf(stderr, "shim_cudnn_sdpa: %s failed at %s: %s\n", what, be.where().c_str(), msg);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Sdpa a;
  int iters = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto next = [&]() { return i + 1 < argc ? atoll(argv[++i]) : 0LL; };
    if (arg == "--b")
      a.b = next();
    else if (arg == "--hq")
      a.hq = next();
    else if (arg == "--hk")
      a.hk = next();
    else if (arg == "--s")
      a.sq = a.skv = next();
    else if (arg == "--d")
      a.d = next();
    else if (arg == "--iters")
      iters = (int)next();
    else if (arg == "--causal")
      a.causal = true;
    else if (arg == "--dtype" && i + 1 < argc)
      a.dtype = strcmp(argv[++i], "f16") == 0 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
    else {
      fprintf(stderr,
              "usage: shim_cudnn_sdpa [--b N] [--hq N] [--hk N] [--s N] [--d N] [--dtype bf16|f16] "
              "[--causal] [--iters N]\n");
      return 2;
    }
  }
  if (a.b < 1 || a.hq < 1 || a.hk < 1 || a.hq % a.hk || a.sq < 1 || a.d < 1 || iters < 0) {
    fprintf(stderr, "shim_cudnn_sdpa: bad geometry\n");
    return 2;
  }
  cudaStream_t stream;
  void* buffer;
  cudnnHandle_t handle;
  if (cudaStreamCreate(&stream) != cudaSuccess || cudaMalloc(&buffer, 1 << 20) != cudaSuccess ||
      cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS || cudnnSetStream(handle, stream) != CUDNN_STATUS_SUCCESS) {
    fprintf(stderr, "shim_cudnn_sdpa: CUDA / cuDNN setup failed\n");
    return 1;
  }
  Backend fwd, bwd;
  int64_t fwdWorkspace = 0, bwdWorkspace = 0;
  Descriptor fwdPlan = fwd.Plan(fwd.Graph(handle, ForwardOps(fwd, a)), &fwdWorkspace);
  if (!fwdPlan) return Fail("forward plan", fwd);
  Descriptor bwdPlan = bwd.Plan(bwd.Graph(handle, BackwardOps(bwd, a)), &bwdWorkspace);
  if (!bwdPlan) return Fail("backward plan", bwd);
  // The workspace as a program allocates it (recorded); the shim never touches it.
  void* workspace = nullptr;
  int64_t bytes = std::max<int64_t>(fwdWorkspace, bwdWorkspace);
  if (bytes > 0 && cudaMalloc(&workspace, (size_t)bytes) != cudaSuccess) {
    fprintf(stderr, "shim_cudnn_sdpa: cannot allocate %lld bytes of workspace\n", (long long)bytes);
    return 1;
  }
  Scalars values(a);
  for (int i = 0; i < iters; ++i) {
    if (fwd.Execute(handle, fwdPlan, buffer, workspace, values.Map()) != CUDNN_STATUS_SUCCESS)
      return Fail("forward", fwd);
    if (bwd.Execute(handle, bwdPlan, buffer, workspace, values.Map()) != CUDNN_STATUS_SUCCESS)
      return Fail("backward", bwd);
  }
  cudaStreamSynchronize(stream);
  cudaFree(workspace);
  cudaFree(buffer);
  cudnnDestroy(handle);
  return 0;
}

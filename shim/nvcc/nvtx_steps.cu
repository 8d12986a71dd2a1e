// Training-style loop annotated with NVTX v3 (header-only, from the toolkit): per-iteration
// ProfilerStep#N ranges with nested ranges and a mark, around kernel launches.
#include <cstdio>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void step_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

int main() {
  const int n = 1 << 16;
  float* x;
  if (cudaMalloc(&x, n * sizeof(float)) != cudaSuccess) return 1;
  for (int it = 0; it < 3; ++it) {
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", it);
    nvtxRangePushA(name);
    nvtxRangePushA("forward");
    step_kernel<<<n / 256, 256>>>(x, n);
    nvtxRangePop();
    nvtxMarkA("after-forward");
    nvtxRangeId_t id = nvtxRangeStartA("optimizer");
    step_kernel<<<n / 256, 256>>>(x, n);
    nvtxRangeEnd(id);
    nvtxRangePop();
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  printf("ok\n");
  return 0;
}

// <<<>>> launches compiled by nvcc (-cudart shared): plain and templated kernels, the default
// and a created stream, events, memcpy, device properties.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

template <typename T, int kBlock>
__global__ void scale(T* v, T s, int n) {
  int i = blockIdx.x * kBlock + threadIdx.x;
  if (i < n) v[i] *= s;
}

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t e = (x);                                                            \
    if (e != cudaSuccess) {                                                         \
      printf("%s failed: %s\n", #x, cudaGetErrorString(e));                         \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs, cc %d.%d, %zu MiB\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor,
         prop.totalGlobalMem >> 20);
  const int n = 1 << 20;
  float *x, *y;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  float* h = new float[n];
  for (int i = 0; i < n; ++i) h[i] = (float)i;
  CHECK(cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t s;
  cudaEvent_t a, b;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a, s));
  for (int it = 0; it < 4; ++it) {
    axpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
    scale<float, 128><<<(n + 127) / 128, 128, 0, s>>>(y, 0.5f, n);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(b, s));
  CHECK(cudaEventSynchronize(b));
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  float* back = new float[n];
  CHECK(cudaMemcpy(back, x, n * sizeof(float), cudaMemcpyDeviceToHost));
  if (back[n - 1] != (float)(n - 1)) {
    printf("round trip lost data\n");
    return 1;
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  printf("ok: 8 launches, %.3f ms between events\n", ms);
  return 0;
}

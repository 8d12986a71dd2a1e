// Error checks as CUDA programs write them, shared by the shim's test programs.
#ifndef GPUSIM_SHIM_TEST_CHECK_MACROS_H
#define GPUSIM_SHIM_TEST_CHECK_MACROS_H

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(x)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_)); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)
#define CHECK_NCCL(x)                                                                       \
  do {                                                                                      \
    ncclResult_t r_ = (x);                                                                  \
    if (r_ != ncclSuccess) {                                                                \
      fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)
#define CHECK_BLAS(x)                                                        \
  do {                                                                       \
    cublasStatus_t s_ = (x);                                                 \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                       \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #x, (int)s_); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

#endif

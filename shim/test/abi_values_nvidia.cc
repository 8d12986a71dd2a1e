// Built against NVIDIA's headers only (/usr/local/cuda/include): the reference values.
#include <cstddef>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "abi-values.h"

#define V(x) (long long)(x),
extern "C" const long long gpusim_abi_nvidia[] = {
#include "abi-values.inc"
};

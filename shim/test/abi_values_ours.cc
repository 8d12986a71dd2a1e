// Built against the shim's stub headers: the values to compare with NVIDIA's.
#include <cstddef>

#include "abi-values.h"
#include "cublasLt.h"
#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "nccl.h"

#define V(x) (long long)(x),
extern "C" const long long gpusim_abi_ours[] = {
#include "abi-values.inc"
};
#undef V
#define V(x) #x,
extern "C" const char* const gpusim_abi_names[] = {
#include "abi-values.inc"
};
extern "C" const int gpusim_abi_count = sizeof gpusim_abi_names / sizeof gpusim_abi_names[0];

// Built against the shim's cuDNN headers: the values to compare with NVIDIA's.
#include <cstddef>

#include "cudnn.h"

#define V(x) (long long)(x),
extern "C" const long long gpusim_cudnn_abi_ours[] = {
#include "cudnn-abi-values.inc"
};
#undef V
#define V(x) #x,
extern "C" const char* const gpusim_cudnn_abi_names[] = {
#include "cudnn-abi-values.inc"
};
extern "C" const int gpusim_cudnn_abi_count = sizeof gpusim_cudnn_abi_names / sizeof gpusim_cudnn_abi_names[0];

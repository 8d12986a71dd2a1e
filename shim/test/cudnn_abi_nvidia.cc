// Built against NVIDIA's cuDNN headers only (/usr/local/cuda/include): the reference values.
#include <cstddef>
#include <cudnn.h>

#define V(x) (long long)(x),
extern "C" const long long gpusim_cudnn_abi_nvidia[] = {
#include "cudnn-abi-values.inc"
};

/* gpusim shim stub: cuda_fp16.h — only the 16-bit storage type host code passes around. */
#ifndef GPUSIM_CUDA_FP16_H
#define GPUSIM_CUDA_FP16_H
typedef struct __half { unsigned short x; } __half;
typedef struct __nv_bfloat16 { unsigned short x; } __nv_bfloat16;
#endif

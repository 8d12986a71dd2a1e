/* gpusim shim stub: cuda_profiler_api.h */
#ifndef GPUSIM_CUDA_PROFILER_API_H
#define GPUSIM_CUDA_PROFILER_API_H
#include "cuda_runtime_api.h"
#ifdef __cplusplus
extern "C" {
#endif
cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);
#ifdef __cplusplus
}
#endif
#endif

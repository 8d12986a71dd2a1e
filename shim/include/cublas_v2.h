/* gpusim shim stub: cublas_v2.h — maps the v2 names the way NVIDIA's header does. */
#ifndef GPUSIM_CUBLAS_V2_H
#define GPUSIM_CUBLAS_V2_H
#include "cublas_api.h"
#define cublasCreate cublasCreate_v2
#define cublasDestroy cublasDestroy_v2
#define cublasGetVersion cublasGetVersion_v2
#define cublasSetWorkspace cublasSetWorkspace_v2
#define cublasSetStream cublasSetStream_v2
#define cublasGetStream cublasGetStream_v2
#define cublasSetPointerMode cublasSetPointerMode_v2
#define cublasGetPointerMode cublasGetPointerMode_v2
#define cublasSgemm cublasSgemm_v2
#define cublasDgemm cublasDgemm_v2
#endif

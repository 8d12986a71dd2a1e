// cuBLAS and cuBLASLt functions the shim exports only so that programs using them still load.
// Each prints one line to stderr the first time and returns CUBLAS_STATUS_NOT_SUPPORTED (the
// legacy void API only warns; its status is what cublasGetError then returns). Arguments are
// ignored, so the functions are defined without parameters — safe with the x86-64 C calling
// convention. This file must not see cublas_v2.h, whose macros rename legacy entry points.
#include "shim.h"

namespace {
constexpr int kNotSupported = 15;  // CUBLAS_STATUS_NOT_SUPPORTED
}

#define GPUSIM_STATUS_STUB(fn)                                                       \
  extern "C" int fn() {                                                              \
    GPUSIM_API(Call);                                                                \
    gpusim::WarnOnce(#fn " is not supported (returns CUBLAS_STATUS_NOT_SUPPORTED)"); \
    return kNotSupported;                                                            \
  }
#define GPUSIM_VOID_STUB(fn) \
  extern "C" void fn() {                                              \
    GPUSIM_API(Call);                                                  \
    gpusim::WarnOnce(#fn " (legacy cuBLAS API) is not supported");     \
  }

#ifdef GPUSIM_CUBLASLT_STUBS
#include "cublaslt-stubs.inc"
#else
#include "cublas-stubs.inc"
// Not a status: the CUDA runtime version cuBLAS was built against.
extern "C" size_t cublasGetCudartVersion() { return 13000; }
#endif

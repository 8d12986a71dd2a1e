// cuDNN functions libcudnn.so.9 exports only so that programs using them still load: the
// legacy (pre-graph) API of cuDNN 9 — tensor/filter/convolution descriptors, convolutions,
// pooling, normalization, RNNs, multi-head attention, CTC loss, fused ops. Each prints one line
// to stderr the first time and returns CUDNN_STATUS_NOT_SUPPORTED. Arguments are ignored, so the
// functions are defined without parameters — safe with the x86-64 C calling convention. This
// file must not see cudnn.h, which declares some of them with their parameters.
#include "shim.h"

namespace {
constexpr int kNotSupported = 3000;  // CUDNN_STATUS_NOT_SUPPORTED
}

#define GPUSIM_CUDNN_STUB(fn)                                                       \
  extern "C" int fn() {                                                             \
    GPUSIM_API(Call);                                                               \
    gpusim::WarnOnce(#fn " is not supported (returns CUDNN_STATUS_NOT_SUPPORTED)"); \
    return kNotSupported;                                                           \
  }

#include "cudnn-stubs.inc"

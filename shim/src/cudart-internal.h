// Helpers shared by the libcudart.so.13 sources only (not exported).
#ifndef GPUSIM_CUDART_INTERNAL_H
#define GPUSIM_CUDART_INTERNAL_H

#include "shim.h"

namespace gpusim {

// Remembers a failure as the thread's last error (cudaGetLastError) and returns it.
cudaError_t Ret(cudaError_t e);
inline bool DeviceValid(int d) { return d >= 0 && d < DeviceCount(); }
// Trace id of the calling thread's per-thread default stream on `device` (created lazily).
int PerThreadStreamId(int device);
int NewStreamId(int device);
void SetCurrentDevice(int device);

}  // namespace gpusim

#define GPUSIM_UNSUPPORTED(fn)                                                 \
  do {                                                                         \
    gpusim::WarnOnce(#fn " is not supported (returns cudaErrorNotSupported)"); \
    return gpusim::Ret(cudaErrorNotSupported);                                 \
  } while (0)

#endif

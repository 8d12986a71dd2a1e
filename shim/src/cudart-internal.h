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
// cudaSetDeviceFlags(cudaDeviceSyncMemops) on `device`: its synchronous copies always block the
// host, device-to-device ones included (runtime.cc).
bool SyncMemops(int device);
// cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) on `device`: waiting threads sleep until an
// interrupt wakes them (a longer wake-up than spinning) (runtime.cc).
bool BlockingSync(int device);
// cudaDeviceReset: the device's limits go back to their defaults and its peer mappings are
// dropped (runtime.cc).
void ResetDeviceLimits(int device);
// Whether either GPU mapped the other's memory (cudaDeviceEnablePeerAccess) (runtime.cc).
bool PeerAccessEnabled(int a, int b);
// cudaMemcpy2D(Async), `ptsz`: the null stream means cudaStreamPerThread (memory.cc).
cudaError_t Memcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                     cudaMemcpyKind kind, cudaStream_t stream, bool async, bool ptsz);
// A copy to (toSymbol) or from a __device__/__constant__ variable's storage, recorded like any
// other copy; `symbol` is the storage at the offset, `other` the program's buffer (memory.cc).
cudaError_t SymbolCopy(void* symbol, void* other, size_t count, bool toSymbol, cudaMemcpyKind kind, cudaStream_t stream,
                       bool async, bool ptsz);

}  // namespace gpusim

#define GPUSIM_UNSUPPORTED(fn)                                                 \
  do {                                                                         \
    GPUSIM_API(Call); /* a call like any other on the program's clock */       \
    gpusim::WarnOnce(#fn " is not supported (returns cudaErrorNotSupported)"); \
    return gpusim::Ret(cudaErrorNotSupported);                                 \
  } while (0)

#endif

// Runtime entry points the shim exports only so that programs using them still load: each
// returns cudaErrorNotSupported and says so once on stderr. Their arguments are ignored, so
// they are defined without parameters (the x86-64 C calling convention makes that safe).
#include "cudart-internal.h"

#define GPUSIM_STUB(fn) \
  extern "C" cudaError_t fn() { GPUSIM_UNSUPPORTED(fn); }

GPUSIM_STUB(cudaGraphCreate)
GPUSIM_STUB(cudaGraphInstantiate)
GPUSIM_STUB(cudaGraphInstantiateWithFlags)
GPUSIM_STUB(cudaGraphExecUpdate)
GPUSIM_STUB(cudaGraphUpload)
GPUSIM_STUB(cudaStreamBeginCaptureToGraph)
GPUSIM_STUB(cudaStreamGetCaptureInfo)
GPUSIM_STUB(cudaIpcGetMemHandle)
GPUSIM_STUB(cudaIpcOpenMemHandle)
GPUSIM_STUB(cudaIpcCloseMemHandle)
GPUSIM_STUB(cudaIpcGetEventHandle)
GPUSIM_STUB(cudaIpcOpenEventHandle)
GPUSIM_STUB(cudaGetDriverEntryPoint)
GPUSIM_STUB(cudaGetDriverEntryPointByVersion)
GPUSIM_STUB(cudaGetFuncBySymbol)
GPUSIM_STUB(cudaMallocArray)
GPUSIM_STUB(cudaMalloc3D)
GPUSIM_STUB(cudaMemcpy3D)
GPUSIM_STUB(cudaMemcpy3DAsync)
GPUSIM_STUB(cudaCreateTextureObject)
GPUSIM_STUB(cudaDestroyTextureObject)
GPUSIM_STUB(cudaCreateSurfaceObject)
GPUSIM_STUB(cudaDestroySurfaceObject)
GPUSIM_STUB(cudaDeviceGetDefaultMemPool)
GPUSIM_STUB(cudaDeviceGetMemPool)
GPUSIM_STUB(cudaMemPoolCreate)
GPUSIM_STUB(cudaMemPoolSetAttribute)
GPUSIM_STUB(cudaMemPoolGetAttribute)
GPUSIM_STUB(cudaMemPoolTrimTo)
GPUSIM_STUB(cudaMallocFromPoolAsync)
GPUSIM_STUB(cudaImportExternalMemory)
GPUSIM_STUB(cudaImportExternalSemaphore)
GPUSIM_STUB(cudaLaunchCooperativeKernelMultiDevice)

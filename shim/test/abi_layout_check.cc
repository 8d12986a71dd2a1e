// Compile-time check: the shim's runtime structs and enums have NVIDIA's layout and values.
// NVIDIA's definitions are pulled into namespace nv by absolute path so both sets coexist.
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

namespace nv {
#include GPUSIM_NV_DRIVER_TYPES
#include GPUSIM_NV_LIBRARY_TYPES
}  // namespace nv

#include "cuda_runtime_api.h"
#include "library_types.h"

#define SAME_OFFSET(T, f) static_assert(offsetof(nv::T, f) == offsetof(::T, f), #T "::" #f " offset differs");
#define SAME_VALUE(v) static_assert((long long)nv::v == (long long)::v, #v " differs");

static_assert(sizeof(nv::cudaDeviceProp) == sizeof(::cudaDeviceProp), "cudaDeviceProp size differs");
#define GPUSIM_PROP_FIELD(f) SAME_OFFSET(cudaDeviceProp, f)
#include "abi-prop-fields.inc"

static_assert(sizeof(nv::cudaFuncAttributes) == sizeof(::cudaFuncAttributes), "cudaFuncAttributes size");
SAME_OFFSET(cudaFuncAttributes, maxDynamicSharedSizeBytes)
SAME_OFFSET(cudaFuncAttributes, nonPortableClusterSizeAllowed)
static_assert(sizeof(nv::cudaPointerAttributes) == sizeof(::cudaPointerAttributes), "cudaPointerAttributes size");
static_assert(sizeof(nv::dim3) == sizeof(::dim3), "dim3 size");
static_assert(sizeof(nv::cudaUUID_t) == sizeof(::cudaUUID_t), "uuid size");

#define GPUSIM_ERR(e) SAME_VALUE(e)
#include "../src/cuda-errors.inc"

SAME_VALUE(cudaMemcpyDefault)
SAME_VALUE(cudaMemoryTypeManaged)
SAME_VALUE(cudaDevAttrMultiProcessorCount)
SAME_VALUE(cudaDevAttrComputeCapabilityMajor)
SAME_VALUE(cudaDevAttrMaxSharedMemoryPerBlockOptin)
SAME_VALUE(cudaDevAttrL2CacheSize)
SAME_VALUE(cudaDevAttrHostNumaMultinodeIpcSupported)
SAME_VALUE(cudaFuncAttributeMaxDynamicSharedMemorySize)
SAME_VALUE(cudaLimitPersistingL2CacheSize)
SAME_VALUE(cudaStreamCaptureStatusInvalidated)
SAME_VALUE(CUDA_R_16BF)
SAME_VALUE(CUDA_R_8F_E5M2)

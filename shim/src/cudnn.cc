// cuDNN (libcudnn.so.9): handles, versions, errors and the backend (graph) API. Descriptors
// live in cudnn-descriptors.cc; the attention graphs the shim can execute, and what an
// execution records, in cudnn-sdpa.cc. Any other graph is refused when an engine is asked for
// it, with CUDNN_STATUS_NOT_SUPPORTED and a message (cudnnGetLastErrorString, and once on
// stderr). Without recording or live mode every call still keeps its state.
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <unordered_set>

#include "cudnn-internal.h"
#include "shim.h"

using namespace gpusim;
using namespace gpusim::cudnn;

namespace {

std::mutex g_mu;  // handles and the callback

std::unordered_set<cudnnContext*>& Handles() {
  static auto* s = new std::unordered_set<cudnnContext*>;
  return *s;
}

struct Callback {
  unsigned mask = 0;
  void* udata = nullptr;
  cudnnCallback_t fn = nullptr;
};
Callback g_callback;

thread_local std::string t_lastError;

// Every failing entry point ends here, outside any lock of the shim: the error goes to the
// callback the program registered (cudnnSetCallback), as cuDNN reports errors.
cudnnStatus_t Report(cudnnStatus_t status, cudnnHandle_t handle = nullptr) {
  if (status == CUDNN_STATUS_SUCCESS) return status;
  Callback cb;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    cb = g_callback;
  }
  if (!cb.fn || !(cb.mask & CUDNN_SEV_ERROR_EN)) return status;
  cudnnDebug_t dbg;
  memset(&dbg, 0, sizeof dbg);
  timeval tv;
  gettimeofday(&tv, nullptr);
  dbg.cudnn_version = CUDNN_VERSION;
  dbg.cudnnStatus = status;
  dbg.time_sec = (unsigned)tv.tv_sec;
  dbg.time_usec = (unsigned)tv.tv_usec;
  dbg.handle = handle;
  dbg.stream = handle && LiveHandle(handle) ? handle->stream : nullptr;
  dbg.pid = (unsigned long long)getpid();
  dbg.tid = (unsigned long long)syscall(SYS_gettid);
  dbg.cudaDeviceId = CurrentDevice();
  std::string msg = t_lastError;  // the callback may call cuDNN and overwrite it
  cb.fn(CUDNN_SEV_ERROR, cb.udata, &dbg, msg.c_str());
  return status;
}

cudnnStatus_t CheckHandle(cudnnHandle_t h) {
  if (!h) return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "null cuDNN handle");
  if (!LiveHandle(h)) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live cuDNN handle (destroyed, or never created)");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

namespace gpusim {
namespace cudnn {

cudnnStatus_t Fail(cudnnStatus_t status, const std::string& message) {
  t_lastError = std::string(StatusName(status)) + ": " + message;
  return status;
}

cudnnStatus_t NotEmulated(cudnnStatus_t status, const std::string& message) {
  WarnOnce(message.c_str());
  return Fail(status, message);
}

bool LiveHandle(cudnnHandle_t h) {
  std::lock_guard<std::mutex> lock(g_mu);
  return h && Handles().count(h);
}

const char* StatusName(cudnnStatus_t status) {
  switch (status) {
#define NAME(s) \
  case s: return #s;
    NAME(CUDNN_STATUS_SUCCESS)
    NAME(CUDNN_STATUS_NOT_INITIALIZED)
    NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    NAME(CUDNN_STATUS_DEPRECATED)
    NAME(CUDNN_STATUS_LICENSE_ERROR)
    NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    NAME(CUDNN_STATUS_BAD_PARAM)
    NAME(CUDNN_STATUS_INVALID_VALUE)
    NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    NAME(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    NAME(CUDNN_STATUS_INTERNAL_ERROR)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    NAME(CUDNN_STATUS_EXECUTION_FAILED)
    NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
    NAME(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
    NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
    NAME(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef NAME
  }
  return "CUDNN_STATUS_UNKNOWN";
}

}  // namespace cudnn
}  // namespace gpusim

extern "C" {

size_t cudnnGetVersion(void) {
  GPUSIM_API(Call);
  return CUDNN_VERSION;
}
size_t cudnnGetMaxDeviceVersion(void) {
  GPUSIM_API(Call);
  return CUDNN_MAX_DEVICE_VERSION;
}
// The CUDA runtime this cuDNN was built for: the shim's (CUDA 13.0).
size_t cudnnGetCudartVersion(void) {
  GPUSIM_API(Call);
  return 13000;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  GPUSIM_API(Call);
  return StatusName(status);
}

void cudnnGetLastErrorString(char* message, size_t max_size) {
  GPUSIM_API(Call);
  if (!message || max_size == 0) return;
  size_t n = std::min(max_size - 1, t_lastError.size());
  memcpy(message, t_lastError.data(), n);
  message[n] = '\0';
}

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  GPUSIM_API(Call);
  if (!value) return Report(Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetProperty: null value"));
  switch (type) {
    case MAJOR_VERSION: *value = CUDNN_MAJOR; return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUDNN_MINOR; return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUDNN_PATCHLEVEL; return CUDNN_STATUS_SUCCESS;
  }
  return Report(Fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty: unknown property " + std::to_string((int)type)));
}

// The sub-libraries of cuDNN 9 check their versions against each other; here they are one.
cudnnStatus_t cudnnGraphVersionCheck(void) {
  GPUSIM_API(Call);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnOpsVersionCheck(void) {
  GPUSIM_API(Call);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCnnVersionCheck(void) {
  GPUSIM_API(Call);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnAdvVersionCheck(void) {
  GPUSIM_API(Call);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  GPUSIM_API(Call);
  if (!handle) return Report(Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: null handle pointer"));
  int device = 0;
  cudaGetDevice(&device);
  auto* h = new cudnnContext{device, nullptr};
  std::lock_guard<std::mutex> lock(g_mu);
  Handles().insert(h);
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  GPUSIM_API(Call);
  cudnnStatus_t s = CheckHandle(handle);
  if (s != CUDNN_STATUS_SUCCESS) return Report(s);
  std::lock_guard<std::mutex> lock(g_mu);
  Handles().erase(handle);
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  GPUSIM_API(Call);
  cudnnStatus_t s = CheckHandle(handle);
  if (s != CUDNN_STATUS_SUCCESS) return Report(s);
  StreamRef ref;
  if (!ResolveStream(stream, &ref))
    return Report(Fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: not a live CUDA stream"), handle);
  bool defaultStream = !stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
  if (!defaultStream && ref.device != handle->device)
    return Report(Fail(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH,
                       "cudnnSetStream: the stream is on device " + std::to_string(ref.device) +
                           ", the handle was created on device " + std::to_string(handle->device)),
                  handle);
  std::lock_guard<std::mutex> lock(g_mu);
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  GPUSIM_API(Call);
  cudnnStatus_t s = CheckHandle(handle);
  if (s != CUDNN_STATUS_SUCCESS) return Report(s);
  if (!stream) return Report(Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetStream: null stream pointer"), handle);
  std::lock_guard<std::mutex> lock(g_mu);
  *stream = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}

// Nothing runs asynchronously inside the emulated library: no kernel can have failed.
cudnnStatus_t cudnnQueryRuntimeError(cudnnHandle_t handle, cudnnStatus_t* rstatus, cudnnErrQueryMode_t mode,
                                     cudnnRuntimeTag_t* tag) {
  GPUSIM_API(Call);
  cudnnStatus_t s = CheckHandle(handle);
  if (s != CUDNN_STATUS_SUCCESS) return Report(s);
  if (!rstatus) return Report(Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnQueryRuntimeError: null status"));
  if ((unsigned)mode > CUDNN_ERRQUERY_BLOCKING)
    return Report(Fail(CUDNN_STATUS_BAD_PARAM, "cudnnQueryRuntimeError: unknown mode"));
  *rstatus = CUDNN_STATUS_SUCCESS;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetCallback(unsigned mask, void* udata, cudnnCallback_t fptr) {
  GPUSIM_API(Call);
  std::lock_guard<std::mutex> lock(g_mu);
  g_callback = Callback{mask, udata, fptr};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetCallback(unsigned* mask, void** udata, cudnnCallback_t* fptr) {
  GPUSIM_API(Call);
  if (!mask || !udata || !fptr)
    return Report(Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetCallback: null output"));
  std::lock_guard<std::mutex> lock(g_mu);
  *mask = g_callback.mask;
  *udata = g_callback.udata;
  *fptr = g_callback.fn;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* descriptor) {
  GPUSIM_API(Call);
  return Report(CreateDescriptor(type, descriptor));
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  GPUSIM_API(Call);
  return Report(DestroyDescriptor(descriptor));
}

// Deprecated in cuDNN 9 (descriptors in caller-allocated memory).
cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t) {
  GPUSIM_API(Call);
  return Report(NotEmulated(CUDNN_STATUS_NOT_SUPPORTED,
                            "cudnnBackendInitialize (deprecated) is not emulated: use cudnnBackendCreateDescriptor"));
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  GPUSIM_API(Call);
  return Report(Finalize(descriptor));
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count, const void* values) {
  GPUSIM_API(Call);
  return Report(SetAttribute(descriptor, name, type, count, values));
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested, int64_t* count,
                                       void* values) {
  GPUSIM_API(Call);
  return Report(GetAttribute(descriptor, name, type, requested, count, values));
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variantPack) {
  GPUSIM_API(CudnnExecute);
  cudnnStatus_t s = CheckHandle(handle);
  if (s != CUDNN_STATUS_SUCCESS) return Report(s);
  Launch launch;
  s = PrepareLaunch(plan, variantPack, &launch);
  if (s == CUDNN_STATUS_SUCCESS) s = ExecuteAttention(handle, launch);
  return Report(s, handle);
}

// The shim has no CUDA graphs (cudaGraph* returns cudaErrorNotSupported), and its engine does
// not advertise CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API.
cudnnStatus_t cudnnBackendPopulateCudaGraph(cudnnHandle_t handle, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t,
                                            cudaGraph_t) {
  GPUSIM_API(Call);
  return Report(NotEmulated(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API,
                            "cudnnBackendPopulateCudaGraph is not emulated (no CUDA graphs in the shim)"),
                handle);
}

cudnnStatus_t cudnnBackendUpdateCudaGraph(cudnnHandle_t handle, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t,
                                          cudaGraph_t) {
  GPUSIM_API(Call);
  return Report(NotEmulated(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API,
                            "cudnnBackendUpdateCudaGraph is not emulated (no CUDA graphs in the shim)"),
                handle);
}

}  // extern "C"

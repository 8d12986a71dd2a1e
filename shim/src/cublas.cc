// cuBLAS (libcublas.so.13): handles and GEMMs. A GEMM is recorded as a kernel with its shape,
// data type and FLOPs; no arithmetic is performed (emulation mode).
#include <mutex>
#include <unordered_set>

#include "cublas_v2.h"
#include "gemm-record.h"
#include "shim.h"

using namespace gpusim;

struct cublasContext {
  int device;
  cudaStream_t stream;
  cublasMath_t math;
  cublasPointerMode_t pointerMode;
};

namespace {

std::mutex g_mu;
std::unordered_set<cublasContext*>& Handles() {
  static auto* s = new std::unordered_set<cublasContext*>;
  return *s;
}

bool Live(cublasContext* h) {
  std::lock_guard<std::mutex> lock(g_mu);
  return h && Handles().count(h);
}

cublasStatus_t Gemm(cublasHandle_t h, const char* name, cublasOperation_t ta, cublasOperation_t tb, long long m,
                    long long n, long long k, long long lda, long long ldb, long long ldc, long long batch,
                    cudaDataType atype, cublasComputeType_t compute = CUBLAS_COMPUTE_32F) {
  if (!Live(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((unsigned)ta > CUBLAS_OP_C || (unsigned)tb > CUBLAS_OP_C) return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  long long rowsA = ta == CUBLAS_OP_N ? m : k, rowsB = tb == CUBLAS_OP_N ? k : n;
  if (lda < (rowsA > 1 ? rowsA : 1) || ldb < (rowsB > 1 ? rowsB : 1) || ldc < (m > 1 ? m : 1))
    return CUBLAS_STATUS_INVALID_VALUE;
  int elt;
  const char* dtype = GemmDtype(atype, &elt);
  if (!dtype) return CUBLAS_STATUS_NOT_SUPPORTED;
  // FP32 data: the math the compute type and the handle's math mode select (gemm-record.h).
  if (atype == CUDA_R_32F) dtype = Fp32GemmMath(compute, h->math);
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;  // nothing launched
  StreamRef s;
  if (!ResolveStream(h->stream, &s)) return CUBLAS_STATUS_EXECUTION_FAILED;
  RecordGemm(s, name, m, n, k, batch, dtype, elt, ta != CUBLAS_OP_N, tb != CUBLAS_OP_N);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  GPUSIM_API(Call);
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  int dev = 0;
  cudaGetDevice(&dev);
  cublasContext* h = new cublasContext{dev, nullptr, CUBLAS_DEFAULT_MATH, CUBLAS_POINTER_MODE_HOST};
  std::lock_guard<std::mutex> lock(g_mu);
  Handles().insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  GPUSIM_API(Call);
  std::lock_guard<std::mutex> lock(g_mu);
  if (!handle || !Handles().erase(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  GPUSIM_API(Call);
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!version) return CUBLAS_STATUS_INVALID_VALUE;
  *version = 130000;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  GPUSIM_API(Call);
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = streamId;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* streamId) {
  GPUSIM_API(Call);
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!streamId) return CUBLAS_STATUS_INVALID_VALUE;
  *streamId = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void*, size_t) {
  GPUSIM_API(Call);
  return Live(handle) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  GPUSIM_API(Call);
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  GPUSIM_API(Call);
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  GPUSIM_API(Call);
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((unsigned)mode > CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointerMode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  GPUSIM_API(Call);
  if (!Live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointerMode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  GPUSIM_API(Call);
  return StatusName(status);
}

const char* cublasGetStatusString(cublasStatus_t status) {
  GPUSIM_API(Call);
  return cublasGetStatusName(status);
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float*, const float*, int lda, const float*, int ldb, const float*, float*,
                              int ldc) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasSgemm", transa, transb, m, n, k, lda, ldb, ldc, 1, CUDA_R_32F);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const double*, const double*, int lda, const double*, int ldb, const double*,
                              double*, int ldc) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasDgemm", transa, transb, m, n, k, lda, ldb, ldc, 1, CUDA_R_64F);
}

cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const __half*, const __half*, int lda, const __half*, int ldb, const __half*, __half*,
                           int ldc) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasHgemm", transa, transb, m, n, k, lda, ldb, ldc, 1, CUDA_R_16F);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void*, const void*, cudaDataType Atype, int lda, const void*, cudaDataType,
                            int ldb, const void*, void*, cudaDataType, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasGemmEx", transa, transb, m, n, k, lda, ldb, ldc, 1, Atype, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void*, const void*, cudaDataType Atype, int lda,
                                          long long int, const void*, cudaDataType, int ldb, long long int, const void*,
                                          void*, cudaDataType, int ldc, long long int, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasGemmStridedBatchedEx", transa, transb, m, n, k, lda, ldb, ldc, batchCount, Atype,
              computeType);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float*, const float*, int lda, long long int,
                                         const float*, int ldb, long long int, const float*, float*, int ldc,
                                         long long int, int batchCount) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasSgemmStridedBatched", transa, transb, m, n, k, lda, ldb, ldc, batchCount, CUDA_R_32F);
}

cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const __half*, const __half*, int lda, long long int,
                                         const __half*, int ldb, long long int, const __half*, __half*, int ldc,
                                         long long int, int batchCount) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasHgemmStridedBatched", transa, transb, m, n, k, lda, ldb, ldc, batchCount, CUDA_R_16F);
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float*, const float* const[], int lda, const float* const[],
                                  int ldb, const float*, float* const[], int ldc, int batchCount) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasSgemmBatched", transa, transb, m, n, k, lda, ldb, ldc, batchCount, CUDA_R_32F);
}

cublasStatus_t cublasHgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const __half*, const __half* const[], int lda, const __half* const[],
                                  int ldb, const __half*, __half* const[], int ldc, int batchCount) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasHgemmBatched", transa, transb, m, n, k, lda, ldb, ldc, batchCount, CUDA_R_16F);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void*, const void* const[], cudaDataType Atype, int lda,
                                   const void* const[], cudaDataType, int ldb, const void*, void* const[], cudaDataType,
                                   int ldc, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasGemmBatchedEx", transa, transb, m, n, k, lda, ldb, ldc, batchCount, Atype, computeType);
}

cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                                 int64_t n, int64_t k, const float*, const float*, int64_t lda, const float*,
                                 int64_t ldb, const float*, float*, int64_t ldc) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasSgemm", transa, transb, m, n, k, lda, ldb, ldc, 1, CUDA_R_32F);
}

cublasStatus_t cublasHgemm_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                              int64_t n, int64_t k, const __half*, const __half*, int64_t lda, const __half*,
                              int64_t ldb, const __half*, __half*, int64_t ldc) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasHgemm", transa, transb, m, n, k, lda, ldb, ldc, 1, CUDA_R_16F);
}

cublasStatus_t cublasGemmEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                               int64_t n, int64_t k, const void*, const void*, cudaDataType Atype, int64_t lda,
                               const void*, cudaDataType, int64_t ldb, const void*, void*, cudaDataType, int64_t ldc,
                               cublasComputeType_t computeType, cublasGemmAlgo_t) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasGemmEx", transa, transb, m, n, k, lda, ldb, ldc, 1, Atype, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                             int64_t m, int64_t n, int64_t k, const void*, const void*,
                                             cudaDataType Atype, int64_t lda, long long int, const void*, cudaDataType,
                                             int64_t ldb, long long int, const void*, void*, cudaDataType, int64_t ldc,
                                             long long int, int64_t batchCount, cublasComputeType_t computeType,
                                             cublasGemmAlgo_t) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasGemmStridedBatchedEx", transa, transb, m, n, k, lda, ldb, ldc, batchCount, Atype,
              computeType);
}

cublasStatus_t cublasGemmBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                      int64_t m, int64_t n, int64_t k, const void*, const void* const[],
                                      cudaDataType Atype, int64_t lda, const void* const[], cudaDataType, int64_t ldb,
                                      const void*, void* const[], cudaDataType, int64_t ldc, int64_t batchCount,
                                      cublasComputeType_t computeType, cublasGemmAlgo_t) {
  GPUSIM_API(CublasGemm);
  return Gemm(handle, "cublasGemmBatchedEx", transa, transb, m, n, k, lda, ldb, ldc, batchCount, Atype, computeType);
}

}  // extern "C"

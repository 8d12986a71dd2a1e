// Shared by cublas.cc and cublaslt.cc: how a GEMM becomes a "kernel" trace op.
#ifndef GPUSIM_GEMM_RECORD_H
#define GPUSIM_GEMM_RECORD_H

#include <charconv>
#include <cstring>

#include "library_types.h"
#include "shim.h"

namespace gpusim {

// Trace dtype name and element size of a cuBLAS data type; null for types the shim does not
// model (complex, 32-bit unsigned, ...).
inline const char* GemmDtype(cudaDataType t, int* bytes) {
  switch (t) {
    case CUDA_R_32F: *bytes = 4; return "f32";
    case CUDA_R_64F: *bytes = 8; return "f64";
    case CUDA_R_16F: *bytes = 2; return "f16";
    case CUDA_R_16BF: *bytes = 2; return "bf16";
    case CUDA_R_8I: *bytes = 1; return "i8";
    case CUDA_R_8U: *bytes = 1; return "u8";
    case CUDA_R_32I: *bytes = 4; return "i32";
    case CUDA_R_8F_E4M3: *bytes = 1; return "f8e4m3";
    case CUDA_R_8F_E5M2: *bytes = 1; return "f8e5m2";
    default: return nullptr;
  }
}

// One GEMM launch: D[m x n] = op(A)[m x k] * op(B)[k x n], `batch` times.
inline void RecordGemm(const StreamRef& s, const char* name, long long m, long long n, long long k, long long batch,
                       const char* dtype, int eltBytes, bool transA, bool transB) {
  if (!Recording()) return;
  // ,"gemm":{"m":M,"n":N,"k":K,"batch":B,"dtype":"T"} without printf (this is a hot path).
  char frag[160];
  char* p = frag;
  auto put = [&p](const char* s) {
    size_t n = strlen(s);
    memcpy(p, s, n);
    p += n;
  };
  put(",\"gemm\":{\"m\":");
  p = std::to_chars(p, frag + sizeof frag, m).ptr;
  put(",\"n\":");
  p = std::to_chars(p, frag + sizeof frag, n).ptr;
  put(",\"k\":");
  p = std::to_chars(p, frag + sizeof frag, k).ptr;
  put(",\"batch\":");
  p = std::to_chars(p, frag + sizeof frag, batch).ptr;
  put(",\"dtype\":\"");
  put(dtype);
  put("\"}");
  size_t len = (size_t)(p - frag);
  double flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
  unsigned long long bytes = (unsigned long long)((m * k + k * n + m * n) * batch) * (unsigned)eltBytes;
  Line(s.device, "kernel")
      .Str("name", name)
      .Int("stream", s.id)
      .Raw(frag, len)
      .Num("flops", flops)
      .U64("mem_bytes", bytes)
      .Str("trans", transA ? (transB ? "TT" : "TN") : (transB ? "NT" : "NN"))
      .Commit();
}

inline const char* StatusName(int status) {
  switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

}  // namespace gpusim

#endif

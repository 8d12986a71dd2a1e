// Shared by cublas.cc and cublaslt.cc: how a GEMM becomes a "kernel" trace op.
#ifndef GPUSIM_GEMM_RECORD_H
#define GPUSIM_GEMM_RECORD_H

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "cublas_api.h"
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

// The arithmetic a GEMM on FP32 matrices runs in, which is what its cost depends on (cuBLAS
// documentation, cublasComputeType_t and cublasMath_t): TF32 tensor cores for
// CUBLAS_COMPUTE_32F_FAST_TF32, and for CUBLAS_COMPUTE_32F (the legacy single-precision
// routines included) on a handle in CUBLAS_TF32_TENSOR_OP_MATH; FP16 / BF16 tensor cores for
// CUBLAS_COMPUTE_32F_FAST_16F / _FAST_16BF, and FP16 for the deprecated CUBLAS_TENSOR_OP_MATH
// ("single precision GEMM routines use CUBLAS_COMPUTE_32F_FAST_16F"); plain FP32 otherwise
// (default or pedantic math, CUBLAS_COMPUTE_32F_PEDANTIC). NVIDIA_TF32_OVERRIDE=0 disables TF32
// process-wide, as in NVIDIA's libraries. mathMode < 0: no handle math mode (cuBLASLt).
inline const char* Fp32GemmMath(int compute, int mathMode) {
  static const bool noTf32 = [] {
    const char* v = getenv("NVIDIA_TF32_OVERRIDE");
    return v && strcmp(v, "0") == 0;
  }();
  switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_TF32: return noTf32 ? "f32" : "tf32";
    case CUBLAS_COMPUTE_32F_FAST_16F: return "f16";
    case CUBLAS_COMPUTE_32F_FAST_16BF: return "bf16";
    case CUBLAS_COMPUTE_32F: break;
    default: return "f32";
  }
  if (mathMode < 0) return "f32";
  int mode = mathMode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  if (mode == CUBLAS_TF32_TENSOR_OP_MATH) return noTf32 ? "f32" : "tf32";
  if (mode == CUBLAS_TENSOR_OP_MATH) return "f16";
  return "f32";
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

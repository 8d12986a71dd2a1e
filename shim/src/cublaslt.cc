// cuBLASLt (libcublasLt.so.13): descriptors, heuristics and matmul. Descriptors keep their
// state inside NVIDIA's opaque storage, so programs that embed them (…Init variants, stack
// copies) see the same sizes as with the real library.
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_set>

#include "cublasLt.h"
#include "gemm-record.h"
#include "shim.h"

using namespace gpusim;

struct cublasLtContext {
  int device;
};

namespace {

constexpr uint32_t kDescMagic = 0x6c74644d;    // "Mdtl"
constexpr uint32_t kLayoutMagic = 0x6c74794c;  // "Lytl"
constexpr uint32_t kPrefMagic = 0x6c746650;    // "Pftl"

struct Desc {
  uint32_t magic;
  int32_t compute;
  int32_t scale;
  int32_t transa;
  int32_t transb;
};
static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t), "descriptor state must fit NVIDIA's size");

struct Layout {
  uint32_t magic;
  int32_t type;
  uint64_t rows;
  uint64_t cols;
  int64_t ld;
  int32_t order;
  int32_t batch;
  int64_t stride;
};
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout state must fit NVIDIA's size");

struct Pref {
  uint32_t magic;
  uint64_t maxWorkspace;
};
static_assert(sizeof(Pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "preference state must fit");

std::mutex g_mu;
std::unordered_set<cublasLtContext*>& Handles() {
  static auto* s = new std::unordered_set<cublasLtContext*>;
  return *s;
}

bool Live(cublasLtContext* h) {
  std::lock_guard<std::mutex> lock(g_mu);
  return h && Handles().count(h);
}

Desc* D(cublasLtMatmulDesc_t d) { return d && ((Desc*)d)->magic == kDescMagic ? (Desc*)d : nullptr; }
Layout* L(cublasLtMatrixLayout_t l) { return l && ((Layout*)l)->magic == kLayoutMagic ? (Layout*)l : nullptr; }
Pref* P(cublasLtMatmulPreference_t p) { return p && ((Pref*)p)->magic == kPrefMagic ? (Pref*)p : nullptr; }

// Copies a scalar attribute value after checking the caller passed exactly its size.
// Reports a scalar attribute the way cuBLASLt does: sizeInBytes 0 asks for the size only.
template <class T>
cublasStatus_t Give(const T& field, void* buf, size_t size, size_t* written) {
  if (size == 0) {
    if (!written) return CUBLAS_STATUS_INVALID_VALUE;
    *written = sizeof(T);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || size < sizeof(T)) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, &field, sizeof(T));
  if (written) *written = sizeof(T);
  return CUBLAS_STATUS_SUCCESS;
}

template <class T>
bool Take(T* field, const void* buf, size_t size) {
  if (!buf || size != sizeof(T)) return false;
  memcpy(field, buf, sizeof(T));
  return true;
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  GPUSIM_API(Call);
  if (!lightHandle) return CUBLAS_STATUS_INVALID_VALUE;
  int dev = 0;
  cudaGetDevice(&dev);
  cublasLtContext* h = new cublasLtContext{dev};
  std::lock_guard<std::mutex> lock(g_mu);
  Handles().insert(h);
  *lightHandle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  GPUSIM_API(Call);
  std::lock_guard<std::mutex> lock(g_mu);
  if (!lightHandle || !Handles().erase(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) {
  GPUSIM_API(Call);
  return 130000;
}

const char* cublasLtGetStatusName(cublasStatus_t status) {
  GPUSIM_API(Call);
  return StatusName(status);
}
const char* cublasLtGetStatusString(cublasStatus_t status) {
  GPUSIM_API(Call);
  return StatusName(status);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  GPUSIM_API(Call);
  if (!matLayout) return CUBLAS_STATUS_INVALID_VALUE;
  auto* o = new cublasLtMatrixLayoutOpaque_t();
  new (o) Layout{kLayoutMagic, (int32_t)type, rows, cols, ld, CUBLASLT_ORDER_COL, 1, 0};
  *matLayout = o;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size, cudaDataType type,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  GPUSIM_API(Call);
  if (!matLayout || size < sizeof(cublasLtMatrixLayoutOpaque_t)) return CUBLAS_STATUS_INVALID_VALUE;
  new (matLayout) Layout{kLayoutMagic, (int32_t)type, rows, cols, ld, CUBLASLT_ORDER_COL, 1, 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  GPUSIM_API(Call);
  Layout* l = L(matLayout);
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: return Give(l->type, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_ORDER: return Give(l->order, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_ROWS: return Give(l->rows, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_COLS: return Give(l->cols, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_LD: return Give(l->ld, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: return Give(l->batch, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return Give(l->stride, buf, sizeInBytes, sizeWritten);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  GPUSIM_API(Call);
  if (!L(matLayout)) return CUBLAS_STATUS_INVALID_VALUE;
  ((Layout*)matLayout)->magic = 0;
  delete matLayout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  GPUSIM_API(Call);
  Layout* l = L(matLayout);
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  bool ok = true;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE: ok = Take(&l->type, buf, sizeInBytes); break;
    case CUBLASLT_MATRIX_LAYOUT_ORDER: ok = Take(&l->order, buf, sizeInBytes); break;
    case CUBLASLT_MATRIX_LAYOUT_ROWS: ok = Take(&l->rows, buf, sizeInBytes); break;
    case CUBLASLT_MATRIX_LAYOUT_COLS: ok = Take(&l->cols, buf, sizeInBytes); break;
    case CUBLASLT_MATRIX_LAYOUT_LD: ok = Take(&l->ld, buf, sizeInBytes); break;
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: ok = Take(&l->batch, buf, sizeInBytes); break;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: ok = Take(&l->stride, buf, sizeInBytes); break;
    default: ok = buf != nullptr; break;  // other attributes do not change the recorded shape
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType scaleType) {
  GPUSIM_API(Call);
  if (!matmulDesc) return CUBLAS_STATUS_INVALID_VALUE;
  auto* o = new cublasLtMatmulDescOpaque_t();
  new (o) Desc{kDescMagic, (int32_t)computeType, (int32_t)scaleType, CUBLAS_OP_N, CUBLAS_OP_N};
  *matmulDesc = o;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                               cublasComputeType_t computeType, cudaDataType scaleType) {
  GPUSIM_API(Call);
  if (!matmulDesc || size < sizeof(cublasLtMatmulDescOpaque_t)) return CUBLAS_STATUS_INVALID_VALUE;
  new (matmulDesc) Desc{kDescMagic, (int32_t)computeType, (int32_t)scaleType, CUBLAS_OP_N, CUBLAS_OP_N};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  GPUSIM_API(Call);
  Desc* d = D(matmulDesc);
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: return Give(d->compute, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: return Give(d->scale, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_TRANSA: return Give(d->transa, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_MATMUL_DESC_TRANSB: return Give(d->transb, buf, sizeInBytes, sizeWritten);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  GPUSIM_API(Call);
  if (!D(matmulDesc)) return CUBLAS_STATUS_INVALID_VALUE;
  ((Desc*)matmulDesc)->magic = 0;
  delete matmulDesc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes) {
  GPUSIM_API(Call);
  Desc* d = D(matmulDesc);
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  bool ok = true;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: ok = Take(&d->compute, buf, sizeInBytes); break;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: ok = Take(&d->scale, buf, sizeInBytes); break;
    case CUBLASLT_MATMUL_DESC_TRANSA: ok = Take(&d->transa, buf, sizeInBytes); break;
    case CUBLASLT_MATMUL_DESC_TRANSB: ok = Take(&d->transb, buf, sizeInBytes); break;
    default: ok = buf != nullptr; break;  // epilogues, pointers, scales: no effect on the shape
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  GPUSIM_API(Call);
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  auto* o = new cublasLtMatmulPreferenceOpaque_t();
  new (o) Pref{kPrefMagic, 0};
  *pref = o;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  GPUSIM_API(Call);
  if (!P(pref)) return CUBLAS_STATUS_INVALID_VALUE;
  ((Pref*)pref)->magic = 0;
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes) {
  GPUSIM_API(Call);
  Pref* p = P(pref);
  if (!p || !buf) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
    return Take(&p->maxWorkspace, buf, sizeInBytes) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount) {
  GPUSIM_API(Call);
  if (!Live(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!D(operationDesc) || !L(Adesc) || !L(Bdesc) || !L(Cdesc) || !L(Ddesc) || !P(preference))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (requestedAlgoCount < 1 || !heuristicResultsArray || !returnAlgoCount) return CUBLAS_STATUS_INVALID_VALUE;
  int elt;
  if (!GemmDtype((cudaDataType)L(Adesc)->type, &elt)) return CUBLAS_STATUS_NOT_SUPPORTED;
  // One algorithm that needs no workspace fits every preference.
  memset(&heuristicResultsArray[0], 0, sizeof heuristicResultsArray[0]);
  heuristicResultsArray[0].algo.data[0] = 0x67707573696d;  // "gpusim": recognisable in dumps
  heuristicResultsArray[0].workspaceSize = 0;
  heuristicResultsArray[0].state = CUBLAS_STATUS_SUCCESS;
  heuristicResultsArray[0].wavesCount = 1.0f;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void*, const void*,
                              cublasLtMatrixLayout_t Adesc, const void*, cublasLtMatrixLayout_t Bdesc, const void*,
                              const void*, cublasLtMatrixLayout_t Cdesc, void*, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t stream) {
  GPUSIM_API(CublasLtMatmul);
  if (!Live(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  Desc* d = D(computeDesc);
  Layout *a = L(Adesc), *b = L(Bdesc), *c = L(Cdesc), *out = L(Ddesc);
  if (!d || !a || !b || !c) return CUBLAS_STATUS_INVALID_VALUE;
  if (!out) out = c;  // D may alias C's layout
  bool ta = d->transa != CUBLAS_OP_N, tb = d->transb != CUBLAS_OP_N;
  uint64_t m = out->rows, n = out->cols;
  uint64_t k = ta ? a->rows : a->cols;
  uint64_t kb = tb ? b->cols : b->rows;
  uint64_t am = ta ? a->cols : a->rows, bn = tb ? b->rows : b->cols;
  if (k != kb || am != m || bn != n) return CUBLAS_STATUS_INVALID_VALUE;
  int elt;
  const char* dtype = GemmDtype((cudaDataType)a->type, &elt);
  if (!dtype) return CUBLAS_STATUS_NOT_SUPPORTED;
  // FP32 data: the descriptor's compute type says which math runs (gemm-record.h).
  if (a->type == CUDA_R_32F) dtype = Fp32GemmMath(d->compute, -1);
  StreamRef s;
  if (!ResolveStream(stream, &s)) return CUBLAS_STATUS_EXECUTION_FAILED;
  RecordGemm(s, "cublasLtMatmul", (long long)m, (long long)n, (long long)k, out->batch > 0 ? out->batch : 1, dtype, elt,
             ta, tb);
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"

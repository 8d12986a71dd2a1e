// cuDNN backend descriptors: an opaque handle table with typed attributes. The descriptors an
// attention graph is built from (tensors, matmul / pointwise / reduction / reshape / RNG / SDPA
// operations, operation graphs, heuristics, engines, engine configs, knob choices, execution
// plans, variant packs) have their attributes' types and counts checked as cuDNN documents
// them and are validated when finalized. Other descriptor kinds store whatever is set, so that
// a graph using them can be built and then refused, by name, when an engine is asked for it.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "cudnn-internal.h"

namespace gpusim {
namespace cudnn {

namespace {

constexpr int kNoRef = -1;     // the attribute is not a descriptor
constexpr int kAnyOp = -2;     // any operation descriptor
constexpr int kAnyCount = -1;  // no upper bound on the element count
constexpr int kRequired = 1;   // Finalize fails without it
constexpr int kComputed = 2;   // read-only: the library computes it

struct Rule {
  cudnnBackendDescriptorType_t desc;
  cudnnBackendAttributeName_t name;
  cudnnBackendAttributeType_t type;
  cudnnBackendAttributeType_t alt;  // a second accepted type (the same when there is none)
  int64_t maxCount;
  int flags;
  int ref;  // for descriptor values: the descriptor type they must have
};

// A value attribute (one accepted type, or two), and a descriptor attribute (the values must
// be descriptors of kind ref).
constexpr Rule Val(cudnnBackendDescriptorType_t desc, cudnnBackendAttributeName_t name,
                   cudnnBackendAttributeType_t type, int flags = 0, int64_t maxCount = 1) {
  return {desc, name, type, type, maxCount, flags, kNoRef};
}
constexpr Rule Val2(cudnnBackendDescriptorType_t desc, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, cudnnBackendAttributeType_t alt, int flags = 0,
                    int64_t maxCount = 1) {
  return {desc, name, type, alt, maxCount, flags, kNoRef};
}
constexpr Rule Ref(cudnnBackendDescriptorType_t desc, cudnnBackendAttributeName_t name, int ref, int flags = 0,
                   int64_t maxCount = 1) {
  return {desc, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, maxCount, flags, ref};
}

#define T(x) CUDNN_TYPE_##x
#define A(x) CUDNN_ATTR_##x
#define D(x) CUDNN_BACKEND_##x##_DESCRIPTOR

// cuDNN 9 backend documentation ("cudnn_graph Library", backend descriptor types), restricted
// to the descriptor kinds the shim models.
const Rule kRules[] = {
    Val(D(TENSOR), A(TENSOR_BYTE_ALIGNMENT), T(INT64), kRequired),
    Val(D(TENSOR), A(TENSOR_DATA_TYPE), T(DATA_TYPE), kRequired),
    Val(D(TENSOR), A(TENSOR_DIMENSIONS), T(INT64), kRequired, CUDNN_DIM_MAX),
    Val(D(TENSOR), A(TENSOR_STRIDES), T(INT64), kRequired, CUDNN_DIM_MAX),
    Val(D(TENSOR), A(TENSOR_VECTOR_COUNT), T(INT64)),
    Val(D(TENSOR), A(TENSOR_VECTORIZED_DIMENSION), T(INT64)),
    Val(D(TENSOR), A(TENSOR_UNIQUE_ID), T(INT64), kRequired),
    Val(D(TENSOR), A(TENSOR_IS_VIRTUAL), T(BOOLEAN)),
    Val(D(TENSOR), A(TENSOR_IS_BY_VALUE), T(BOOLEAN)),
    Val(D(TENSOR), A(TENSOR_REORDERING_MODE), T(TENSOR_REORDERING_MODE)),
    Ref(D(TENSOR), A(TENSOR_RAGGED_OFFSET_DESC), D(TENSOR)),

    Val(D(POINTWISE), A(POINTWISE_MODE), T(POINTWISE_MODE), kRequired),
    Val(D(POINTWISE), A(POINTWISE_MATH_PREC), T(DATA_TYPE), kRequired),
    Val(D(POINTWISE), A(POINTWISE_NAN_PROPAGATION), T(NAN_PROPOGATION)),
    Val2(D(POINTWISE), A(POINTWISE_RELU_LOWER_CLIP), T(DOUBLE), T(FLOAT)),
    Val2(D(POINTWISE), A(POINTWISE_RELU_UPPER_CLIP), T(DOUBLE), T(FLOAT)),
    Val2(D(POINTWISE), A(POINTWISE_RELU_LOWER_CLIP_SLOPE), T(DOUBLE), T(FLOAT)),
    Val2(D(POINTWISE), A(POINTWISE_ELU_ALPHA), T(DOUBLE), T(FLOAT)),
    Val2(D(POINTWISE), A(POINTWISE_SOFTPLUS_BETA), T(DOUBLE), T(FLOAT)),
    Val2(D(POINTWISE), A(POINTWISE_SWISH_BETA), T(DOUBLE), T(FLOAT)),
    Val(D(POINTWISE), A(POINTWISE_AXIS), T(INT64)),

    Ref(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_PW_DESCRIPTOR), D(POINTWISE), kRequired),
    Ref(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_XDESC), D(TENSOR)),
    Ref(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_BDESC), D(TENSOR)),
    Ref(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_YDESC), D(TENSOR)),
    Ref(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_TDESC), D(TENSOR)),
    Ref(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_DXDESC), D(TENSOR)),
    Ref(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_DYDESC), D(TENSOR)),
    Val2(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_ALPHA1), T(FLOAT), T(DOUBLE)),
    Val2(D(OPERATION_POINTWISE), A(OPERATION_POINTWISE_ALPHA2), T(FLOAT), T(DOUBLE)),

    Val(D(MATMUL), A(MATMUL_COMP_TYPE), T(DATA_TYPE), kRequired),
    Val2(D(MATMUL), A(MATMUL_PADDING_VALUE), T(DOUBLE), T(FLOAT)),

    Ref(D(OPERATION_MATMUL), A(OPERATION_MATMUL_ADESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_MATMUL), A(OPERATION_MATMUL_BDESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_MATMUL), A(OPERATION_MATMUL_CDESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_MATMUL), A(OPERATION_MATMUL_DESC), D(MATMUL), kRequired),
    Val(D(OPERATION_MATMUL), A(OPERATION_MATMUL_IRREGULARLY_STRIDED_BATCH_COUNT), T(INT64)),
    Ref(D(OPERATION_MATMUL), A(OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC), D(TENSOR)),
    Ref(D(OPERATION_MATMUL), A(OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC), D(TENSOR)),
    Ref(D(OPERATION_MATMUL), A(OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC), D(TENSOR)),

    Val(D(REDUCTION), A(REDUCTION_OPERATOR), T(REDUCTION_OPERATOR_TYPE), kRequired),
    Val(D(REDUCTION), A(REDUCTION_COMP_TYPE), T(DATA_TYPE), kRequired),
    Val(D(REDUCTION), A(REDUCTION_IS_DETERMINISTIC), T(BOOLEAN)),

    Ref(D(OPERATION_REDUCTION), A(OPERATION_REDUCTION_XDESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_REDUCTION), A(OPERATION_REDUCTION_YDESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_REDUCTION), A(OPERATION_REDUCTION_DESC), D(REDUCTION), kRequired),

    Ref(D(OPERATION_RESHAPE), A(OPERATION_RESHAPE_XDESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_RESHAPE), A(OPERATION_RESHAPE_YDESC), D(TENSOR), kRequired),

    Val(D(RNG), A(RNG_DISTRIBUTION), T(RNG_DISTRIBUTION), kRequired),
    Val(D(RNG), A(RNG_NORMAL_DIST_MEAN), T(DOUBLE)),
    Val(D(RNG), A(RNG_NORMAL_DIST_STANDARD_DEVIATION), T(DOUBLE)),
    Val(D(RNG), A(RNG_UNIFORM_DIST_MAXIMUM), T(DOUBLE)),
    Val(D(RNG), A(RNG_UNIFORM_DIST_MINIMUM), T(DOUBLE)),
    Val(D(RNG), A(RNG_BERNOULLI_DIST_PROBABILITY), T(DOUBLE)),

    Ref(D(OPERATION_RNG), A(OPERATION_RNG_YDESC), D(TENSOR), kRequired),
    {D(OPERATION_RNG), A(OPERATION_RNG_SEED), T(INT64), T(BACKEND_DESCRIPTOR), 1, 0, D(TENSOR)},  // value or tensor
    Ref(D(OPERATION_RNG), A(OPERATION_RNG_DESC), D(RNG), kRequired),
    Ref(D(OPERATION_RNG), A(OPERATION_RNG_OFFSET_DESC), D(TENSOR)),

    Ref(D(OPERATION_SDPA_FWD), A(OPERATION_SDPA_FWD_QDESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_SDPA_FWD), A(OPERATION_SDPA_FWD_KDESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_SDPA_FWD), A(OPERATION_SDPA_FWD_VDESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_SDPA_FWD), A(OPERATION_SDPA_FWD_ODESC), D(TENSOR), kRequired),
    Ref(D(OPERATION_SDPA_FWD), A(OPERATION_SDPA_FWD_STATSDESC), D(TENSOR)),
    Ref(D(OPERATION_SDPA_FWD), A(OPERATION_SDPA_FWD_SCALEDESC), D(TENSOR)),

    Val(D(OPERATIONGRAPH), A(OPERATIONGRAPH_HANDLE), T(HANDLE)),
    Ref(D(OPERATIONGRAPH), A(OPERATIONGRAPH_OPS), kAnyOp, kRequired, kAnyCount),
    Val(D(OPERATIONGRAPH), A(OPERATIONGRAPH_ENGINE_GLOBAL_COUNT), T(INT64), kComputed),
    Val(D(OPERATIONGRAPH), A(OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED), T(BOOLEAN)),

    Val(D(ENGINEHEUR), A(ENGINEHEUR_MODE), T(HEUR_MODE), kRequired),
    Ref(D(ENGINEHEUR), A(ENGINEHEUR_OPERATION_GRAPH), D(OPERATIONGRAPH), kRequired),
    Ref(D(ENGINEHEUR), A(ENGINEHEUR_RESULTS), D(ENGINECFG), kComputed, kAnyCount),
    Val(D(ENGINEHEUR), A(ENGINEHEUR_SM_COUNT_TARGET), T(INT32)),
    Ref(D(ENGINEHEUR), A(ENGINEHEUR_DEVICEPROP), D(DEVICEPROP)),

    Ref(D(ENGINE), A(ENGINE_OPERATION_GRAPH), D(OPERATIONGRAPH), kRequired),
    Val(D(ENGINE), A(ENGINE_GLOBAL_INDEX), T(INT64), kRequired),
    Ref(D(ENGINE), A(ENGINE_KNOB_INFO), D(KNOB_INFO), kComputed, kAnyCount),
    Val(D(ENGINE), A(ENGINE_NUMERICAL_NOTE), T(NUMERICAL_NOTE), kComputed, kAnyCount),
    Ref(D(ENGINE), A(ENGINE_LAYOUT_INFO), D(LAYOUT_INFO), kComputed, kAnyCount),
    Val(D(ENGINE), A(ENGINE_BEHAVIOR_NOTE), T(BEHAVIOR_NOTE), kComputed, kAnyCount),
    Val(D(ENGINE), A(ENGINE_SM_COUNT_TARGET), T(INT32)),
    Ref(D(ENGINE), A(ENGINE_DEVICEPROP), D(DEVICEPROP)),

    Ref(D(ENGINECFG), A(ENGINECFG_ENGINE), D(ENGINE), kRequired),
    Ref(D(ENGINECFG), A(ENGINECFG_INTERMEDIATE_INFO), D(INTERMEDIATE_INFO), kComputed, kAnyCount),
    Ref(D(ENGINECFG), A(ENGINECFG_KNOB_CHOICES), D(KNOB_CHOICE), 0, kAnyCount),
    Val(D(ENGINECFG), A(ENGINECFG_WORKSPACE_SIZE), T(INT64), kComputed),
    Val(D(ENGINECFG), A(ENGINECFG_SHARED_MEMORY_USED), T(INT32), kComputed),

    Val(D(KNOB_CHOICE), A(KNOB_CHOICE_KNOB_TYPE), T(KNOB_TYPE), kRequired),
    Val(D(KNOB_CHOICE), A(KNOB_CHOICE_KNOB_VALUE), T(INT64), kRequired),

    Val(D(EXECUTION_PLAN), A(EXECUTION_PLAN_HANDLE), T(HANDLE)),
    Ref(D(EXECUTION_PLAN), A(EXECUTION_PLAN_ENGINE_CONFIG), D(ENGINECFG), kRequired),
    Val(D(EXECUTION_PLAN), A(EXECUTION_PLAN_WORKSPACE_SIZE), T(INT64), kComputed),
    Val(D(EXECUTION_PLAN), A(EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS), T(INT64), kComputed, kAnyCount),
    Val(D(EXECUTION_PLAN), A(EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS), T(INT64), 0, kAnyCount),
    Ref(D(EXECUTION_PLAN), A(EXECUTION_PLAN_KERNEL_CACHE), D(KERNEL_CACHE)),
    Ref(D(EXECUTION_PLAN), A(EXECUTION_PLAN_DEVICEPROP), D(DEVICEPROP)),

    Val(D(VARIANT_PACK), A(VARIANT_PACK_UNIQUE_IDS), T(INT64), kRequired, kAnyCount),
    Val(D(VARIANT_PACK), A(VARIANT_PACK_DATA_POINTERS), T(VOID_PTR), kRequired, kAnyCount),
    Val(D(VARIANT_PACK), A(VARIANT_PACK_INTERMEDIATES), T(VOID_PTR), 0, kAnyCount),
    Val(D(VARIANT_PACK), A(VARIANT_PACK_WORKSPACE), T(VOID_PTR)),
};

#undef T
#undef A
#undef D

// Descriptor kinds whose attributes follow kRules (the others are stored as set).
bool Modelled(cudnnBackendDescriptorType_t type) {
  if (type == CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR) return true;  // only ever filled by the library
  for (const Rule& r : kRules)
    if (r.desc == type) return true;
  return false;
}

const Rule* FindRule(cudnnBackendDescriptorType_t desc, cudnnBackendAttributeName_t name) {
  for (const Rule& r : kRules)
    if (r.desc == desc && r.name == name) return &r;
  return nullptr;
}

// Bytes of one element of an attribute type (C enums are int, booleans C bool).
size_t ElementSize(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(void*);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_INT64: return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT: return sizeof(float);
    case CUDNN_TYPE_DOUBLE: return sizeof(double);
    case CUDNN_TYPE_CHAR: return sizeof(char);
    case CUDNN_TYPE_FRACTION: return sizeof(cudnnFraction_t);
    case CUDNN_TYPE_INT32: return sizeof(int32_t);
    default: return (unsigned)type <= CUDNN_TYPE_RNG_DISTRIBUTION ? sizeof(int) : 0;  // the enum types
  }
}

std::string AttrLabel(cudnnBackendAttributeName_t name) { return "attribute " + std::to_string((int)name); }

std::string Where(const Desc& d, cudnnBackendAttributeName_t name) {
  return AttrLabel(name) + " of a " + DescriptorName(d.type) + " descriptor";
}

std::mutex g_mu;

// Live descriptors by the handle the program holds (the Desc's own address).
std::unordered_map<const void*, std::shared_ptr<Desc>>& Table() {
  static auto* t = new std::unordered_map<const void*, std::shared_ptr<Desc>>;
  return *t;
}

std::shared_ptr<Desc> Lookup(const void* h) {
  auto it = Table().find(h);
  return it == Table().end() ? nullptr : it->second;
}

// The live descriptor behind a handle, or an error status for a null or unknown one.
cudnnStatus_t Resolve(const void* h, std::shared_ptr<Desc>* out) {
  if (!h) return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "null backend descriptor");
  *out = Lookup(h);
  if (!*out) return Fail(CUDNN_STATUS_BAD_PARAM, "not a live backend descriptor (destroyed, or never created)");
  return CUDNN_STATUS_SUCCESS;
}

// ---- Finalize, per descriptor kind ----

cudnnStatus_t CheckRequired(const Desc& d) {
  for (const Rule& r : kRules)
    if (r.desc == d.type && (r.flags & kRequired) && !d.Find(r.name))
      return Fail(CUDNN_STATUS_BAD_PARAM, "finalizing a " + std::string(DescriptorName(d.type)) +
                                              " descriptor without its required " + AttrLabel(r.name));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t FinalizeTensor(const Desc& d) {
  TensorInfo t = ReadTensor(d);
  if (t.dims.size() != t.strides.size())
    return Fail(CUDNN_STATUS_BAD_PARAM, "tensor uid " + std::to_string(t.uid) + " has " +
                                            std::to_string(t.dims.size()) + " dimensions but " +
                                            std::to_string(t.strides.size()) + " strides");
  for (size_t i = 0; i < t.dims.size(); ++i)
    if (t.dims[i] < 1 || t.strides[i] < 0)
      return Fail(CUDNN_STATUS_BAD_PARAM,
                  "tensor uid " + std::to_string(t.uid) + ": dimensions must be positive and strides not negative");
  int64_t align = 0;
  d.Scalar(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &align);
  if (align < 1) return Fail(CUDNN_STATUS_BAD_PARAM, "tensor uid " + std::to_string(t.uid) + ": byte alignment < 1");
  return CUDNN_STATUS_SUCCESS;
}

bool IsBackwardActivation(int mode) { return mode >= CUDNN_POINTWISE_RELU_BWD && mode <= 299; }
bool IsBinaryPointwise(int mode) {
  switch (mode) {
    case CUDNN_POINTWISE_ADD:
    case CUDNN_POINTWISE_ADD_SQUARE:
    case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_MOD:
    case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_POW:
    case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_ATAN2:
    case CUDNN_POINTWISE_LOGICAL_AND:
    case CUDNN_POINTWISE_LOGICAL_OR:
    case CUDNN_POINTWISE_BINARY_SELECT: return true;
    default: return mode >= CUDNN_POINTWISE_CMP_EQ && mode <= CUDNN_POINTWISE_CMP_LE;
  }
}

cudnnStatus_t FinalizePointwiseOp(const Desc& d) {
  int64_t mode = -1;
  d.Ref(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR)->Scalar(CUDNN_ATTR_POINTWISE_MODE, &mode);
  auto need = [&](cudnnBackendAttributeName_t name, const char* what) {
    return d.Find(name) ? CUDNN_STATUS_SUCCESS
                        : Fail(CUDNN_STATUS_BAD_PARAM, "pointwise operation (mode " + std::to_string(mode) +
                                                           ") without its " + what + " tensor");
  };
  cudnnStatus_t s = IsBackwardActivation((int)mode) ? need(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, "dy")
                                                    : need(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, "x");
  if (s == CUDNN_STATUS_SUCCESS)
    s = IsBackwardActivation((int)mode) ? need(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, "dx")
                                        : need(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, "y");
  if (s == CUDNN_STATUS_SUCCESS && IsBinaryPointwise((int)mode)) s = need(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, "b");
  if (s == CUDNN_STATUS_SUCCESS && mode == CUDNN_POINTWISE_BINARY_SELECT)
    s = need(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, "t (mask)");
  return s;
}

std::string Shape(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// C[..., M, N] = A[..., M, K] x B[..., K, N]; an operand's batch dimension is C's or divides
// it (broadcast, or shared by groups: grouped-query attention's K and V heads).
cudnnStatus_t FinalizeMatmulOp(const Desc& d) {
  TensorInfo a = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_MATMUL_ADESC));
  TensorInfo b = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_MATMUL_BDESC));
  TensorInfo c = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_MATMUL_CDESC));
  size_t n = c.dims.size();
  bool ok = n >= 2 && a.dims.size() == n && b.dims.size() == n && a.dims[n - 1] == b.dims[n - 2] &&
            c.dims[n - 2] == a.dims[n - 2] && c.dims[n - 1] == b.dims[n - 1];
  for (size_t i = 0; ok && i + 2 < n; ++i) ok = c.dims[i] % a.dims[i] == 0 && c.dims[i] % b.dims[i] == 0;
  if (!ok)
    return Fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
                "matmul " + Shape(a.dims) + " x " + Shape(b.dims) + " cannot give " + Shape(c.dims));
  return CUDNN_STATUS_SUCCESS;
}

// Each output dimension is the input's, or reduced to one, or to a divisor of it (sums over
// groups, such as the query heads sharing a key head).
cudnnStatus_t FinalizeReductionOp(const Desc& d) {
  TensorInfo x = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_REDUCTION_XDESC));
  TensorInfo y = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_REDUCTION_YDESC));
  bool ok = x.dims.size() == y.dims.size();
  for (size_t i = 0; ok && i < x.dims.size(); ++i) ok = x.dims[i] % y.dims[i] == 0;
  return ok ? CUDNN_STATUS_SUCCESS
            : Fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
                   "reduction of " + Shape(x.dims) + " cannot give " + Shape(y.dims));
}

int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t v : dims) n *= v;
  return n;
}

cudnnStatus_t FinalizeReshapeOp(const Desc& d) {
  TensorInfo x = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_RESHAPE_XDESC));
  TensorInfo y = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_RESHAPE_YDESC));
  return Elements(x.dims) == Elements(y.dims)
             ? CUDNN_STATUS_SUCCESS
             : Fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH,
                    "reshape of " + Shape(x.dims) + " into " + Shape(y.dims) + " changes the element count");
}

// Q [b, h_q, s_q, d], K [b, h_k, s_kv, d], V [b, h_v, s_kv, d_v], O [b, h_q, s_q, d_v].
cudnnStatus_t FinalizeSdpaOp(const Desc& d) {
  TensorInfo q = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC));
  TensorInfo k = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC));
  TensorInfo v = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC));
  TensorInfo o = ReadTensor(*d.Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC));
  bool ok = q.dims.size() == 4 && k.dims.size() == 4 && v.dims.size() == 4 && o.dims.size() == 4;
  ok = ok && k.dims[0] == q.dims[0] && v.dims[0] == q.dims[0] && o.dims[0] == q.dims[0] && k.dims[3] == q.dims[3] &&
       v.dims[2] == k.dims[2] && o.dims[1] == q.dims[1] && o.dims[2] == q.dims[2] && o.dims[3] == v.dims[3] &&
       q.dims[1] % k.dims[1] == 0 && q.dims[1] % v.dims[1] == 0;
  return ok ? CUDNN_STATUS_SUCCESS
            : Fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "SDPA forward with Q " + Shape(q.dims) + ", K " +
                                                              Shape(k.dims) + ", V " + Shape(v.dims) + ", O " +
                                                              Shape(o.dims));
}

cudnnStatus_t FinalizeOperationGraph(Desc& d) {
  const AttrValue* ops = d.Find(CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (ops->descs.empty()) return Fail(CUDNN_STATUS_BAD_PARAM, "operation graph without operations");
  if (d.Flag(CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED))
    return NotEmulated(CUDNN_STATUS_NOT_SUPPORTED, "cuDNN operation graphs with dynamic shapes are not emulated");
  std::vector<const Desc*> list;
  for (const auto& op : ops->descs) list.push_back(op.get());
  // One definition per tensor uid across the graph.
  std::map<int64_t, const Desc*> byUid;
  for (const Desc* op : list)
    for (const auto& kv : op->attrs)
      for (const auto& ref : kv.second.descs) {
        if (ref->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) continue;
        TensorInfo t = ReadTensor(*ref);
        auto it = byUid.emplace(t.uid, ref.get()).first;
        if (it->second == ref.get()) continue;
        TensorInfo other = ReadTensor(*it->second);
        if (other.dims != t.dims || other.strides != t.strides || other.dtype != t.dtype ||
            other.isVirtual != t.isVirtual || other.byValue != t.byValue)
          return Fail(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES,
                      "two different tensors have unique id " + std::to_string(t.uid));
      }
  std::string why;
  d.attention = RecognizeAttention(list, &why);
  if (!d.attention)
    d.unsupported = "cuDNN graph with operations " + DescribeOperations(list) + " is not emulated (" + why + ")";
  return CUDNN_STATUS_SUCCESS;
}

// Heuristics, engines, engine configs and plans carry the graph's attention along.
void Inherit(Desc& d, const Desc& from) {
  d.attention = from.attention;
  d.unsupported = from.unsupported;
}

cudnnStatus_t RefuseUnsupported(const Desc& d) {
  return d.attention ? CUDNN_STATUS_SUCCESS : NotEmulated(CUDNN_STATUS_NOT_SUPPORTED, d.unsupported);
}

cudnnStatus_t FinalizeLocked(Desc& d) {
  if (d.finalized)
    return Fail(CUDNN_STATUS_BAD_PARAM, std::string(DescriptorName(d.type)) + " descriptor finalized twice");
  if (!Modelled(d.type)) return CUDNN_STATUS_SUCCESS;
  cudnnStatus_t s = CheckRequired(d);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  switch (d.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return FinalizeTensor(d);
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return FinalizePointwiseOp(d);
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return FinalizeMatmulOp(d);
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return FinalizeReductionOp(d);
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: return FinalizeReshapeOp(d);
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: return FinalizeSdpaOp(d);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return FinalizeOperationGraph(d);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      Inherit(d, *d.Ref(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH));
      return RefuseUnsupported(d);
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: {
      int64_t index = -1;
      d.Scalar(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, &index);
      if (index != 0)
        return Fail(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND,
                    "engine global index " + std::to_string(index) + " (the emulated library has one engine, 0)");
      Inherit(d, *d.Ref(CUDNN_ATTR_ENGINE_OPERATION_GRAPH));
      return RefuseUnsupported(d);
    }
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: {
      const AttrValue* knobs = d.Find(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES);
      if (knobs && !knobs->descs.empty())
        return NotEmulated(CUDNN_STATUS_NOT_SUPPORTED, "cuDNN knob choices are not emulated (the engine has no knobs)");
      Inherit(d, *d.Ref(CUDNN_ATTR_ENGINECFG_ENGINE));
      return RefuseUnsupported(d);
    }
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      Inherit(d, *d.Ref(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG));
      return RefuseUnsupported(d);
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
      std::vector<int64_t> uids = d.Ints(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
      if ((int64_t)uids.size() != d.Find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)->count)
        return Fail(CUDNN_STATUS_BAD_PARAM, "variant pack with " + std::to_string(uids.size()) + " unique ids but " +
                                                std::to_string(d.Find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)->count) +
                                                " data pointers");
      std::sort(uids.begin(), uids.end());
      if (std::adjacent_find(uids.begin(), uids.end()) != uids.end())
        return Fail(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, "variant pack lists a unique id twice");
      return CUDNN_STATUS_SUCCESS;
    }
    default: return CUDNN_STATUS_SUCCESS;
  }
}

// ---- GetAttribute helpers ----

cudnnStatus_t PutValues(const void* src, size_t eltSize, int64_t n, int64_t requested, int64_t* count, void* values) {
  if (count) *count = n;
  if (values && requested > 0) memcpy(values, src, eltSize * (size_t)std::min(n, requested));
  return CUDNN_STATUS_SUCCESS;
}

template <class V>
cudnnStatus_t PutScalar(V v, int64_t requested, int64_t* count, void* values) {
  return PutValues(&v, sizeof v, 1, requested, count, values);
}

// Descriptor values are returned by filling descriptors the caller created (of the right kind).
cudnnStatus_t PutDescriptors(const std::vector<std::shared_ptr<Desc>>& from, int64_t requested, int64_t* count,
                             void* values) {
  if (count) *count = (int64_t)from.size();
  if (!values) return CUDNN_STATUS_SUCCESS;
  auto** out = static_cast<cudnnBackendDescriptor_t*>(values);
  for (int64_t i = 0; i < std::min<int64_t>(requested, (int64_t)from.size()); ++i) {
    std::shared_ptr<Desc> to;
    cudnnStatus_t s = Resolve(out[i], &to);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (to->type != from[i]->type)
      return Fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, std::string("a ") + DescriptorName(from[i]->type) +
                                                              " is returned into a " + DescriptorName(to->type) +
                                                              " descriptor");
    if (to != from[i]) *to = *from[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

// What the library computes. Returns false when the attribute is not a computed one.
bool Computed(const Desc& d, cudnnBackendAttributeName_t name, int64_t requested, int64_t* count, void* values,
              cudnnStatus_t* status) {
  const AttentionGraph* att = d.attention.get();
  switch (name) {
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
      *status = PutScalar<int64_t>(1, requested, count, values);  // engine 0: the fused attention
      return true;
    case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
      // One configuration: engine 0 of the graph, no knobs.
      auto engine = std::make_shared<Desc>();
      engine->type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
      engine->finalized = true;
      engine->attrs[CUDNN_ATTR_ENGINE_OPERATION_GRAPH] = d.attrs.at(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      AttrValue index;
      index.type = CUDNN_TYPE_INT64;
      index.count = 1;
      index.bytes.assign(sizeof(int64_t), 0);  // engine 0
      engine->attrs[CUDNN_ATTR_ENGINE_GLOBAL_INDEX] = index;
      Inherit(*engine, d);
      auto cfg = std::make_shared<Desc>();
      cfg->type = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
      cfg->finalized = true;
      AttrValue engineRef;
      engineRef.type = CUDNN_TYPE_BACKEND_DESCRIPTOR;
      engineRef.count = 1;
      engineRef.descs.push_back(engine);
      cfg->attrs[CUDNN_ATTR_ENGINECFG_ENGINE] = engineRef;
      Inherit(*cfg, d);
      *status = PutDescriptors({cfg}, requested, count, values);
      return true;
    }
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
      *status = PutScalar<int64_t>(att ? att->workspaceBytes : 0, requested, count, values);
      return true;
    case CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED:
      *status = PutScalar<int32_t>(0, requested, count, values);  // not modelled
      return true;
    case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: {
      // Half, bfloat16 and FP8 attention runs on tensor cores.
      bool tensorCores = att && att->dtype != CUDNN_DATA_FLOAT && att->dtype != CUDNN_DATA_DOUBLE;
      cudnnBackendNumericalNote_t note = CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
      *status = PutValues(&note, sizeof note, tensorCores ? 1 : 0, requested, count, values);
      return true;
    }
    case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE:
    case CUDNN_ATTR_ENGINE_KNOB_INFO:
    case CUDNN_ATTR_ENGINE_LAYOUT_INFO:
    case CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO:
    case CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS:
      *status = PutValues(nullptr, 0, 0, requested, count, values);  // none
      return true;
    default: return false;
  }
}

}  // namespace

// ---- Desc accessors ----

const AttrValue* Desc::Find(cudnnBackendAttributeName_t name) const {
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

const Desc* Desc::Ref(cudnnBackendAttributeName_t name) const {
  const AttrValue* v = Find(name);
  return v && !v->descs.empty() ? v->descs[0].get() : nullptr;
}

std::vector<int64_t> Desc::Ints(cudnnBackendAttributeName_t name) const {
  const AttrValue* v = Find(name);
  std::vector<int64_t> out;
  if (!v || v->type != CUDNN_TYPE_INT64) return out;
  out.resize((size_t)v->count);
  memcpy(out.data(), v->bytes.data(), out.size() * sizeof(int64_t));
  return out;
}

bool Desc::Scalar(cudnnBackendAttributeName_t name, int64_t* out) const {
  const AttrValue* v = Find(name);
  if (!v || v->count < 1) return false;
  switch (ElementSize(v->type)) {
    case 8: {
      int64_t x;
      memcpy(&x, v->bytes.data(), 8);
      *out = x;
      return true;
    }
    case 4: {
      int32_t x;
      memcpy(&x, v->bytes.data(), 4);
      *out = x;
      return true;
    }
    default: return false;
  }
}

bool Desc::Flag(cudnnBackendAttributeName_t name) const {
  const AttrValue* v = Find(name);
  return v && v->type == CUDNN_TYPE_BOOLEAN && v->count >= 1 && v->bytes[0];
}

TensorInfo ReadTensor(const Desc& t) {
  TensorInfo i;
  t.Scalar(CUDNN_ATTR_TENSOR_UNIQUE_ID, &i.uid);
  i.dims = t.Ints(CUDNN_ATTR_TENSOR_DIMENSIONS);
  i.strides = t.Ints(CUDNN_ATTR_TENSOR_STRIDES);
  int64_t dt = 0;
  t.Scalar(CUDNN_ATTR_TENSOR_DATA_TYPE, &dt);
  i.dtype = (cudnnDataType_t)dt;
  i.isVirtual = t.Flag(CUDNN_ATTR_TENSOR_IS_VIRTUAL);
  i.byValue = t.Flag(CUDNN_ATTR_TENSOR_IS_BY_VALUE);
  return i;
}

const char* DescriptorName(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: return "pointwise";
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: return "convolution";
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return "engine";
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return "engine config";
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return "engine heuristics";
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return "execution plan";
    case CUDNN_BACKEND_INTERMEDIATE_INFO_DESCRIPTOR: return "intermediate info";
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR: return "knob choice";
    case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR: return "knob info";
    case CUDNN_BACKEND_LAYOUT_INFO_DESCRIPTOR: return "layout info";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return "convolution forward";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return "convolution backward filter";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return "convolution backward data";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return "pointwise operation";
    case CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR: return "gen stats";
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return "operation graph";
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return "variant pack";
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return "tensor";
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR: return "matmul";
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return "matmul operation";
    case CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR: return "batch norm finalize statistics";
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR: return "reduction";
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return "reduction operation";
    case CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR: return "batch norm backward weights";
    case CUDNN_BACKEND_RESAMPLE_DESCRIPTOR: return "resample";
    case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR: return "resample forward";
    case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR: return "resample backward";
    case CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR: return "concatenate";
    case CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR: return "signal";
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR: return "norm forward";
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR: return "norm backward";
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: return "reshape";
    case CUDNN_BACKEND_RNG_DESCRIPTOR: return "rng";
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR: return "rng operation";
    case CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR: return "kernel cache";
    case CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR: return "paged cache load";
    case CUDNN_BACKEND_OPERATION_BLOCK_SCALE_QUANTIZE_DESCRIPTOR: return "block scale quantize";
    case CUDNN_BACKEND_OPERATION_BLOCK_SCALE_DEQUANTIZE_DESCRIPTOR: return "block scale dequantize";
    case CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR: return "device properties";
    case CUDNN_BACKEND_OPERATION_EXPAND_BAND_MATRIX_DESCRIPTOR: return "expand band matrix";
    case CUDNN_BACKEND_OPERATION_CONTRACT_BAND_MATRIX_DESCRIPTOR: return "contract band matrix";
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: return "SDPA forward";
  }
  return "unknown";
}

bool IsOperation(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BLOCK_SCALE_QUANTIZE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BLOCK_SCALE_DEQUANTIZE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_EXPAND_BAND_MATRIX_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONTRACT_BAND_MATRIX_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: return true;
    default: return false;
  }
}

// ---- the backend calls ----

cudnnStatus_t CreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* out) {
  if (!out) return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnBackendCreateDescriptor: null output pointer");
  if ((unsigned)type > CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR)
    return Fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnBackendCreateDescriptor: unknown descriptor type " +
                                                std::to_string((int)type) + " (cuDNN 9.13 has 0..41)");
  auto d = std::make_shared<Desc>();
  d->type = type;
  std::lock_guard<std::mutex> lock(g_mu);
  Table()[d.get()] = d;
  *out = d.get();
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t DestroyDescriptor(cudnnBackendDescriptor_t h) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::shared_ptr<Desc> d;
  cudnnStatus_t s = Resolve(h, &d);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  Table().erase(h);  // descriptors set on others live on there
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t SetAttribute(cudnnBackendDescriptor_t h, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, int64_t count, const void* values) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::shared_ptr<Desc> d;
  cudnnStatus_t s = Resolve(h, &d);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (d->finalized)
    return Fail(CUDNN_STATUS_NOT_INITIALIZED, "setting " + Where(*d, name) + " that is already finalized");
  size_t elt = ElementSize(type);
  if (elt == 0) return Fail(CUDNN_STATUS_BAD_PARAM, "unknown attribute type " + std::to_string((int)type));
  if (count < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "negative element count for " + Where(*d, name));
  if (count > 0 && !values) return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "null values for " + Where(*d, name));
  int ref = kNoRef;
  if (Modelled(d->type)) {
    if (name == CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION && d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
      return NotEmulated(CUDNN_STATUS_NOT_SUPPORTED, "cuDNN execution plans loaded from JSON are not emulated");
    const Rule* r = FindRule(d->type, name);
    if (!r || (r->flags & kComputed)) return Fail(CUDNN_STATUS_BAD_PARAM, Where(*d, name) + " is not settable");
    if (type != r->type && type != r->alt)
      return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, Where(*d, name) + " set with attribute type " +
                                                             std::to_string((int)type) + ", expected " +
                                                             std::to_string((int)r->type));
    if ((r->flags & kRequired) && r->maxCount != kAnyCount && count < 1)
      return Fail(CUDNN_STATUS_BAD_PARAM, Where(*d, name) + " set with no element");
    if (r->maxCount != kAnyCount && count > r->maxCount)
      return Fail(CUDNN_STATUS_BAD_PARAM, Where(*d, name) + " set with " + std::to_string(count) +
                                              " elements, at most " + std::to_string(r->maxCount));
    ref = r->ref;
  }
  AttrValue v;
  v.type = type;
  v.count = count;
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    // The descriptors themselves are kept (finalized ones: they no longer change).
    auto* in = static_cast<const cudnnBackendDescriptor_t*>(values);
    for (int64_t i = 0; i < count; ++i) {
      std::shared_ptr<Desc> e;
      s = Resolve(in[i], &e);
      if (s != CUDNN_STATUS_SUCCESS) return s;
      if (ref >= 0 && e->type != ref)
        return Fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                    Where(*d, name) + " takes a " + DescriptorName((cudnnBackendDescriptorType_t)ref) +
                        " descriptor, not a " + DescriptorName(e->type) + " one");
      if (ref == kAnyOp && !IsOperation(e->type))
        return Fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, Where(*d, name) + " takes operations, not a " +
                                                                std::string(DescriptorName(e->type)) + " descriptor");
      if (!e->finalized)
        return Fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                    Where(*d, name) + " given a " + DescriptorName(e->type) + " descriptor that is not finalized");
      v.descs.push_back(e);
    }
  } else {
    if (type == CUDNN_TYPE_HANDLE)
      for (int64_t i = 0; i < count; ++i)
        if (!LiveHandle(static_cast<const cudnnHandle_t*>(values)[i]))
          return Fail(CUDNN_STATUS_BAD_PARAM, Where(*d, name) + " given a cuDNN handle that is not live");
    const auto* p = static_cast<const unsigned char*>(values);
    v.bytes.assign(p, p + elt * (size_t)count);
  }
  d->attrs[name] = std::move(v);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t GetAttribute(cudnnBackendDescriptor_t h, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, int64_t requested, int64_t* count, void* values) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::shared_ptr<Desc> d;
  cudnnStatus_t s = Resolve(h, &d);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (!count && !values)
    return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "reading " + Where(*d, name) + " with nowhere to put it");
  if (requested < 0) return Fail(CUDNN_STATUS_BAD_PARAM, "negative requested element count for " + Where(*d, name));
  if (!d->finalized)
    return Fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "reading " + Where(*d, name) + " before it is finalized");
  if (Modelled(d->type)) {
    if (name == CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION && d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
      return NotEmulated(CUDNN_STATUS_NOT_SUPPORTED, "serializing cuDNN execution plans to JSON is not emulated");
    const Rule* r = FindRule(d->type, name);
    if (!r) return Fail(CUDNN_STATUS_BAD_PARAM, Where(*d, name) + " does not exist");
    if (type != r->type && type != r->alt)
      return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                  "reading " + Where(*d, name) + " as attribute type " + std::to_string((int)type));
    if (Computed(*d, name, requested, count, values, &s)) return s;
  }
  const AttrValue* v = d->Find(name);
  if (!v) {
    if (Modelled(d->type)) return PutValues(nullptr, 0, 0, requested, count, values);  // optional, not set
    return NotEmulated(CUDNN_STATUS_NOT_SUPPORTED,
                       "reading " + Where(*d, name) + " that was never set is not emulated");
  }
  if (type != v->type)
    return Fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, "reading " + Where(*d, name) + " as attribute type " +
                                                           std::to_string((int)type) + ", it was set as " +
                                                           std::to_string((int)v->type));
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) return PutDescriptors(v->descs, requested, count, values);
  return PutValues(v->bytes.data(), ElementSize(type), v->count, requested, count, values);
}

cudnnStatus_t Finalize(cudnnBackendDescriptor_t h) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::shared_ptr<Desc> d;
  cudnnStatus_t s = Resolve(h, &d);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  s = FinalizeLocked(*d);
  if (s == CUDNN_STATUS_SUCCESS) d->finalized = true;
  return s;
}

cudnnStatus_t PrepareLaunch(cudnnBackendDescriptor_t planHandle, cudnnBackendDescriptor_t packHandle, Launch* out) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::shared_ptr<Desc> plan, pack;
  cudnnStatus_t s = Resolve(planHandle, &plan);
  if (s == CUDNN_STATUS_SUCCESS) s = Resolve(packHandle, &pack);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return Fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                std::string("cudnnBackendExecute takes an execution plan and a variant pack, not a ") +
                    DescriptorName(plan->type) + " and a " + DescriptorName(pack->type));
  if (!plan->finalized || !pack->finalized)
    return Fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, std::string("cudnnBackendExecute with a ") +
                                                          (plan->finalized ? "variant pack" : "plan") +
                                                          " that is not finalized");
  out->attention = plan->attention;
  std::vector<int64_t> uids = pack->Ints(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const AttrValue* ptrs = pack->Find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  for (size_t i = 0; i < uids.size(); ++i) {
    void* p;
    memcpy(&p, ptrs->bytes.data() + i * sizeof p, sizeof p);
    out->pointers[uids[i]] = p;
  }
  if (const AttrValue* ws = pack->Find(CUDNN_ATTR_VARIANT_PACK_WORKSPACE); ws && ws->count == 1)
    memcpy(&out->workspace, ws->bytes.data(), sizeof out->workspace);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace cudnn
}  // namespace gpusim

// cuDNN backend graphs for the shim's tests, built call by call the way cudnn-frontend 1.x
// builds them for sdpa() / sdpa_backward() on cuDNN 9.13 (include/cudnn_frontend/node/
// scaled_dot_product_flash_attention.h, diagonal_band_mask.h, softmax.h; the builders in
// cudnn_frontend_Tensor.h / _Operation.h / _OperationGraph.h / _Heuristics.h /
// _ExecutionPlan.h and backend/plan_helpers.h, execution_helpers.h), written by hand against
// the shim's headers.
#ifndef GPUSIM_SHIM_TEST_CUDNN_GRAPHS_H
#define GPUSIM_SHIM_TEST_CUDNN_GRAPHS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cudnn.h"

namespace cudnntest {

using Descriptor = cudnnBackendDescriptor_t;

// Creates descriptors, remembers the first failing call, destroys everything at the end.
class Backend {
 public:
  ~Backend() {
    for (Descriptor d : all_) cudnnBackendDestroyDescriptor(d);
  }
  bool ok() const { return first_ == CUDNN_STATUS_SUCCESS; }
  cudnnStatus_t status() const { return first_; }
  const std::string& where() const { return where_; }
  cudnnStatus_t Note(cudnnStatus_t s, const std::string& what) {
    if (s != CUDNN_STATUS_SUCCESS && ok()) {
      first_ = s;
      where_ = what;
    }
    return s;
  }

  Descriptor Make(cudnnBackendDescriptorType_t type) {
    Descriptor d = nullptr;
    Note(cudnnBackendCreateDescriptor(type, &d), "create descriptor " + std::to_string((int)type));
    all_.push_back(d);
    return d;
  }
  void Set(Descriptor d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n, const void* v) {
    Note(cudnnBackendSetAttribute(d, name, type, n, v), "set attribute " + std::to_string((int)name));
  }
  void SetDesc(Descriptor d, cudnnBackendAttributeName_t name, Descriptor v) {
    if (v) Set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
  }
  void SetInt(Descriptor d, cudnnBackendAttributeName_t name, int64_t v) { Set(d, name, CUDNN_TYPE_INT64, 1, &v); }
  void Finalize(Descriptor d) { Note(cudnnBackendFinalize(d), "finalize"); }

  // cudnn_frontend_Tensor.h: data type, dims, strides, uid, alignment, virtual, by value.
  Descriptor Tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides, cudnnDataType_t dtype,
                    bool isVirtual = false, bool byValue = false) {
    Descriptor t = Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    Set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dtype);
    Set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, (int64_t)dims.size(), dims.data());
    Set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, (int64_t)strides.size(), strides.data());
    SetInt(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
    SetInt(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16);
    if (isVirtual) Set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &isVirtual);
    if (byValue) Set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byValue);
    Finalize(t);
    uids_[t] = uid;
    if (!isVirtual) (byValue ? byValue_ : device_).push_back(uid);
    return t;
  }
  // A row-major virtual tensor with its own uid.
  Descriptor Virtual(std::vector<int64_t> dims, cudnnDataType_t dtype = CUDNN_DATA_FLOAT) {
    std::vector<int64_t> strides(dims.size(), 1);
    for (int i = (int)dims.size() - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
    return Tensor(nextVirtual_++, dims, strides, dtype, true);
  }
  // A scalar passed by value (host memory in the variant pack).
  Descriptor Scalar(int64_t uid, cudnnDataType_t dtype) {
    return Tensor(uid, {1, 1, 1, 1}, {1, 1, 1, 1}, dtype, false, true);
  }

  // cudnn_frontend_PointWiseDesc.h + build_pointwise_op: x, y, alphas, b, t.
  Descriptor Pointwise(cudnnPointwiseMode_t mode, Descriptor x, Descriptor b, Descriptor y, Descriptor t = nullptr,
                       int64_t axis = -1) {
    Descriptor pw = Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    Set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    Set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (axis >= 0) SetInt(pw, CUDNN_ATTR_POINTWISE_AXIS, axis);
    Finalize(pw);
    Descriptor op = Make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    float one = 1, zero = 0;
    Set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    Set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, b ? &one : &zero);
    SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    Finalize(op);
    return op;
  }
  Descriptor Matmul(Descriptor a, Descriptor b, Descriptor c) {
    Descriptor mm = Make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    Set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    Finalize(mm);
    Descriptor op = Make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    Finalize(op);
    return op;
  }
  Descriptor Reduction(cudnnReduceTensorOp_t red, Descriptor x, Descriptor y) {
    Descriptor r = Make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    Set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    Set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &red);
    Finalize(r);
    Descriptor op = Make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r);
    SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    Finalize(op);
    return op;
  }
  Descriptor Reshape(Descriptor x, Descriptor y) {
    Descriptor op = Make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    SetDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    Finalize(op);
    return op;
  }

  // cudnn_frontend_OperationGraph.h: ops, handle, finalize.
  Descriptor Graph(cudnnHandle_t handle, const std::vector<Descriptor>& ops) {
    Descriptor g = Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    Set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, (int64_t)ops.size(), ops.data());
    Set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    Finalize(g);
    return g;
  }

  // Graph::build: heuristics (mode A) -> engine configs -> notes -> check_support (workspace,
  // shared memory) -> execution plan -> its workspace size. Null if a step fails.
  Descriptor Plan(Descriptor graph, int64_t* workspace) {
    int64_t engines = 0;
    Note(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, nullptr,
                                  &engines),
         "engine global count");
    Descriptor heur = Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    SetDesc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    Set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    int32_t sms = 132;
    Set(heur, CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET, CUDNN_TYPE_INT32, 1, &sms);
    if (Note(cudnnBackendFinalize(heur), "finalize heuristics") != CUDNN_STATUS_SUCCESS) return nullptr;
    int64_t count = -1;
    Note(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                  nullptr),
         "heuristics result count");
    if (count < 1) return nullptr;
    std::vector<Descriptor> configs;
    for (int64_t i = 0; i < count; ++i) configs.push_back(Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    int64_t got = 0;
    Note(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                  configs.data()),
         "heuristics results");
    Descriptor config = configs[0];
    Descriptor engine = Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t n = 0;
    Note(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine),
         "engine of config");
    Note(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                  CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, nullptr),
         "numerical notes");
    Note(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                  CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, nullptr),
         "behavior notes");
    int32_t smem = -1;
    Note(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED, CUDNN_TYPE_INT32, 1, nullptr, &smem),
         "shared memory");
    int64_t configWorkspace = -1;
    Note(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, nullptr,
                                  &configWorkspace),
         "config workspace");
    Descriptor plan = Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    SetDesc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
    if (Note(cudnnBackendFinalize(plan), "finalize plan") != CUDNN_STATUS_SUCCESS) return nullptr;
    Note(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, nullptr,
                                  workspace),
         "plan workspace");
    if (*workspace != configWorkspace) Note(CUDNN_STATUS_INTERNAL_ERROR, "plan and config workspaces differ");
    return plan;
  }

  // execution_helpers.h create_variant_pack: workspace, pointers, uids; then execute. Device
  // tensors all get `device`; by-value scalars their host values.
  cudnnStatus_t Execute(cudnnHandle_t handle, Descriptor plan, void* device, void* workspace,
                        const std::map<int64_t, const void*>& values) {
    std::vector<int64_t> uids;
    std::vector<void*> ptrs;
    for (int64_t uid : device_) {
      uids.push_back(uid);
      ptrs.push_back(device);
    }
    for (int64_t uid : byValue_) {
      uids.push_back(uid);
      auto it = values.find(uid);
      ptrs.push_back(const_cast<void*>(it == values.end() ? nullptr : it->second));
    }
    Descriptor pack = Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    Set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    Set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, (int64_t)ptrs.size(), ptrs.data());
    Set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, (int64_t)uids.size(), uids.data());
    Finalize(pack);
    return cudnnBackendExecute(handle, plan, pack);
  }

 private:
  std::vector<Descriptor> all_;
  std::map<Descriptor, int64_t> uids_;
  std::vector<int64_t> device_, byValue_;  // non-virtual tensors, unique per uid
  int64_t nextVirtual_ = 1000;
  cudnnStatus_t first_ = CUDNN_STATUS_SUCCESS;
  std::string where_;
};

// Attention geometry and options, as cudnn-frontend's SDPA_attributes take them.
struct Sdpa {
  int64_t b = 2, hq = 8, hk = 8, sq = 256, skv = 256, d = 64;
  cudnnDataType_t dtype = CUDNN_DATA_BFLOAT16;
  bool causal = false;         // set_diagonal_band_right_bound(0)
  bool bottomRight = false;    // set_diagonal_alignment(BOTTOM_RIGHT)
  int64_t window = 0;          // set_diagonal_band_left_bound(window), 0: none
  bool stats = true;           // set_generate_stats (training forward)
  bool scaledOutput = false;   // FP8: P V is descaled / scaled by pointwise operations into O
  bool deterministic = false;  // set_deterministic_algorithm: dQ written directly, no FP32 dQ_accum
};

// Tensor uids (the frontend's samples number them the same way).
enum : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kDO = 101,
  kDQ,
  kDK,
  kDV,
  kDQAccum,
  kScale = 201,
  kNegInf,
  kRowShift,
  kColShift,
  kWindow,
  kOne,
  kSoftmaxSum
};

// Host values for the by-value scalars of an Sdpa's graphs.
struct Scalars {
  float scale = 0.125f, negInf = -1e30f, window = 0, one = 1;
  int32_t skv = 0, sq = 0;
  explicit Scalars(const Sdpa& a) : window((float)a.window), skv((int32_t)a.skv), sq((int32_t)a.sq) {}
  std::map<int64_t, const void*> Map() const {
    return {{kScale, &scale}, {kNegInf, &negInf}, {kRowShift, &skv},
            {kColShift, &sq}, {kWindow, &window}, {kOne, &one}};
  }
};

inline std::vector<int64_t> Contiguous(const std::vector<int64_t>& d) {
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

// The masks of the score tensor S (CompositeDiagonalBandMaskNode, cuDNN < 9.21): query index
// (+ s_kv - s_q bottom-right) >= key index; key index + window > query index.
inline Descriptor Masks(Backend& be, const Sdpa& a, Descriptor s, std::vector<Descriptor>* ops) {
  std::vector<int64_t> dims = {a.b, a.hq, a.sq, a.skv};
  Descriptor negInf = be.Scalar(kNegInf, CUDNN_DATA_FLOAT);
  auto index = [&](int64_t axis) {
    Descriptor idx = be.Virtual(dims, CUDNN_DATA_INT32);
    ops->push_back(be.Pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, idx, nullptr, axis));
    return idx;
  };
  auto select = [&](cudnnPointwiseMode_t cmp, Descriptor lhs, Descriptor rhs) {
    Descriptor mask = be.Virtual(dims, CUDNN_DATA_BOOLEAN);
    ops->push_back(be.Pointwise(cmp, lhs, rhs, mask));
    Descriptor out = be.Virtual(dims);
    ops->push_back(be.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, negInf, out, mask));
    s = out;
  };
  if (a.causal) {
    Descriptor row = index(2), col = index(3);
    if (a.bottomRight) {
      Descriptor plus = be.Virtual(dims, CUDNN_DATA_INT32), minus = be.Virtual(dims, CUDNN_DATA_INT32);
      ops->push_back(be.Pointwise(CUDNN_POINTWISE_ADD, row, be.Scalar(kRowShift, CUDNN_DATA_INT32), plus));
      ops->push_back(be.Pointwise(CUDNN_POINTWISE_SUB, plus, be.Scalar(kColShift, CUDNN_DATA_INT32), minus));
      row = minus;
    }
    select(CUDNN_POINTWISE_CMP_GE, row, col);
  }
  if (a.window > 0) {
    Descriptor row = index(2), col = index(3);
    Descriptor shifted = be.Virtual(dims, CUDNN_DATA_FLOAT);
    ops->push_back(be.Pointwise(CUDNN_POINTWISE_ADD, col, be.Scalar(kWindow, CUDNN_DATA_FLOAT), shifted));
    select(CUDNN_POINTWISE_CMP_GT, shifted, row);
  }
  return s;
}

// CompositeSDPANode: S = Q K^T, scale, masks, softmax (with stats), O = P V.
inline std::vector<Descriptor> ForwardOps(Backend& be, const Sdpa& a) {
  std::vector<Descriptor> ops;
  Descriptor q = be.Tensor(kQ, {a.b, a.hq, a.sq, a.d}, Contiguous({a.b, a.hq, a.sq, a.d}), a.dtype);
  std::vector<int64_t> ks = Contiguous({a.b, a.hk, a.skv, a.d});
  Descriptor kt = be.Tensor(kK, {a.b, a.hk, a.d, a.skv}, {ks[0], ks[1], ks[3], ks[2]}, a.dtype);  // K, transposed
  Descriptor v = be.Tensor(kV, {a.b, a.hk, a.skv, a.d}, Contiguous({a.b, a.hk, a.skv, a.d}), a.dtype);
  std::vector<int64_t> sdims = {a.b, a.hq, a.sq, a.skv}, rows = {a.b, a.hq, a.sq, 1};
  Descriptor s = be.Virtual(sdims);
  ops.push_back(be.Matmul(q, kt, s));
  Descriptor scaled = be.Virtual(sdims);
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_MUL, s, be.Scalar(kScale, CUDNN_DATA_FLOAT), scaled));
  s = Masks(be, a, scaled, &ops);
  Descriptor max = be.Virtual(rows), sub = be.Virtual(sdims), e = be.Virtual(sdims), sum = be.Virtual(rows);
  ops.push_back(be.Reduction(CUDNN_REDUCE_TENSOR_MAX, s, max));
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_SUB, s, max, sub));
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, e));
  ops.push_back(be.Reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum));
  if (a.stats) {
    Descriptor log = be.Virtual(rows);
    ops.push_back(be.Pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, log));
    ops.push_back(
        be.Pointwise(CUDNN_POINTWISE_ADD, max, log, be.Tensor(kStats, rows, Contiguous(rows), CUDNN_DATA_FLOAT)));
  }
  Descriptor p = be.Virtual(sdims, a.dtype);
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_DIV, e, sum, p));
  std::vector<int64_t> od = {a.b, a.hq, a.sq, a.d};
  Descriptor o = be.Tensor(kO, od, Contiguous(od), a.dtype);
  if (a.scaledOutput) {
    Descriptor pv = be.Virtual(od);
    ops.push_back(be.Matmul(p, v, pv));
    ops.push_back(be.Pointwise(CUDNN_POINTWISE_MUL, pv, be.Scalar(kOne, CUDNN_DATA_FLOAT), o));
  } else {
    ops.push_back(be.Matmul(p, v, o));
  }
  return ops;
}

// CompositeSDPABackwardNode: softmax_sum = rowsum(dO * O); P = exp(scale Q K^T, masked - stats);
// dV = P^T dO; dS = P (dO V^T - softmax_sum) scale; dK = dS^T Q; dQ = dS K (K reshaped back;
// into an FP32 accumulator unless deterministic).
// With fewer K/V heads, dK and dV are reduced over the head groups.
inline std::vector<Descriptor> BackwardOps(Backend& be, const Sdpa& a) {
  std::vector<Descriptor> ops;
  std::vector<int64_t> qd = {a.b, a.hq, a.sq, a.d}, kd = {a.b, a.hk, a.skv, a.d};
  std::vector<int64_t> sdims = {a.b, a.hq, a.sq, a.skv}, tdims = {a.b, a.hq, a.skv, a.sq}, rows = {a.b, a.hq, a.sq, 1};
  std::vector<int64_t> ks = Contiguous(kd);
  Descriptor q = be.Tensor(kQ, qd, Contiguous(qd), a.dtype);
  Descriptor kt = be.Tensor(kK, {a.b, a.hk, a.d, a.skv}, {ks[0], ks[1], ks[3], ks[2]}, a.dtype);
  Descriptor vt = be.Tensor(kV, {a.b, a.hk, a.d, a.skv}, {ks[0], ks[1], ks[3], ks[2]}, a.dtype);
  Descriptor o = be.Tensor(kO, qd, Contiguous(qd), a.dtype);
  Descriptor dO = be.Tensor(kDO, qd, Contiguous(qd), a.dtype);
  Descriptor stats = be.Tensor(kStats, rows, Contiguous(rows), CUDNN_DATA_FLOAT);
  Descriptor scale = be.Scalar(kScale, CUDNN_DATA_FLOAT);

  Descriptor dOO = be.Virtual(qd), rowSum = be.Virtual(rows);
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_MUL, dO, o, dOO));
  ops.push_back(be.Reduction(CUDNN_REDUCE_TENSOR_ADD, dOO, rowSum));
  Descriptor softmaxSum = be.Tensor(kSoftmaxSum, rows, Contiguous(rows), CUDNN_DATA_FLOAT);  // in the workspace
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_MUL, rowSum, be.Scalar(kOne, CUDNN_DATA_FLOAT), softmaxSum));

  Descriptor s = be.Virtual(sdims), scaled = be.Virtual(sdims);
  ops.push_back(be.Matmul(q, kt, s));
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_MUL, s, scale, scaled));
  s = Masks(be, a, scaled, &ops);
  Descriptor sub = be.Virtual(sdims), p = be.Virtual(sdims);
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_SUB, s, stats, sub));
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, p));

  auto headSum = [&](Descriptor full, int64_t uid, const std::vector<int64_t>& dims) {  // GQA: dK, dV
    ops.push_back(be.Reduction(CUDNN_REDUCE_TENSOR_ADD, full, be.Tensor(uid, dims, Contiguous(dims), a.dtype)));
  };
  std::vector<int64_t> tstrides = {a.hq * a.sq * a.skv, a.sq * a.skv, 1, a.skv};
  Descriptor pt = be.Tensor(2000, tdims, tstrides, a.dtype, true);
  ops.push_back(be.Reshape(p, pt));
  if (a.hq == a.hk) {
    ops.push_back(be.Matmul(pt, dO, be.Tensor(kDV, kd, Contiguous(kd), a.dtype)));
  } else {
    Descriptor full = be.Virtual({a.b, a.hq, a.skv, a.d}, a.dtype);
    ops.push_back(be.Matmul(pt, dO, full));
    headSum(full, kDV, kd);
  }
  Descriptor dP = be.Virtual(sdims), dPs = be.Virtual(sdims), dS = be.Virtual(sdims), dSs = be.Virtual(sdims, a.dtype);
  ops.push_back(be.Matmul(dO, vt, dP));
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_SUB, dP, softmaxSum, dPs));
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_MUL, dPs, p, dS));
  ops.push_back(be.Pointwise(CUDNN_POINTWISE_MUL, dS, scale, dSs));
  Descriptor dSt = be.Tensor(2001, tdims, tstrides, a.dtype, true);
  ops.push_back(be.Reshape(dSs, dSt));
  if (a.hq == a.hk) {
    ops.push_back(be.Matmul(dSt, q, be.Tensor(kDK, kd, Contiguous(kd), a.dtype)));
  } else {
    Descriptor full = be.Virtual({a.b, a.hq, a.skv, a.d}, a.dtype);
    ops.push_back(be.Matmul(dSt, q, full));
    headSum(full, kDK, kd);
  }
  Descriptor k = be.Tensor(2002, kd, Contiguous(kd), a.dtype, true);
  ops.push_back(be.Reshape(kt, k));
  Descriptor dQ = be.Tensor(kDQ, qd, Contiguous(qd), a.dtype);
  if (a.deterministic) {
    ops.push_back(be.Matmul(dSs, k, dQ));
  } else {  // dQ accumulated in FP32 (in cudnn-frontend's workspace), then converted
    Descriptor accum = be.Tensor(kDQAccum, qd, Contiguous(qd), CUDNN_DATA_FLOAT);
    ops.push_back(be.Matmul(dSs, k, accum));
    ops.push_back(be.Pointwise(CUDNN_POINTWISE_IDENTITY, accum, nullptr, dQ));
  }
  return ops;
}

}  // namespace cudnntest

#endif

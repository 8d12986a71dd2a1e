// Scaled-dot-product attention in cuDNN operation graphs: which graphs are attention, their
// geometry and mask, and the one fused kernel the shim records when a plan for one executes.
//
// cudnn-frontend (1.x, with cuDNN below 9.21) lowers sdpa() and sdpa_backward() to "composite"
// graphs of matmul, pointwise, reduction, reshape and RNG operations
// (include/cudnn_frontend/node/scaled_dot_product_flash_attention.h):
//   forward:  S = Q K^T (K given transposed, [b, h_k, d, s_kv]) -> scale, masks -> softmax
//             (max, sub, exp, sum, div; stats) -> dropout -> O = P V
//   backward: dO.O row sums; S = Q K^T -> scale, masks -> exp(S - stats) = P; dV = P^T dO;
//             dP = dO V^T (V given transposed) -> dS; dK = dS^T Q; dQ = dS K
//             (with fewer K/V heads than Q heads, dK / dV are reduced over the head groups)
// Causal and sliding-window masks are pointwise: generated row / column indices, shifted by
// scalars, compared, and a binary select with -inf. From cuDNN 9.13.1 a plain forward may also
// be one CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR (Q, K, V, O, stats, scale; no mask).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "cudnn-internal.h"
#include "shim.h"

namespace gpusim {
namespace cudnn {

namespace {

// One operation of a graph by the roles of its tensors (uids; -1 when absent).
struct Node {
  cudnnBackendDescriptorType_t type;
  int mode = -1;                           // pointwise mode or reduction operator
  int64_t axis = -1;                       // pointwise GEN_INDEX
  int64_t x = -1, b = -1, t = -1, y = -1;  // pointwise x, b, mask t, y; matmul A, B -> C (x, b -> y)
  std::vector<int64_t> in, out;
};

const char* PointwiseName(int mode) {
  switch (mode) {
    case CUDNN_POINTWISE_ADD: return "add";
    case CUDNN_POINTWISE_ADD_SQUARE: return "add_square";
    case CUDNN_POINTWISE_DIV: return "div";
    case CUDNN_POINTWISE_MAX: return "max";
    case CUDNN_POINTWISE_MIN: return "min";
    case CUDNN_POINTWISE_MOD: return "mod";
    case CUDNN_POINTWISE_MUL: return "mul";
    case CUDNN_POINTWISE_POW: return "pow";
    case CUDNN_POINTWISE_SUB: return "sub";
    case CUDNN_POINTWISE_ABS: return "abs";
    case CUDNN_POINTWISE_EXP: return "exp";
    case CUDNN_POINTWISE_LOG: return "log";
    case CUDNN_POINTWISE_NEG: return "neg";
    case CUDNN_POINTWISE_RSQRT: return "rsqrt";
    case CUDNN_POINTWISE_SQRT: return "sqrt";
    case CUDNN_POINTWISE_IDENTITY: return "identity";
    case CUDNN_POINTWISE_RECIPROCAL: return "reciprocal";
    case CUDNN_POINTWISE_RELU_FWD: return "relu";
    case CUDNN_POINTWISE_TANH_FWD: return "tanh";
    case CUDNN_POINTWISE_SIGMOID_FWD: return "sigmoid";
    case CUDNN_POINTWISE_GELU_FWD: return "gelu";
    case CUDNN_POINTWISE_CMP_EQ: return "cmp_eq";
    case CUDNN_POINTWISE_CMP_NEQ: return "cmp_neq";
    case CUDNN_POINTWISE_CMP_GT: return "cmp_gt";
    case CUDNN_POINTWISE_CMP_GE: return "cmp_ge";
    case CUDNN_POINTWISE_CMP_LT: return "cmp_lt";
    case CUDNN_POINTWISE_CMP_LE: return "cmp_le";
    case CUDNN_POINTWISE_LOGICAL_AND: return "logical_and";
    case CUDNN_POINTWISE_LOGICAL_OR: return "logical_or";
    case CUDNN_POINTWISE_LOGICAL_NOT: return "logical_not";
    case CUDNN_POINTWISE_GEN_INDEX: return "gen_index";
    case CUDNN_POINTWISE_BINARY_SELECT: return "binary_select";
    default: return nullptr;
  }
}

const char* ReductionName(int op) {
  switch (op) {
    case CUDNN_REDUCE_TENSOR_ADD: return "add";
    case CUDNN_REDUCE_TENSOR_MUL: return "mul";
    case CUDNN_REDUCE_TENSOR_MIN: return "min";
    case CUDNN_REDUCE_TENSOR_MAX: return "max";
    case CUDNN_REDUCE_TENSOR_AMAX: return "amax";
    case CUDNN_REDUCE_TENSOR_AVG: return "avg";
    default: return nullptr;
  }
}

// How an operation is named in messages: "matmul", "pointwise exp", "reduction max", ...
std::string OperationLabel(const Desc& op) {
  switch (op.type) {
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return "matmul";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
      int64_t mode = -1;
      if (const Desc* pw = op.Ref(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR))
        pw->Scalar(CUDNN_ATTR_POINTWISE_MODE, &mode);
      const char* n = PointwiseName((int)mode);
      return n ? std::string("pointwise ") + n : "pointwise mode " + std::to_string(mode);
    }
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: {
      int64_t red = -1;
      if (const Desc* r = op.Ref(CUDNN_ATTR_OPERATION_REDUCTION_DESC)) r->Scalar(CUDNN_ATTR_REDUCTION_OPERATOR, &red);
      const char* n = ReductionName((int)red);
      return n ? std::string("reduction ") + n : "reduction operator " + std::to_string(red);
    }
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR: return "rng";
    default: return DescriptorName(op.type);
  }
}

// The graph's operations as role-annotated nodes, and its tensors.
struct Graph {
  std::vector<Node> nodes;
  std::map<int64_t, TensorInfo> tensors;
  std::map<int64_t, int> producer;  // tensor uid -> node
  std::string unsupportedOp;        // the first operation kind the shim cannot take part of attention

  int64_t Add(const Desc* tensor, std::vector<int64_t>* list) {
    if (!tensor) return -1;
    TensorInfo t = ReadTensor(*tensor);
    tensors.emplace(t.uid, t);
    list->push_back(t.uid);
    return t.uid;
  }

  void Build(const std::vector<const Desc*>& ops) {
    for (const Desc* op : ops) {
      Node n;
      n.type = op->type;
      switch (op->type) {
        case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
          n.x = Add(op->Ref(CUDNN_ATTR_OPERATION_MATMUL_ADESC), &n.in);
          n.b = Add(op->Ref(CUDNN_ATTR_OPERATION_MATMUL_BDESC), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC), &n.in);
          n.y = Add(op->Ref(CUDNN_ATTR_OPERATION_MATMUL_CDESC), &n.out);
          break;
        case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
          const Desc* pw = op->Ref(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
          int64_t mode = -1;
          pw->Scalar(CUDNN_ATTR_POINTWISE_MODE, &mode);
          n.mode = (int)mode;
          pw->Scalar(CUDNN_ATTR_POINTWISE_AXIS, &n.axis);
          n.x = Add(op->Ref(CUDNN_ATTR_OPERATION_POINTWISE_XDESC), &n.in);
          n.b = Add(op->Ref(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), &n.in);
          n.t = Add(op->Ref(CUDNN_ATTR_OPERATION_POINTWISE_TDESC), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC), &n.in);
          n.y = Add(op->Ref(CUDNN_ATTR_OPERATION_POINTWISE_YDESC), &n.out);
          Add(op->Ref(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC), &n.out);
          break;
        }
        case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: {
          int64_t red = -1;
          op->Ref(CUDNN_ATTR_OPERATION_REDUCTION_DESC)->Scalar(CUDNN_ATTR_REDUCTION_OPERATOR, &red);
          n.mode = (int)red;
          n.x = Add(op->Ref(CUDNN_ATTR_OPERATION_REDUCTION_XDESC), &n.in);
          n.y = Add(op->Ref(CUDNN_ATTR_OPERATION_REDUCTION_YDESC), &n.out);
          break;
        }
        case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
          n.x = Add(op->Ref(CUDNN_ATTR_OPERATION_RESHAPE_XDESC), &n.in);
          n.y = Add(op->Ref(CUDNN_ATTR_OPERATION_RESHAPE_YDESC), &n.out);
          break;
        case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR:  // dropout masks
          Add(op->Ref(CUDNN_ATTR_OPERATION_RNG_SEED), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC), &n.in);
          n.y = Add(op->Ref(CUDNN_ATTR_OPERATION_RNG_YDESC), &n.out);
          break;
        case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
          Add(op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC), &n.in);
          Add(op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC), &n.out);
          Add(op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC), &n.out);
          break;
        default:
          if (unsupportedOp.empty()) unsupportedOp = DescriptorName(op->type);
          break;
      }
      for (int64_t uid : n.out) producer.emplace(uid, (int)nodes.size());
      nodes.push_back(n);
    }
  }

  const TensorInfo& T(int64_t uid) const { return tensors.at(uid); }
  const Node* Producer(int64_t uid) const {
    auto it = producer.find(uid);
    return it == producer.end() ? nullptr : &nodes[it->second];
  }
  // A tensor the program passes in: not virtual, made by no operation of the graph.
  bool IsInput(int64_t uid) const { return uid >= 0 && !T(uid).isVirtual && !Producer(uid); }
  bool IsPointwise(const Node* n, int mode) const {
    return n && n->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR && n->mode == mode;
  }

  // Nodes that (transitively) produce uid, and nodes that (transitively) consume it.
  std::set<int> Upstream(int64_t uid) const {
    std::set<int> seen;
    std::vector<int64_t> work{uid};
    while (!work.empty()) {
      int64_t u = work.back();
      work.pop_back();
      auto it = producer.find(u);
      if (it == producer.end() || !seen.insert(it->second).second) continue;
      for (int64_t v : nodes[it->second].in) work.push_back(v);
    }
    return seen;
  }
  std::set<int> Downstream(int64_t uid) const {
    std::set<int> seen;
    std::set<int64_t> reached{uid};
    bool grew = true;
    while (grew) {
      grew = false;
      for (int i = 0; i < (int)nodes.size(); ++i) {
        if (seen.count(i)) continue;
        for (int64_t v : nodes[i].in)
          if (reached.count(v)) {
            seen.insert(i);
            reached.insert(nodes[i].out.begin(), nodes[i].out.end());
            grew = true;
            break;
          }
      }
    }
    return seen;
  }
  // Is there an exponential (the softmax) after `from` and before `to`?
  bool ExpBetween(int64_t from, int64_t to) const {
    std::set<int> down = Downstream(from);
    for (int i : Upstream(to))
      if (down.count(i) && nodes[i].type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
          nodes[i].mode == CUDNN_POINTWISE_EXP)
        return true;
    return false;
  }
  bool ExpAfter(int64_t from) const {
    for (int i : Downstream(from))
      if (IsPointwise(&nodes[i], CUDNN_POINTWISE_EXP)) return true;
    return false;
  }
  // Is uid the tensor source, or computed from it?
  bool DerivesFrom(int64_t uid, int64_t source) const {
    if (uid == source) return true;
    for (int i : Upstream(uid))
      if (std::find(nodes[i].in.begin(), nodes[i].in.end(), source) != nodes[i].in.end()) return true;
    return false;
  }
  bool ExpBefore(int64_t to) const {
    for (int i : Upstream(to))
      if (IsPointwise(&nodes[i], CUDNN_POINTWISE_EXP)) return true;
    return false;
  }
};

// An attention score row / column index shifted by program-given scalars:
// GEN_INDEX(axis 2 = query, 3 = key), then ADD / SUB of input tensors.
bool IndexExpr(const Graph& g, int64_t uid, int64_t* axis, std::vector<std::pair<int64_t, int>>* terms,
               AttentionGraph* att) {
  const Node* n = g.Producer(uid);
  if (!n || n->type != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) return false;
  if (n->mode == CUDNN_POINTWISE_GEN_INDEX) {
    *axis = n->axis;
    return n->axis == 2 || n->axis == 3;
  }
  if (n->mode != CUDNN_POINTWISE_ADD && n->mode != CUDNN_POINTWISE_SUB) return false;
  int sign = n->mode == CUDNN_POINTWISE_ADD ? 1 : -1;
  int64_t index = n->x, shift = n->b;
  if (!g.IsInput(shift) && sign > 0) std::swap(index, shift);
  if (!g.IsInput(shift) || !IndexExpr(g, index, axis, terms, att)) return false;
  terms->push_back({shift, sign});
  if (g.T(shift).byValue) att->byValue[shift] = g.T(shift);
  return true;
}

// Band constraints of the masks: comparisons of a query index and a key index that select
// scores (directly, or and-ed with other masks).
void CollectBounds(const Graph& g, int64_t mask, AttentionGraph* att, int depth = 0) {
  const Node* n = g.Producer(mask);
  if (!n || n->type != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR || depth > 16) return;
  if (n->mode == CUDNN_POINTWISE_LOGICAL_AND) {
    CollectBounds(g, n->x, att, depth + 1);
    CollectBounds(g, n->b, att, depth + 1);
    return;
  }
  bool greater = n->mode == CUDNN_POINTWISE_CMP_GT || n->mode == CUDNN_POINTWISE_CMP_GE;
  bool less = n->mode == CUDNN_POINTWISE_CMP_LT || n->mode == CUDNN_POINTWISE_CMP_LE;
  if (!greater && !less) return;
  int64_t ax = -1, bx = -1;
  std::vector<std::pair<int64_t, int>> at, bt;
  AttentionGraph scratch;
  if (!IndexExpr(g, n->x, &ax, &at, &scratch) || !IndexExpr(g, n->b, &bx, &bt, &scratch) || ax == bx) return;
  // x (cmp) b with one side the query index i and the other the key index j, each plus
  // offsets: i + oi (cmp) j + oj. As a bound on j - i: "x is i and >" or "x is j and <"
  // bounds j - i from above.
  bool xIsQuery = ax == 2;
  BandBound bound;
  bound.upper = xIsQuery == greater;
  int sign = xIsQuery ? 1 : -1;  // value = oi - oj
  for (auto& term : at) bound.terms.push_back({term.first, sign * term.second});
  for (auto& term : bt) bound.terms.push_back({term.first, -sign * term.second});
  att->mask.push_back(bound);
  att->byValue.insert(scratch.byValue.begin(), scratch.byValue.end());
}

bool Supported(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_FP8_E4M3:
    case CUDNN_DATA_FP8_E5M2: return true;
    default: return false;
  }
}

// Records why a graph is not attention; returns false.
bool Reject(std::string* why, const std::string& reason) {
  *why = reason;
  return false;
}

std::string Dims(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// Geometry from Q [b, h_q, s_q, d_qk], K [b, h_k, s_kv, d_qk] (kT: given as [b, h_k, d_qk, s_kv]),
// V [b, h_v, s_kv, d_v] (vT: [b, h_v, d_v, s_kv]).
bool Geometry(const TensorInfo& q, const TensorInfo& k, bool kT, const TensorInfo& v, bool vT, AttentionGraph* a,
              std::string* why) {
  if (q.dims.size() != 4 || k.dims.size() != 4 || v.dims.size() != 4)
    return Reject(
        why, "Q, K and V must be 4-D [b, h, s, d]; got " + Dims(q.dims) + ", " + Dims(k.dims) + ", " + Dims(v.dims));
  a->b = q.dims[0];
  a->hq = q.dims[1];
  a->sq = q.dims[2];
  a->dqk = q.dims[3];
  a->hk = k.dims[1];
  a->skv = k.dims[kT ? 3 : 2];
  a->hv = v.dims[1];
  a->dv = v.dims[vT ? 2 : 3];
  bool ok = k.dims[0] == a->b && v.dims[0] == a->b && k.dims[kT ? 2 : 3] == a->dqk && v.dims[vT ? 3 : 2] == a->skv;
  if (!ok) return Reject(why, "Q " + Dims(q.dims) + ", K " + Dims(k.dims) + " and V " + Dims(v.dims) + " do not match");
  if (a->hq % a->hk || a->hq % a->hv) return Reject(why, "query heads not a multiple of key / value heads");
  a->dtype = q.dtype;
  if (!Supported(a->dtype)) return Reject(why, "data type " + std::to_string((int)a->dtype));
  return true;
}

bool Forward(const Graph& g, const std::vector<int>& mm, AttentionGraph* a, std::string* why) {
  // S = Q K^T takes two program tensors; O = P V takes P from S through the softmax (with FP8,
  // O is then descaled and scaled by pointwise operations).
  const Node *s = nullptr, *o = nullptr;
  for (int i : mm) (g.IsInput(g.nodes[i].x) && g.IsInput(g.nodes[i].b) ? s : o) = &g.nodes[i];
  if (!s || !o) return Reject(why, "no Q K^T and P V matmul pair");
  if (!g.IsInput(o->b)) return Reject(why, "the second matmul does not read V");
  if (!g.ExpBetween(s->y, o->x)) return Reject(why, "no softmax between the two matmuls");
  const TensorInfo &q = g.T(s->x), &k = g.T(s->b), &v = g.T(o->b), &out = g.T(o->y);
  if (!Geometry(q, k, true, v, false, a, why)) return false;
  if (out.dims != std::vector<int64_t>{a->b, a->hq, a->sq, a->dv}) return Reject(why, "O is " + Dims(out.dims));
  return true;
}

bool Backward(const Graph& g, const std::vector<int>& mm, AttentionGraph* a, std::string* why) {
  // Two matmuls take two program tensors: S = Q K^T (the exponential follows) and
  // dP = dO V^T; the other three (dV = P^T dO, dK = dS^T Q, dQ = dS K) take an operand that
  // comes after the exponential.
  const Node *s = nullptr, *dp = nullptr;
  std::vector<const Node*> others;
  for (int i : mm) {
    const Node& n = g.nodes[i];
    if (g.IsInput(n.x) && g.IsInput(n.b))
      (g.ExpAfter(n.y) ? s : dp) = &n;
    else if (g.ExpBefore(n.x) || g.ExpBefore(n.b))
      others.push_back(&n);
  }
  if (!s || !dp || others.size() != 3) return Reject(why, "not the five matmuls of an attention backward");
  if (!Geometry(g.T(s->x), g.T(s->b), true, g.T(dp->b), true, a, why)) return false;
  const TensorInfo& dO = g.T(dp->x);
  if (dO.dims != std::vector<int64_t>{a->b, a->hq, a->sq, a->dv}) return Reject(why, "dO is " + Dims(dO.dims));
  a->backward = true;
  // Workspace, as cudnn-frontend sizes the two implementations it chooses between
  // (CompositeSDPABackwardNode): by default the graph accumulates dQ = dS K in an FP32 tensor of
  // its own (in cudnn-frontend's part of the workspace) and the engine needs none; when dQ is
  // written directly (deterministic or dBias), the engine keeps dP in the workspace,
  // b h_q s_q s_kv 16-bit values.
  const Node* dq = nullptr;
  for (const Node* n : others)
    if (g.DerivesFrom(n->x, s->b) || g.DerivesFrom(n->b, s->b)) dq = n;
  bool ownAccumulator = dq && !g.T(dq->y).isVirtual && g.T(dq->y).dtype == CUDNN_DATA_FLOAT;
  a->workspaceBytes = ownAccumulator ? 0 : 2 * a->b * a->hq * a->sq * a->skv;
  return true;
}

double Half(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(m + 1024, e - 25);
  return h & 0x8000 ? -v : v;
}

// A value of type T at p (scalars arrive as untyped, possibly unaligned host memory).
template <class T>
T Load(const void* p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

// The value of a by-value scalar tensor (host memory, in its data type); 0 if unreadable.
double ScalarValue(const TensorInfo& t, const void* p) {
  if (!p) return 0;
  switch (t.dtype) {
    case CUDNN_DATA_FLOAT: return Load<float>(p);
    case CUDNN_DATA_DOUBLE: return Load<double>(p);
    case CUDNN_DATA_HALF: return Half(Load<uint16_t>(p));
    case CUDNN_DATA_BFLOAT16: {
      const uint32_t bits = (uint32_t)Load<uint16_t>(p) << 16;  // bf16 is a float's top half
      return Load<float>(&bits);
    }
    case CUDNN_DATA_INT32: return Load<int32_t>(p);
    case CUDNN_DATA_INT64: return (double)Load<int64_t>(p);
    default: return 0;
  }
}

// Share of the s_q x s_kv scores a band lo <= j - i <= hi keeps, as the area of that band in
// the s_q x s_kv rectangle (continuous: a causal mask keeps exactly half of a square, as the
// FLOP counts of FlashAttention and of gpusim's generator assume).
double KeptFraction(double sq, double skv, double lo, double hi) {
  auto ramp = [skv](double t) {  // integral of clamp(u, 0, skv) du from -inf to t
    return t <= 0 ? 0 : t <= skv ? t * t / 2 : skv * skv / 2 + skv * (t - skv);
  };
  auto below = [&](double c) { return ramp(sq + c) - ramp(c); };  // area of j - i <= c
  if (hi < lo) return 0;
  double upper = std::isinf(hi) ? sq * skv : below(hi);
  double lower = std::isinf(lo) ? 0 : below(lo);
  return std::max(0.0, upper - lower) / (sq * skv);
}

const char* TraceDtype(cudnnDataType_t t, int* bytes) {
  switch (t) {
    case CUDNN_DATA_HALF: *bytes = 2; return "f16";
    case CUDNN_DATA_BFLOAT16: *bytes = 2; return "bf16";
    case CUDNN_DATA_FP8_E4M3: *bytes = 1; return "f8e4m3";
    case CUDNN_DATA_FP8_E5M2: *bytes = 1; return "f8e5m2";
    default: *bytes = 4; return "f32";
  }
}

}  // namespace

std::string DescribeOperations(const std::vector<const Desc*>& ops) {
  // In graph order, repeats counted: [matmul x2, pointwise exp, ...].
  std::vector<std::pair<std::string, int>> seen;
  for (const Desc* op : ops) {
    std::string label = OperationLabel(*op);
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == label; });
    if (it == seen.end())
      seen.push_back({label, 1});
    else
      ++it->second;
  }
  std::string out = "[";
  for (size_t i = 0; i < seen.size(); ++i)
    out += (i ? ", " : "") + seen[i].first + (seen[i].second > 1 ? " x" + std::to_string(seen[i].second) : "");
  return out + "]";
}

std::shared_ptr<const AttentionGraph> RecognizeAttention(const std::vector<const Desc*>& ops, std::string* why) {
  Graph g;
  g.Build(ops);
  if (!g.unsupportedOp.empty()) {
    *why = "no emulation of " + g.unsupportedOp + " operations";
    return nullptr;
  }
  auto a = std::make_shared<AttentionGraph>();
  if (ops.size() == 1 && ops[0]->type == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR) {
    const Desc* op = ops[0];
    TensorInfo q = ReadTensor(*op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC));
    TensorInfo k = ReadTensor(*op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC));
    TensorInfo v = ReadTensor(*op->Ref(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC));
    if (!Geometry(q, k, false, v, false, a.get(), why)) return nullptr;
  } else {
    std::vector<int> mm;
    for (int i = 0; i < (int)g.nodes.size(); ++i) {
      if (g.nodes[i].type == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR) {
        *why = "an SDPA forward operation combined with other operations";
        return nullptr;
      }
      if (g.nodes[i].type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) mm.push_back(i);
    }
    bool ok = mm.size() == 2 ? Forward(g, mm, a.get(), why)
              : mm.size() == 5
                  ? Backward(g, mm, a.get(), why)
                  : Reject(why, std::to_string(mm.size()) + " matmuls (attention has 2 forward, 5 backward)");
    if (!ok) return nullptr;
    for (const Node& n : g.nodes)
      if (g.IsPointwise(&n, CUDNN_POINTWISE_BINARY_SELECT)) CollectBounds(g, n.t, a.get());
  }
  for (const auto& kv : g.tensors)
    if (!kv.second.isVirtual) a->required.push_back(kv.first);
  return a;
}

cudnnStatus_t ExecuteAttention(cudnnHandle_t handle, const Launch& launch) {
  const AttentionGraph* a = launch.attention.get();
  if (!a) return Fail(CUDNN_STATUS_INTERNAL_ERROR, "execution plan without a recognised graph");
  for (int64_t uid : a->required) {
    auto it = launch.pointers.find(uid);
    if (it == launch.pointers.end())
      return Fail(CUDNN_STATUS_BAD_PARAM, "the variant pack has no data pointer for tensor uid " + std::to_string(uid));
    if (!it->second)
      return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "null data pointer for tensor uid " + std::to_string(uid));
  }
  if (a->workspaceBytes > 0 && !launch.workspace)
    return Fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "the plan needs " + std::to_string(a->workspaceBytes) +
                                                         " bytes of workspace; the variant pack has none");
  // The mask's band, with the scalars the program passed by value.
  double lo = -INFINITY, hi = INFINITY;
  for (const BandBound& bound : a->mask) {
    double v = 0;
    for (const auto& term : bound.terms) {
      auto t = a->byValue.find(term.first);
      if (t != a->byValue.end()) v += term.second * ScalarValue(t->second, launch.pointers.at(term.first));
    }
    if (bound.upper)
      hi = std::min(hi, v);
    else
      lo = std::max(lo, v);
  }
  double kept = KeptFraction((double)a->sq, (double)a->skv, lo, hi);
  // The legacy default stream is the handle's device's (where cudnnCreate ran).
  StreamRef s{handle->device, 0};
  if (handle->stream && handle->stream != cudaStreamLegacy && !ResolveStream(handle->stream, &s))
    return Fail(CUDNN_STATUS_EXECUTION_FAILED_CUDART, "the handle's stream is not a live CUDA stream");
  if (Recording()) {
    int elt;
    const char* dtype = TraceDtype(a->dtype, &elt);
    // FLOPs as gpusim's training generator counts fused attention (AttentionCore): forward
    // 2 b h_q s_q s_kv (d_qk + d_v) (= 4 b h s_q s_kv d), times the share of scores the mask
    // keeps; backward twice the forward, the convention of the H100 attention table
    // (GpuSpec::attentionTable) the cost model prices it with.
    double fwd = 2.0 * a->b * a->hq * (double)a->sq * (double)a->skv * (double)(a->dqk + a->dv) * kept;
    double flops = a->backward ? 2 * fwd : fwd;
    // Q, K, V and O once each; the backward also reads dO and writes dQ, dK, dV.
    double qkvo = (double)a->b *
                  (a->hq * a->sq * a->dqk + a->hk * a->skv * a->dqk + a->hv * a->skv * a->dv + a->hq * a->sq * a->dv);
    unsigned long long bytes = (unsigned long long)(qkvo * elt * (a->backward ? 2 : 1));
    const char* mask = a->mask.empty()                                                   ? "none"
                       : (std::isinf(lo) && (hi == 0 || hi == (double)(a->skv - a->sq))) ? "causal"
                                                                                         : "band";
    char gemm[200], sdpa[300];
    int gn = snprintf(gemm, sizeof gemm, ",\"gemm\":{\"m\":%lld,\"n\":%lld,\"k\":%lld,\"batch\":%lld,\"dtype\":\"%s\"}",
                      (long long)a->sq, (long long)a->skv, (long long)a->dqk, (long long)(a->b * a->hq), dtype);
    int sn = snprintf(sdpa, sizeof sdpa,
                      ",\"sdpa\":{\"b\":%lld,\"h_q\":%lld,\"h_k\":%lld,\"h_v\":%lld,\"s_q\":%lld,\"s_kv\":%lld,"
                      "\"d_qk\":%lld,\"d_v\":%lld,\"mask\":\"%s\",\"kept\":%.17g}",
                      (long long)a->b, (long long)a->hq, (long long)a->hk, (long long)a->hv, (long long)a->sq,
                      (long long)a->skv, (long long)a->dqk, (long long)a->dv, mask, kept);
    // "flash" marks fused attention for gpusim's cost model (KernelCostModel::IsFusedAttention),
    // "bwd" its backward.
    Line(s.device, "kernel")
        .Str("name", a->backward ? "cudnn_sdpa_flash_bwd" : "cudnn_sdpa_flash_fwd")
        .Int("stream", s.id)
        .Raw(gemm, (size_t)gn)
        .Num("flops", flops)
        .U64("mem_bytes", bytes)
        .Raw(sdpa, (size_t)sn)
        .Commit();
  }
  if (LiveLost()) return Fail(CUDNN_STATUS_EXECUTION_FAILED, "lost the simulator (gpusim run)");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace cudnn
}  // namespace gpusim

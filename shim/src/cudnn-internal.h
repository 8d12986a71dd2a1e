// Internal interface of the cuDNN shim (libcudnn.so.9): backend descriptors, error reporting
// and the attention graphs the shim recognises. Nothing here throws.
#ifndef GPUSIM_CUDNN_INTERNAL_H
#define GPUSIM_CUDNN_INTERNAL_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cudnn.h"

struct cudnnContext {
  int device;
  cudaStream_t stream;
};

namespace gpusim {
namespace cudnn {

// ---- errors (cudnn.cc) ----

// Stores "<status name>: <message>" as the calling thread's last error (cudnnGetLastErrorString)
// and returns status.
cudnnStatus_t Fail(cudnnStatus_t status, const std::string& message);
// Fail() for something the shim does not emulate: the message is also printed once on stderr.
cudnnStatus_t NotEmulated(cudnnStatus_t status, const std::string& message);
const char* StatusName(cudnnStatus_t status);
bool LiveHandle(cudnnHandle_t h);

// ---- descriptors (cudnn-descriptors.cc) ----

struct Desc;
struct AttentionGraph;

struct AttrValue {
  cudnnBackendAttributeType_t type;
  int64_t count = 0;
  std::vector<unsigned char> bytes;          // count elements of the type, as passed
  std::vector<std::shared_ptr<Desc>> descs;  // CUDNN_TYPE_BACKEND_DESCRIPTOR: the descriptors themselves
};

// A backend descriptor. Descriptors that refer to others hold them (shared), so a program may
// destroy a descriptor it has set on another one. Finalized descriptors never change.
struct Desc {
  cudnnBackendDescriptorType_t type;
  bool finalized = false;
  std::map<int, AttrValue> attrs;  // by cudnnBackendAttributeName_t
  // Operation graphs and everything built on one (heuristics, engine, engine config, plan):
  // the attention it computes, or null with the reason in unsupported.
  std::shared_ptr<const AttentionGraph> attention;
  std::string unsupported;

  const AttrValue* Find(cudnnBackendAttributeName_t name) const;
  // The first descriptor / the int64 values / the scalar of an attribute, if set.
  const Desc* Ref(cudnnBackendAttributeName_t name) const;
  std::vector<int64_t> Ints(cudnnBackendAttributeName_t name) const;
  bool Scalar(cudnnBackendAttributeName_t name, int64_t* out) const;
  bool Flag(cudnnBackendAttributeName_t name) const;
};

// Descriptor kind names for messages ("matmul", "pointwise", ...).
const char* DescriptorName(cudnnBackendDescriptorType_t type);
bool IsOperation(cudnnBackendDescriptorType_t type);

// The backend calls, on the process's descriptor table (one mutex).
cudnnStatus_t CreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* out);
cudnnStatus_t DestroyDescriptor(cudnnBackendDescriptor_t d);
cudnnStatus_t SetAttribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, int64_t count, const void* values);
cudnnStatus_t GetAttribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                           cudnnBackendAttributeType_t type, int64_t requested, int64_t* count, void* values);
cudnnStatus_t Finalize(cudnnBackendDescriptor_t d);
// What cudnnBackendExecute needs, read under the table's lock: the plan's attention and the
// variant pack's pointers.
struct Launch {
  std::shared_ptr<const AttentionGraph> attention;
  std::map<int64_t, void*> pointers;  // by tensor uid
  void* workspace = nullptr;
};
cudnnStatus_t PrepareLaunch(cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t variantPack, Launch* out);

// ---- attention graphs (cudnn-sdpa.cc) ----

// A tensor of an operation graph, as its descriptor defines it.
struct TensorInfo {
  int64_t uid = 0;
  std::vector<int64_t> dims, strides;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  bool isVirtual = false;
  bool byValue = false;
};

// A constraint on key index j against query index i that a mask keeps: j - i <= value
// (upper: causal and its shifted forms) or j - i >= value (lower: sliding windows). value is
// the sum of the signed scalar tensors in terms (by-value tensors, read at execution; others
// count as 0).
struct BandBound {
  bool upper = true;
  std::vector<std::pair<int64_t, int>> terms;  // (tensor uid, +1 / -1)
};

// A scaled-dot-product attention graph the shim records as one fused kernel.
struct AttentionGraph {
  bool backward = false;
  int64_t b = 0, hq = 0, hk = 0, hv = 0, sq = 0, skv = 0, dqk = 0, dv = 0;
  cudnnDataType_t dtype = CUDNN_DATA_HALF;  // of Q: what the matmuls run in
  std::vector<BandBound> mask;
  std::map<int64_t, TensorInfo> byValue;  // scalars the mask reads
  std::vector<int64_t> required;          // non-virtual tensors the variant pack must give
  int64_t workspaceBytes = 0;
};

TensorInfo ReadTensor(const Desc& tensor);

// Recognises the attention an operation graph computes: cudnn-frontend's composite SDPA
// forward and backward graphs (matmul / pointwise / reduction / reshape / RNG operations) and
// cuDNN 9.13's dedicated SDPA forward operation. On failure returns null and says why.
std::shared_ptr<const AttentionGraph> RecognizeAttention(const std::vector<const Desc*>& ops, std::string* why);
// One line naming a graph's operations, for messages: "[matmul x2, pointwise exp, ...]".
std::string DescribeOperations(const std::vector<const Desc*>& ops);
// Records the attention as one "kernel" op on the handle's stream.
cudnnStatus_t ExecuteAttention(cudnnHandle_t handle, const Launch& launch);

}  // namespace cudnn
}  // namespace gpusim

#endif

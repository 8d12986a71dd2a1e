// libgpusim-nvtx.so: an NVTX injection library. NVTX v3 is header-only; on a program's first
// NVTX call the header dlopens $NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2, which
// fills in the function pointers the program's ranges and marks then go through. We record
// them as "marker" ops (begin/end/instant) so iterations (ProfilerStep#N) and named regions
// reach the trace. gpusim-launch sets NVTX_INJECTION64_PATH unless the program has its own.
//
// The types below restate the parts of NVIDIA's nvtxTypes.h/nvToolsExt.h ABI the protocol uses.
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "shim.h"

namespace {

// ---- NVTX injection ABI ----
typedef void (*NvtxFunctionPointer)(void);
typedef NvtxFunctionPointer** NvtxFunctionTable;  // array of pointers to the header's slots
typedef const void* (*NvtxGetExportTableFunc_t)(uint32_t exportTableId);
struct NvtxExportTableCallbacks {
  size_t struct_size;
  int (*GetModuleFunctionTable)(int module, NvtxFunctionTable* outTable, unsigned int* outSize);
};
constexpr uint32_t kEtidCallbacks = 1;
constexpr int kModuleCore = 1, kModuleCore2 = 5;
enum CoreId {
  kMarkEx = 1,
  kMarkA = 2,
  kRangeStartEx = 4,
  kRangeStartA = 5,
  kRangeEnd = 7,
  kRangePushEx = 8,
  kRangePushA = 9,
  kRangePop = 11
};
enum Core2Id {
  kDomainMarkEx = 1,
  kDomainRangeStartEx = 2,
  kDomainRangeEnd = 3,
  kDomainRangePushEx = 4,
  kDomainRangePop = 5,
  kDomainRegisterStringA = 10,
  kDomainCreateA = 12
};
constexpr int32_t kMessageAscii = 1, kMessageRegistered = 3;

struct EventAttributes {  // nvtxEventAttributes_v2
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t colorType;
  uint32_t color;
  int32_t payloadType;
  int32_t reserved0;
  uint64_t payload;
  int32_t messageType;
  const void* message;  // const char* (ascii) or a registered string handle
};

// ---- state ----
std::mutex g_mu;
std::unordered_map<uint64_t, std::string>& OpenRanges() {  // nvtxRangeStart id -> name
  static auto* m = new std::unordered_map<uint64_t, std::string>;
  return *m;
}
uint64_t g_nextRange = 0;
thread_local std::vector<std::string> t_stack;  // push/pop names of this thread

const char* MessageOf(const EventAttributes* a) {
  if (!a || !a->message) return "";
  // Registered strings are handles we created in DomainRegisterStringA: the copied text.
  if (a->messageType == kMessageAscii || a->messageType == kMessageRegistered) return (const char*)a->message;
  return "";  // wide-character messages are not recorded
}

void Marker(const char* name, const char* phase) {
  GPUSIM_API(Call);  // an NVTX call with a tool attached
  if (!gpusim::Recording()) return;
  gpusim::Line(gpusim::CurrentDevice(), "marker")
      .Str("name", name)
      .Str("phase", phase)
      .Num("rec_us", (double)gpusim::NowNs() / 1e3)
      .Commit();
}

int Push(const char* name) {
  t_stack.emplace_back(name);
  Marker(name, "begin");
  return (int)t_stack.size() - 1;
}

int Pop() {
  if (t_stack.empty()) return -1;  // NVTX's answer to an unbalanced pop
  Marker(t_stack.back().c_str(), "end");
  t_stack.pop_back();
  return (int)t_stack.size();
}

uint64_t Start(const char* name) {
  Marker(name, "begin");
  std::lock_guard<std::mutex> lock(g_mu);
  uint64_t id = ++g_nextRange;
  OpenRanges()[id] = name;
  return id;
}

void End(uint64_t id) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = OpenRanges().find(id);
    if (it == OpenRanges().end()) return;
    name = std::move(it->second);
    OpenRanges().erase(it);
  }
  Marker(name.c_str(), "end");
}

// ---- the functions handed to the header ----
void MarkEx(const EventAttributes* a) { Marker(MessageOf(a), "instant"); }
void MarkA(const char* m) { Marker(m ? m : "", "instant"); }
uint64_t RangeStartEx(const EventAttributes* a) { return Start(MessageOf(a)); }
uint64_t RangeStartA(const char* m) { return Start(m ? m : ""); }
void RangeEnd(uint64_t id) { End(id); }
int RangePushEx(const EventAttributes* a) { return Push(MessageOf(a)); }
int RangePushA(const char* m) { return Push(m ? m : ""); }
int RangePop() { return Pop(); }
void DomainMarkEx(void*, const EventAttributes* a) { MarkEx(a); }
uint64_t DomainRangeStartEx(void*, const EventAttributes* a) { return RangeStartEx(a); }
void DomainRangeEnd(void*, uint64_t id) { End(id); }
int DomainRangePushEx(void*, const EventAttributes* a) { return RangePushEx(a); }
int DomainRangePop(void*) { return Pop(); }
// Handles are never freed: programs keep them for the life of the process.
// NVTX has no call that frees a registered string or a domain: they live as long as the
// process. One interned copy per text, kept reachable (the set is never destroyed, so a call
// from an exit handler still finds it).
const char* Keep(const char* s) {
  static std::mutex* mu = new std::mutex;
  static std::set<std::string>* kept = new std::set<std::string>;
  std::lock_guard<std::mutex> lock(*mu);
  return kept->insert(s ? s : "").first->c_str();
}

const void* DomainRegisterStringA(void*, const char* s) { return Keep(s); }
void* DomainCreateA(const char* name) { return const_cast<char*>(Keep(name)); }

template <class F>
void Set(NvtxFunctionTable table, unsigned size, unsigned id, F fn) {
  if (id < size && table[id]) *table[id] = (NvtxFunctionPointer)fn;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t getExportTable) {
  auto* cb = (const NvtxExportTableCallbacks*)getExportTable(kEtidCallbacks);
  if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks) || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(kModuleCore, &table, &size) || !table) return 0;
  Set(table, size, kMarkEx, MarkEx);
  Set(table, size, kMarkA, MarkA);
  Set(table, size, kRangeStartEx, RangeStartEx);
  Set(table, size, kRangeStartA, RangeStartA);
  Set(table, size, kRangeEnd, RangeEnd);
  Set(table, size, kRangePushEx, RangePushEx);
  Set(table, size, kRangePushA, RangePushA);
  Set(table, size, kRangePop, RangePop);
  if (cb->GetModuleFunctionTable(kModuleCore2, &table, &size) && table) {
    Set(table, size, kDomainMarkEx, DomainMarkEx);
    Set(table, size, kDomainRangeStartEx, DomainRangeStartEx);
    Set(table, size, kDomainRangeEnd, DomainRangeEnd);
    Set(table, size, kDomainRangePushEx, DomainRangePushEx);
    Set(table, size, kDomainRangePop, DomainRangePop);
    Set(table, size, kDomainRegisterStringA, DomainRegisterStringA);
    Set(table, size, kDomainCreateA, DomainCreateA);
  }
  return 1;
}

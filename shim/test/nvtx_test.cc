// The NVTX injection library, driven the way NVTX's header drives it: an export table whose
// callback hands out the module's function-pointer slots, then calls through those slots.
// ctest runs this with GPUSIM_RECORD_DIR set.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "cuda_runtime.h"
#include "trace-reader.h"

using namespace shimtest;

extern "C" int InitializeInjectionNvtx2(const void* (*getExportTable)(uint32_t));

namespace {

typedef void (*Fn)(void);
Fn g_core[16];   // the header's CORE slots (index = NVTX callback id)
Fn g_core2[16];  // CORE2 (domain) slots
Fn* g_coreTable[16];
Fn* g_core2Table[16];

int GetModuleFunctionTable(int module, Fn*** out, unsigned* size) {
  if (module == 1) {
    *out = g_coreTable;
  } else if (module == 5) {
    *out = g_core2Table;
  } else {
    return 0;
  }
  *size = 15;
  return 1;
}

struct Callbacks {
  size_t size;
  int (*get)(int, Fn***, unsigned*);
} g_callbacks = {sizeof(Callbacks), GetModuleFunctionTable};

const void* GetExportTable(uint32_t id) { return id == 1 ? &g_callbacks : nullptr; }

struct Attr {  // nvtxEventAttributes_v2
  uint16_t version, size;
  uint32_t category;
  int32_t colorType;
  uint32_t color;
  int32_t payloadType, reserved0;
  uint64_t payload;
  int32_t messageType;
  const void* message;
};

TEST(Nvtx, RangesAndMarksBecomeMarkers) {
  const char* dir = getenv("GPUSIM_RECORD_DIR");
  if (!dir) GTEST_SKIP() << "run with GPUSIM_RECORD_DIR set (ctest does)";
  for (int i = 0; i < 16; ++i) g_coreTable[i] = &g_core[i], g_core2Table[i] = &g_core2[i];
  ASSERT_EQ(InitializeInjectionNvtx2(GetExportTable), 1);
  auto pushA = (int (*)(const char*))g_core[9];
  auto pop = (int (*)())g_core[11];
  auto markA = (void (*)(const char*))g_core[2];
  auto startEx = (uint64_t(*)(const Attr*))g_core[4];
  auto end = (void (*)(uint64_t))g_core[7];
  auto registerString = (const void* (*)(void*, const char*))g_core2[10];
  auto domainPushEx = (int (*)(void*, const Attr*))g_core2[4];
  auto domainPop = (int (*)(void*))g_core2[5];
  ASSERT_TRUE(pushA && pop && markA && startEx && end && registerString && domainPushEx && domainPop);

  ASSERT_EQ(cudaSetDevice(2), cudaSuccess);
  EXPECT_EQ(pushA("ProfilerStep#0"), 0);
  EXPECT_EQ(pushA("forward"), 1);
  markA("checkpoint");
  EXPECT_EQ(pop(), 1);
  Attr a{};
  a.messageType = 1;
  a.message = "optimizer";
  uint64_t id = startEx(&a);
  a.messageType = 3;  // registered string
  a.message = registerString(nullptr, "allreduce-bucket");
  EXPECT_EQ(domainPushEx(nullptr, &a), 1);
  EXPECT_EQ(domainPop(nullptr), 1);
  end(id);
  EXPECT_EQ(pop(), 0);
  EXPECT_EQ(pop(), -1) << "unbalanced pop";
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);  // flush

  auto ops = ReadRank(std::string(dir) + "/rank-0.jsonl");
  auto m = Select(ops, "marker");
  ASSERT_EQ(m.size(), 9u);
  const char* expect[][2] = {{"ProfilerStep#0", "begin"}, {"forward", "begin"},   {"checkpoint", "instant"},
                             {"forward", "end"},          {"optimizer", "begin"}, {"allreduce-bucket", "begin"},
                             {"allreduce-bucket", "end"}, {"optimizer", "end"},   {"ProfilerStep#0", "end"}};
  for (size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i].Get("name"), expect[i][0]) << i;
    EXPECT_EQ(m[i].Get("phase"), expect[i][1]) << i;
    EXPECT_TRUE(m[i].Has("rec_us"));
  }
}

}  // namespace

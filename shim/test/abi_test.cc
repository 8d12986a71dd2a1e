// Runtime half of the ABI check: NCCL / cuBLAS / cuBLASLt values taken from NVIDIA's headers
// and from ours (two translation units; the headers cannot share one).
#include <gtest/gtest.h>

#include "abi-values.h"

TEST(Abi, NcclAndCublasMatchNvidiaHeaders) {
  for (int i = 0; i < gpusim_abi_count; ++i) EXPECT_EQ(gpusim_abi_ours[i], gpusim_abi_nvidia[i]) << gpusim_abi_names[i];
}

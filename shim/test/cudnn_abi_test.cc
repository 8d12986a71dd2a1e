// The shim's cuDNN headers against NVIDIA's (cuDNN 9.x installed in /usr/local/cuda): every
// enumerator value, enum size and struct layout the shim declares (two translation units; the
// headers cannot share one). NVIDIA's may be a newer 9.x: values never change within cuDNN 9,
// but the *_COUNT sentinels grow as enumerators are added (the shim's are cuDNN 9.13.1's).
#include <gtest/gtest.h>

#include <string>

extern "C" const long long gpusim_cudnn_abi_nvidia[];
extern "C" const long long gpusim_cudnn_abi_ours[];
extern "C" const char* const gpusim_cudnn_abi_names[];
extern "C" const int gpusim_cudnn_abi_count;

TEST(CudnnAbi, ValuesAndLayoutsMatchNvidiaHeaders) {
  ASSERT_GT(gpusim_cudnn_abi_count, 600);
  for (int i = 0; i < gpusim_cudnn_abi_count; ++i) {
    std::string name = gpusim_cudnn_abi_names[i];
    bool sentinel = name.size() > 6 && (name.compare(name.size() - 6, 6, "_COUNT") == 0 ||
                                        name.compare(name.size() - 7, 7, "_COUNTS") == 0);
    if (sentinel)
      EXPECT_LE(gpusim_cudnn_abi_ours[i], gpusim_cudnn_abi_nvidia[i]) << name;
    else
      EXPECT_EQ(gpusim_cudnn_abi_ours[i], gpusim_cudnn_abi_nvidia[i]) << name;
  }
}

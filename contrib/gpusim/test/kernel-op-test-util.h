// A GEMM kernel op and GPU presets for cost-model tests (kernel-cost-model-test.cc,
// h100-measurements-test.cc, training-fp8-test.cc).
#ifndef GPUSIM_TEST_KERNEL_OP_TEST_UTIL_H
#define GPUSIM_TEST_KERNEL_OP_TEST_UTIL_H

#include "ns3/gpu-spec.h"
#include "ns3/op-ir.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace ns3
{
namespace gpusim
{

/// C (m x n) = A (m x k) B (k x n), `batch` products in one launch, named "gemm".
inline Op
GemmOp(uint64_t m, uint64_t n, uint64_t k, uint64_t batch = 1, DataType t = DataType::BF16)
{
    Op op;
    op.kind = OpKind::Kernel;
    op.name = "gemm";
    op.gemm.m = m;
    op.gemm.n = n;
    op.gemm.k = k;
    op.gemm.batch = batch;
    op.gemm.dtype = t;
    return op;
}

/// A GPU preset by name (h100-sxm, h200-sxm, a100-sxm).
inline GpuSpec
Gpu(const std::string& name)
{
    GpuSpec s;
    EXPECT_TRUE(LookupGpuSpec(name, s));
    return s;
}

} // namespace gpusim
} // namespace ns3

#endif // GPUSIM_TEST_KERNEL_OP_TEST_UTIL_H

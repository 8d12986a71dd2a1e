/*
 * RankGenerator's fp8 pieces (training-generator-internal.h; doc/generate.md "fp8"): the
 * transformer layers' linear GEMMs in fp8 and the kernels Transformer Engine adds for them
 * under Megatron-Core's --fp8-format hybrid, delayed or current scaling. Read from
 * NVIDIA/TransformerEngine at d0067d0d and NVIDIA/Megatron-LM at d98e8a64; the files named
 * below are in those repositories.
 */
#include "training-generator-internal.h"

#include <cmath>

namespace ns3
{
namespace gpusim
{
namespace training_internal
{

namespace
{

/// Megatron-Core's default --fp8-amax-history-len (TransformerConfig.fp8_amax_history_len = 1,
/// megatron/core/transformer/transformer_config.py; TE's own DelayedScaling default is 1024).
constexpr double kAmaxHistory = 1;

} // namespace

std::string
RankGenerator::AmaxComm() const
{
    // Megatron-Core hands fp8_autocast the amax reduction group
    // (megatron/core/fp8_utils.py get_fp8_context -> parallel_state.get_amax_reduction_group(
    // with_context_parallel=True)): the tensor-and-data-parallel group with CP, i.e. every
    // TP x CP x DP rank of a pipeline stage.
    return "amax.s" + std::to_string(m_pos.stage);
}

void
RankGenerator::LinearGemm(const std::string& name, double m, double n, double k, bool backward,
                          double experts, uint64_t batch)
{
    batch = batch ? batch : (backward ? 2 : 1);
    if (!Fp8())
    {
        Gemm(name, m, n, k, batch);
        return;
    }
    if (!backward && m_castWeights)
    {
        // TE quantizes a weight, row-wise for the forward GEMM and its transpose for the data
        // gradient, only when is_first_microbatch is True or None (module/linear.py,
        // layernorm_linear.py: quantize_weight(update_workspace=...)) and keeps the copies in
        // its workspace; Megatron-Core sets the flag at each model chunk's first micro-batch
        // (megatron/core/pipeline_parallel/schedules.py forward_step -> set_is_first_microbatch)
        // and the other micro-batches reuse them. One fused cast-transpose (common/cast/
        // dispatch/quantize.cuh): read the weight, write fp8 and its fp8 transpose.
        const double params = n * k * experts;
        if (m_p.fp8 == Fp8Recipe::CurrentScaling)
        {
            Fp8CurrentScale(params, false, false);
        }
        Kernel("fp8_weight_cast", 0, (m_e + 2) * params);
    }
    Gemm(name, m, n, k, batch);
    Op& op = m_trace.ops.back();
    // Format.HYBRID (common/recipe/__init__.py): E4M3 activations and weights forward, E5M2
    // gradients (with E4M3 weights or inputs) in the data- and weight-gradient GEMMs. The
    // operands are 1 byte, the output in the model dtype.
    op.gemm.dtype = backward ? DataType::F8E5M2 : DataType::F8E4M3;
    op.memBytes = std::round((m * k + k * n + m * n * m_e) * double(op.gemm.batch));
}

void
RankGenerator::Fp8CurrentScale(double elems, bool amaxFused, bool tpReduce)
{
    // Float8CurrentScalingQuantizer::quantize_impl (pytorch/csrc/quantizer.cpp): the amax of
    // the tensor (common/recipe/current_scaling.cu: a one-thread zeroing kernel, then a pass
    // reading the tensor), its all-reduce over the TP group when an SP all-gather follows
    // (set_quantizer_amax_reduction_group in module/linear.py, layernorm_linear.py), then
    // compute_scale_from_amax (one thread: amax in, scale out); the cast itself follows.
    if (!amaxFused)
    {
        Kernel("fp8_amax_zero", 0, 4);
        Kernel("fp8_amax", 0, m_e * elems);
    }
    if (tpReduce && m_p.tp > 1)
    {
        Coll(CollKind::AllReduce, TpComm(), m_p.tp, 4, kCompute, DataType::F32);
    }
    Kernel("fp8_scale", 0, 8);
}

void
RankGenerator::NormLinearInput(bool allGather)
{
    if (!Fp8())
    {
        Norm(false);
        if (allGather)
        {
            TpForward(true);
        }
        return;
    }
    // TE LayerNormLinear (module/layernorm_linear.py; Megatron-Core's
    // TELayerNormColumnParallelLinear for QKV and the dense fc1).
    const double local = LocalTokens() * m_m.hidden;
    const double full = m_tokens * m_m.hidden;
    const bool gather = m_p.sequenceParallel && m_p.tp > 1;
    if (m_p.fp8 == Fp8Recipe::Delayed)
    {
        // The norm kernel writes fp8 itself (pytorch/csrc/extensions/normalization.cpp,
        // Impl::FULLY_FUSED for a Float8Quantizer): read e, write 1 byte per value.
        Kernel("norm", 0, (m_e + 1) * local);
    }
    else
    {
        // Current scaling: the norm writes the model dtype and the amax (Impl::
        // FUSED_NORM_AMAX_FP8), quantize_with_amax then scales and casts it.
        Kernel("norm", 0, 2 * m_e * local);
        Fp8CurrentScale(local, true, gather);
        Kernel(gather ? "fp8_cast" : "fp8_cast_transpose", 0, (m_e + (gather ? 1 : 2)) * local);
    }
    if (gather && allGather)
    {
        // A per-tensor quantizer all-gathers row-wise data only (tensor/float8_tensor.py
        // supports_only_rowwise_all_gather): the norm output crosses TP in fp8
        // (distributed.py _all_gather_fp8); its transpose is made in the backward
        // (NormLinearRegather).
        Coll(CollKind::AllGather, TpComm(), m_p.tp, full, kCompute, DataType::F8E4M3);
    }
    else if (!gather && m_p.fp8 == Fp8Recipe::Delayed)
    {
        // The weight gradient needs the input's transpose (Hopper's fp8 GEMMs take TN operands
        // only; pytorch/utils.py is_non_tn_fp8_gemm_supported is true from sm_100):
        // common/normalization/{layernorm/ln_api.cpp, rmsnorm/rmsnorm_api.cpp} run
        // nvte_transpose on the fp8 output, read and write 1 byte per value.
        Kernel("fp8_transpose", 0, 2 * full);
    }
}

void
RankGenerator::Fp8CastTranspose(double elems)
{
    if (!Fp8())
    {
        return;
    }
    // Float8Quantizer with row- and column-wise usage: one cast_transpose kernel
    // (common/cast/dispatch/quantize.cuh) reading the model dtype and writing the fp8 tensor
    // and its fp8 transpose; a bias gradient, where there is one, is fused into it
    // (tex.bgrad_quantize, module/base.py grad_output_preprocess).
    if (m_p.fp8 == Fp8Recipe::CurrentScaling)
    {
        Fp8CurrentScale(elems, false, false);
    }
    Kernel("fp8_cast_transpose", 0, (m_e + 2) * elems);
}

void
RankGenerator::RowGradOutput(bool allGather)
{
    if (!Fp8())
    {
        if (allGather)
        {
            TpRegather();
        }
        return;
    }
    if (!(m_p.sequenceParallel && m_p.tp > 1))
    {
        Fp8CastTranspose(m_tokens * m_m.hidden);
        return;
    }
    // SP: grad_output_preprocess (module/base.py) all-gathers the row-parallel layer's
    // gradient output with its quantizer: cast the local shard row-wise, all-gather the fp8
    // data, then transpose the gathered tensor (distributed.py _all_gather_fp8 ->
    // _create_transpose, since Hopper needs TN fp8 GEMMs).
    const double local = LocalTokens() * m_m.hidden;
    const double full = m_tokens * m_m.hidden;
    if (m_p.fp8 == Fp8Recipe::CurrentScaling)
    {
        Fp8CurrentScale(local, false, true);
    }
    Kernel("fp8_cast", 0, (m_e + 1) * local);
    if (allGather)
    {
        Coll(CollKind::AllGather, TpComm(), m_p.tp, full, kCompute, DataType::F8E5M2);
        Kernel("fp8_transpose", 0, 2 * full);
    }
}

void
RankGenerator::NormLinearRegather()
{
    if (!Fp8() || !(m_p.sequenceParallel && m_p.tp > 1))
    {
        TpRegather();
        return;
    }
    // LayerNormLinear's backward all-gathers its saved fp8 input shard again for the weight
    // gradient (module/layernorm_linear.py, gather_along_first_dim with the input quantizer)
    // and transposes it.
    const double full = m_tokens * m_m.hidden;
    Coll(CollKind::AllGather, TpComm(), m_p.tp, full, kCompute, DataType::F8E4M3);
    Kernel("fp8_transpose", 0, 2 * full);
}

void
RankGenerator::Fp8AmaxUpdate(bool forward)
{
    if (m_p.fp8 != Fp8Recipe::Delayed)
    {
        return;
    }
    // FP8GlobalStateManager.reduce_and_update_fp8_tensors (pytorch/quantization.py), at the
    // exit of the outermost fp8_autocast (forward; Megatron-Core wraps a model chunk's whole
    // TransformerBlock in one with delayed scaling, megatron/core/transformer/
    // transformer_block.py) and at the end of the backward of the region's first fp8 module
    // (module/linear.py, layernorm_linear.py: reduce_and_update_bwd_fp8_tensors). Each
    // module registered its amaxes once (add_fp8_tensors_to_global_buffer), so the buffer
    // holds every fp8 GEMM of the rank, all model chunks: 3 amaxes per GEMM forward, 2
    // backward (module/base.py). torch.cat into one buffer, all-reduce (MAX) over the amax
    // group, then one fused update kernel (common/recipe/delayed_scaling.cu kernel_bulk, up to
    // ~1,360 modules per launch): reads the reduced amax, rolls the history and rewrites the
    // scale, 4 bytes each.
    const double amaxes = (forward ? 3 : 2) * LayerFp8Gemms(m_m, m_p) * (m_m.layers / m_p.pp);
    Kernel("fp8_amax_cat", 0, 2 * 4 * amaxes);
    const uint32_t group = m_p.tp * m_p.DpCp();
    if (group > 1)
    {
        Coll(CollKind::AllReduce, AmaxComm(), group, 4 * amaxes, kCompute, DataType::F32);
    }
    Kernel("fp8_amax_scale_update", 0, 4 * amaxes * (1 + 2 * kAmaxHistory + 2));
}

} // namespace training_internal
} // namespace gpusim
} // namespace ns3

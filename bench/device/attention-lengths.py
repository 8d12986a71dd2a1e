#!/usr/bin/env python3
"""Times PyTorch's fused causal attention (scaled_dot_product_attention, bf16) forward and
forward + backward at sequence lengths from 2k to 64k tokens, to see how far one attention
efficiency per GPU (gpu-spec.cc, measured at 2048) holds for long sequences
(doc/validation.md, "Kernels on a real H100"). Writes JSON to argv[1]."""
import json
import sys

import torch
import torch.nn.functional as F

from cuda_timing import median_ms

dev, dt = torch.device("cuda"), torch.bfloat16


def main():
    rows = []
    for heads, d in ((32, 128), (32, 64)):
        for s in (2048, 8192, 32768, 65536):
            b = max(1, 16384 // s)
            q, k, v = (torch.randn(b, heads, s, d, device=dev, dtype=dt, requires_grad=True)
                       for _ in range(3))
            do = torch.randn(b, heads, s, d, device=dev, dtype=dt)
            with torch.no_grad():
                fwd = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                                reps=10, warm=3)

            def step():
                q.grad = k.grad = v.grad = None
                F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(do)

            both = median_ms(step, reps=10, warm=3)
            flops = 2.0 * b * s * s * heads * d  # causal forward: half of 4 b s^2 (heads d)
            rows.append({"batch": b, "heads": heads, "head_dim": d, "seq": s, "forward_ms": fwd,
                         "forward_backward_ms": both,
                         "forward_eff": flops / (fwd * 1e-3) / 989.5e12,
                         "backward_eff": 2 * flops / ((both - fwd) * 1e-3) / 989.5e12})
            del q, k, v, do
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}
    open(sys.argv[1], "w").write(json.dumps(res, indent=1))
    for r in rows:
        print(f"b {r['batch']} heads {r['heads']} d {r['head_dim']} s {r['seq']}: fwd "
              f"{r['forward_ms']:.3f} ms ({r['forward_eff']:.3f}), bwd "
              f"{r['forward_backward_ms'] - r['forward_ms']:.3f} ms ({r['backward_eff']:.3f})")


if __name__ == "__main__":
    main()

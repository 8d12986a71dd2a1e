#!/usr/bin/env python3
"""Times one GPT transformer layer (pre-LayerNorm, fused causal attention through PyTorch's
scaled_dot_product_attention, GELU MLP, biases, no dropout) forward and forward + backward on
the local GPU, bf16, to compare with `gpusim generate`'s per-layer time for the same layer
(doc/validation.md, "Kernels on a real H100"). Median of repeats after warm-up, CUDA events.

Usage: gpt-layer.py OUT.json [hidden heads tokens_per_sequence micro_batch] ...
"""
import json
import sys

import torch
import torch.nn.functional as F

from cuda_timing import median_ms

dev = torch.device("cuda")
dt = torch.bfloat16


class Layer(torch.nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.h, self.heads = h, heads
        self.ln1 = torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, 3 * h)
        self.proj = torch.nn.Linear(h, h)
        self.ln2 = torch.nn.LayerNorm(h)
        self.fc1 = torch.nn.Linear(h, 4 * h)
        self.fc2 = torch.nn.Linear(4 * h, h)

    def forward(self, x):  # x: [b, s, h]
        b, s, h = x.shape
        d = h // self.heads
        qkv = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def run(h, heads, s, mb):
    layer = Layer(h, heads).to(dev, dt)
    x = torch.randn(mb, s, h, device=dev, dtype=dt, requires_grad=True)
    dy = torch.randn(mb, s, h, device=dev, dtype=dt)
    with torch.no_grad():
        fwd = median_ms(lambda: layer(x))

    def step():
        # One micro-batch: gradients are assigned, not accumulated into earlier ones.
        layer.zero_grad(set_to_none=True)
        x.grad = None
        y = layer(x)
        y.backward(dy)

    both = median_ms(step)
    # The fused attention alone (PyTorch's scaled_dot_product_attention, causal).
    d = h // heads
    q, k, v = (torch.randn(mb, heads, s, d, device=dev, dtype=dt, requires_grad=True)
               for _ in range(3))
    do = torch.randn(mb, heads, s, d, device=dev, dtype=dt)
    with torch.no_grad():
        att = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))

    def att_step():
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(do)

    att_both = median_ms(att_step)
    return {"hidden": h, "heads": heads, "seq": s, "micro_batch": mb, "forward_ms": fwd,
            "forward_backward_ms": both, "attention_forward_ms": att,
            "attention_forward_backward_ms": att_both}


def main():
    out = sys.argv[1]
    cases = [(2560, 32, 2048, 4), (4096, 32, 2048, 2), (8192, 64, 2048, 1)]
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "layers": [run(*c) for c in cases]}
    open(out, "w").write(json.dumps(res, indent=1))
    for r in res["layers"]:
        print(f"h {r['hidden']} heads {r['heads']} s {r['seq']} mbs {r['micro_batch']}: "
              f"forward {r['forward_ms']:.3f} ms, forward+backward {r['forward_backward_ms']:.3f} "
              f"ms; attention {r['attention_forward_ms']:.3f} / "
              f"{r['attention_forward_backward_ms']:.3f} ms")


if __name__ == "__main__":
    main()

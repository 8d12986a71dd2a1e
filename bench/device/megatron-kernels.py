#!/usr/bin/env python3
"""Times the kernels of a Megatron-LM GPT layer on the local GPU with PyTorch (CUDA events,
median of repeats after warm-up, fresh random inputs), to check gpusim's roofline cost model
and its GEMM shape model against a real GPU (doc/validation.md, "Kernels on a real H100").

GEMMs are timed in the three layouts a linear layer runs, with weight W [n, k]:
  fwd   Y[m, n]  = X[m, k] @ W^T       (gpusim: Gemm(m, n, k))
  dgrad dX[m, k] = dY[m, n] @ W        (reduction over n)
  wgrad dW[n, k] = dY^T[n, m] @ X      (reduction over the m tokens)
Memory-bound kernels are timed as PyTorch runs them (softmax, dropout, layer norm, GELU,
copy) with the bytes each must move at least.

Writes JSON to argv[1] (or stdout) and prints a table. Needs only torch.
"""
import json
import sys

import torch

from cuda_timing import median_ms as time_ms

torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")


def gemm_case(name, m, n, k, dtype):
    x = torch.randn(m, k, device=dev, dtype=dtype)
    w = torch.randn(n, k, device=dev, dtype=dtype)
    dy = torch.randn(m, n, device=dev, dtype=dtype)
    out = {}
    out["fwd"] = time_ms(lambda: torch.matmul(x, w.t()))
    out["dgrad"] = time_ms(lambda: torch.matmul(dy, w))
    out["wgrad"] = time_ms(lambda: torch.matmul(dy.t(), x))
    del x, w, dy
    return {"name": name, "m": m, "n": n, "k": k, "dtype": str(dtype).split(".")[-1],
            "ms": out}


def bmm_case(name, batch, m, n, k, dtype):
    a = torch.randn(batch, m, k, device=dev, dtype=dtype)
    b = torch.randn(batch, k, n, device=dev, dtype=dtype)
    ms = time_ms(lambda: torch.bmm(a, b))
    return {"name": name, "batch": batch, "m": m, "n": n, "k": k, "ms": ms}


def mem_case(name, fn, bytes_moved):
    ms = time_ms(fn)
    return {"name": name, "bytes": bytes_moved, "ms": ms,
            "tb_per_s": bytes_moved / (ms * 1e-3) / 1e12}


def main():
    props = torch.cuda.get_device_properties(0)
    res = {"device": props.name, "sms": props.multi_processor_count,
           "torch": torch.__version__, "cuda": torch.version.cuda, "gemms": [], "bmm": [],
           "memory": []}
    bf16, f16 = torch.bfloat16, torch.float16
    # Per-GPU linear layers of published Megatron-LM rows: (tokens, out, in).
    layers = {
        "22B tp8 mbs4": (8192, 6144, 6144),       # h 6144
        "175B tp8 mbs1": (2048, 12288, 12288),
        "530B tp8 mbs1": (2048, 20480, 20480),
        "1.7B tp1 mbs16": (32768, 2304, 2304),
    }
    for label, (t, h, _) in layers.items():
        tp = 1 if "tp1" in label else 8
        res["gemms"].append(gemm_case(label + " qkv", t, 3 * h // tp, h, f16))
        res["gemms"].append(gemm_case(label + " proj", t, h, h // tp, f16))
        res["gemms"].append(gemm_case(label + " fc1", t, 4 * h // tp, h, f16))
        res["gemms"].append(gemm_case(label + " fc2", t, h, 4 * h // tp, f16))
    # The shape the H100 tile efficiency comes from (ml-engineering MAMF table) and a square.
    res["gemms"].append(gemm_case("mamf 2048x2048x13312", 2048, 2048, 13312, bf16))
    res["gemms"].append(gemm_case("square 8192", 8192, 8192, 8192, bf16))
    # Unfused attention of the 22B layer: 4 x 8 heads, s 2048, head dim 96.
    s, d, bh = 2048, 96, 32
    res["bmm"].append(bmm_case("scores QK^T", bh, s, s, d, f16))
    res["bmm"].append(bmm_case("values PV", bh, s, d, s, f16))
    x = torch.randn(bh, s, s, device=dev, dtype=f16)
    n = x.numel()
    res["memory"].append(mem_case("softmax fp16 [32,2048,2048]",
                                  lambda: torch.softmax(x, dim=-1), 4 * n))
    res["memory"].append(mem_case("dropout 0.1 fp16 [32,2048,2048]",
                                  lambda: torch.nn.functional.dropout(x, 0.1, True), 5 * n))
    del x
    t, h = 8192, 6144
    y = torch.randn(t, h, device=dev, dtype=bf16)
    g = torch.ones(h, device=dev, dtype=bf16)
    bb = torch.zeros(h, device=dev, dtype=bf16)
    res["memory"].append(mem_case("layer_norm bf16 [8192,6144]",
                                  lambda: torch.nn.functional.layer_norm(y, (h,), g, bb),
                                  4 * y.numel()))
    z = torch.randn(t, 4 * h // 8, device=dev, dtype=bf16)
    res["memory"].append(mem_case("gelu bf16 [8192,3072]",
                                  lambda: torch.nn.functional.gelu(z), 4 * z.numel()))
    big = torch.empty(1 << 30, device=dev, dtype=torch.uint8).random_()
    dst = torch.empty_like(big)
    res["memory"].append(mem_case("copy 1 GiB", lambda: dst.copy_(big), 2 * big.numel()))
    text = json.dumps(res, indent=1)
    if len(sys.argv) > 1:
        open(sys.argv[1], "w").write(text)
    print(f"{res['device']} ({res['sms']} SMs), torch {res['torch']}, CUDA {res['cuda']}")
    for gcase in res["gemms"]:
        fl = 2.0 * gcase["m"] * gcase["n"] * gcase["k"]
        row = " ".join(f"{k} {v:7.3f} ms {fl / v / 1e9:6.1f} TF" for k, v in gcase["ms"].items())
        print(f"{gcase['name']:28s} {gcase['m']}x{gcase['n']}x{gcase['k']}: {row}")
    for b in res["bmm"]:
        print(f"{b['name']:28s} {b['batch']}x{b['m']}x{b['n']}x{b['k']}: {b['ms']:.3f} ms")
    for mcase in res["memory"]:
        print(f"{mcase['name']:34s} {mcase['ms']:7.3f} ms {mcase['tb_per_s']:5.2f} TB/s")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Burst against sustained throughput, and allocator overhead, on one H200.

Run on the device machine (PyTorch 2.11, nvidia-ml-py):
    python3 tools/device/h200_sustained.py --out $OUT

Part 1 asks whether kernels timed in short bursts (how tests/validation's calibration
was taken: a few calls after warm-up) run as fast when the chip works without pause for
tens of seconds, as it does in training. For a bf16 GEMM, causal flash attention
(forward + backward) and a whole Llama-2-7B-shaped layer (forward + backward) it times:
  - burst: after 5 s idle, 3 warm-up calls and 10 timed calls (CUDA events);
  - sustained: back-to-back calls for SUSTAIN_S seconds, timed per ~0.5 s window.
A sampler thread reads the SM clock, power and temperature through NVML every 50 ms.

Part 2 asks how far the caching allocator's reserved peak sits above the allocated peak
in a real training step (the twin's fragmentation term). Each case runs in its own
process, with PyTorch's default allocator and with expandable_segments:True, and records
max_memory_allocated, max_memory_reserved and the step time.

Results are written to OUT/h200_sustained.json after each part.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

SUSTAIN_S = 30.0
IDLE_S = 5.0


def nvml_sampler(stop, samples):
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as e:  # noqa: BLE001 - record why, carry on without clocks
        samples.append({"error": repr(e)})
        return
    while not stop.is_set():
        try:
            row = {
                "t": time.time(),
                "sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "temp_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            }
            try:
                row["reasons"] = int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(h))
            except Exception:  # noqa: BLE001
                pass
            samples.append(row)
        except Exception as e:  # noqa: BLE001
            samples.append({"t": time.time(), "error": repr(e)})
        time.sleep(0.05)


def clocks_between(samples, t0, t1):
    rows = [s for s in samples if "sm_mhz" in s and t0 <= s["t"] <= t1]
    if not rows:
        return {}
    n = len(rows)
    return {
        "sm_mhz_mean": sum(r["sm_mhz"] for r in rows) / n,
        "sm_mhz_min": min(r["sm_mhz"] for r in rows),
        "power_w_mean": sum(r["power_w"] for r in rows) / n,
        "power_w_max": max(r["power_w"] for r in rows),
        "temp_c_max": max(r["temp_c"] for r in rows),
        "reasons_seen": sorted({r.get("reasons", -1) for r in rows}),
        "samples": n,
    }


def burst(torch, fn, flops, samples):
    time.sleep(IDLE_S)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.time()
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(10):
        fn()
    b.record()
    torch.cuda.synchronize()
    s = a.elapsed_time(b) / 1000.0 / 10
    return {"s_per_call": s, "tflops": flops / s / 1e12, **clocks_between(samples, t0, time.time())}


def sustained(torch, fn, flops, samples, seconds=SUSTAIN_S):
    fn()
    torch.cuda.synchronize()
    # calls per ~0.5 s window from one timed call
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    torch.cuda.synchronize()
    per = max(1, int(0.5 / max(a.elapsed_time(b) / 1000.0, 1e-6)))
    windows = []
    start = time.time()
    while time.time() - start < seconds:
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        w0 = time.time()
        e0.record()
        for _ in range(per):
            fn()
        e1.record()
        e1.synchronize()
        w1 = time.time()
        s = e0.elapsed_time(e1) / 1000.0 / per
        windows.append({"t": w1 - start, "tflops": flops / s / 1e12, **clocks_between(samples, w0, w1)})
    n = len(windows)
    first = windows[: max(1, n // 10)]
    last = windows[-max(1, n // 3):]
    return {
        "calls_per_window": per,
        "windows": windows,
        "first_tenth_tflops": sum(w["tflops"] for w in first) / len(first),
        "last_third_tflops": sum(w["tflops"] for w in last) / len(last),
        "last_third_sm_mhz": sum(w.get("sm_mhz_mean", 0) for w in last) / len(last),
        "last_third_power_w": sum(w.get("power_w_mean", 0) for w in last) / len(last),
    }


def part1(results, save):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    samples = []
    stop = threading.Event()
    th = threading.Thread(target=nvml_sampler, args=(stop, samples), daemon=True)
    th.start()
    time.sleep(1.0)
    results["idle_clocks"] = clocks_between(samples, time.time() - 1.0, time.time())
    dev = "cuda"
    bf = torch.bfloat16

    # 1. GEMM 8192^3 bf16, random data
    n = 8192
    A = torch.randn(n, n, device=dev, dtype=bf)
    B = torch.randn(n, n, device=dev, dtype=bf)
    gemm = lambda: torch.mm(A, B)  # noqa: E731
    fl = 2.0 * n * n * n
    results["gemm_8192"] = {"burst": burst(torch, gemm, fl, samples)}
    results["gemm_8192"]["sustained"] = sustained(torch, gemm, fl, samples)
    results["gemm_8192"]["burst_after"] = burst(torch, gemm, fl, samples)
    del A, B
    save()

    # 2. causal flash attention fwd+bwd, 32 heads of 128, 16K tokens (Llama-2-7B heads)
    import torch.nn.functional as F

    bsz, h, s, d = 1, 32, 16384, 128
    q = torch.randn(bsz, h, s, d, device=dev, dtype=bf, requires_grad=True)
    k = torch.randn(bsz, h, s, d, device=dev, dtype=bf, requires_grad=True)
    v = torch.randn(bsz, h, s, d, device=dev, dtype=bf, requires_grad=True)
    go = torch.randn(bsz, h, s, d, device=dev, dtype=bf)

    def attn():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o.backward(go)

    fl = 3.5 * 2.0 * bsz * h * s * s * d  # same counting as the calibration file
    results["sdpa_16k_fwdbwd"] = {"burst": burst(torch, attn, fl, samples)}
    results["sdpa_16k_fwdbwd"]["sustained"] = sustained(torch, attn, fl, samples)
    del q, k, v, go
    save()

    # 3. one Llama-2-7B-shaped layer, fwd+bwd, 8K tokens, bf16 weights
    hid, ffn, seq = 4096, 11008, 8192
    g = torch.Generator(device=dev).manual_seed(0)
    W = {
        "qkv": torch.randn(hid, 3 * hid, device=dev, dtype=bf, generator=g) * 0.02,
        "o": torch.randn(hid, hid, device=dev, dtype=bf, generator=g) * 0.02,
        "up": torch.randn(hid, 2 * ffn, device=dev, dtype=bf, generator=g) * 0.02,
        "down": torch.randn(ffn, hid, device=dev, dtype=bf, generator=g) * 0.02,
    }
    for w in W.values():
        w.requires_grad_(True)
    x0 = torch.randn(1, seq, hid, device=dev, dtype=bf, requires_grad=True)
    norm_w = torch.ones(hid, device=dev, dtype=bf, requires_grad=True)

    def layer():
        x = x0
        y = F.rms_norm(x, (hid,), norm_w)
        qkv = y @ W["qkv"]
        qq, kk, vv = qkv.view(1, seq, 3, 32, 128).unbind(2)
        o = F.scaled_dot_product_attention(
            qq.transpose(1, 2), kk.transpose(1, 2), vv.transpose(1, 2), is_causal=True
        )
        x = x + o.transpose(1, 2).reshape(1, seq, hid) @ W["o"]
        y = F.rms_norm(x, (hid,), norm_w)
        gu = y @ W["up"]
        gg, uu = gu.chunk(2, dim=-1)
        x = x + (F.silu(gg) * uu) @ W["down"]
        x.sum().backward()

    lin = 2 * seq * hid * (3 * hid + hid + 2 * ffn + ffn)
    att = 2.0 * seq * seq * hid  # causal: half of 4*s*s*h
    fl = 3 * lin + 3.5 * att
    results["llama7b_layer_8k"] = {
        "flops_per_call": fl,
        "burst": burst(torch, layer, fl, samples),
    }
    results["llama7b_layer_8k"]["sustained"] = sustained(torch, layer, fl, samples)
    save()
    stop.set()
    th.join()
    results["nvml_samples_kept"] = len(samples)


CHILD = r"""
import json, sys, time, torch, torch.nn as nn, torch.nn.functional as F, torch.utils.checkpoint
cfg = json.loads(sys.argv[1])
L, H, NH, S, MB, V = cfg["layers"], cfg["hidden"], cfg["heads"], cfg["seq"], cfg["micro_batch"], cfg["vocab"]
FF = cfg.get("ffn", 4 * H)
swiglu = cfg.get("swiglu", False)
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.n1 = nn.RMSNorm(H) if swiglu else nn.LayerNorm(H)
        s.n2 = nn.RMSNorm(H) if swiglu else nn.LayerNorm(H)
        s.qkv = nn.Linear(H, 3 * H, bias=not swiglu)
        s.o = nn.Linear(H, H, bias=not swiglu)
        s.up = nn.Linear(H, (2 if swiglu else 1) * FF, bias=not swiglu)
        s.down = nn.Linear(FF, H, bias=not swiglu)
    def forward(s, x):
        b, t, _ = x.shape
        q, k, v = s.qkv(s.n1(x)).view(b, t, 3, NH, H // NH).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + s.o(a.transpose(1, 2).reshape(b, t, H))
        u = s.up(s.n2(x))
        if swiglu:
            g, u = u.chunk(2, dim=-1)
            u = F.silu(g) * u
        else:
            u = F.gelu(u, approximate="tanh")
        return x + s.down(u)
class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.emb = nn.Embedding(V, H)
        s.blocks = nn.ModuleList(Block() for _ in range(L))
        s.nf = nn.RMSNorm(H) if swiglu else nn.LayerNorm(H)
        s.head = nn.Linear(H, V, bias=False)
    def forward(s, idx):
        x = s.emb(idx)
        for b in s.blocks:
            x = torch.utils.checkpoint.checkpoint(b, x, use_reentrant=False) if cfg.get("recompute") else b(x)
        return s.head(s.nf(x))
torch.manual_seed(0)
with torch.device("cuda"):
    m = GPT()
opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
idx = torch.randint(0, V, (MB, S), device="cuda")
times = []
for i in range(cfg.get("steps", 6)):
    torch.cuda.synchronize(); t0 = time.time()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = m(idx)
    loss = F.cross_entropy(logits.float().view(-1, V), idx.view(-1))
    loss.backward()
    opt.step(); opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize(); times.append(time.time() - t0)
    if i == 0:
        torch.cuda.reset_peak_memory_stats()
st = torch.cuda.memory_stats()
print(json.dumps({
    "params": sum(p.numel() for p in m.parameters()),
    "step_s": times, "step_s_median_after_2": sorted(times[2:])[len(times[2:]) // 2],
    "max_allocated": torch.cuda.max_memory_allocated(),
    "max_reserved": torch.cuda.max_memory_reserved(),
    "num_alloc_retries": st.get("num_alloc_retries", 0),
    "alloc_conf": __import__("os").environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
}))
"""

CASES = [
    # the validation file's GPT 1.4B (tests/validation/h200-gpt1.4b-step.json)
    {"name": "gpt1.4b_s2048_mb8", "layers": 24, "hidden": 2048, "heads": 16, "seq": 2048,
     "micro_batch": 8, "vocab": 50304},
    # Llama-3.2-3B shapes (28 layers, 3072 hidden, 24 heads, ffn 8192, vocab 128256), 8K
    {"name": "llama3b_s8192_mb1", "layers": 28, "hidden": 3072, "heads": 24, "ffn": 8192,
     "swiglu": True, "seq": 8192, "micro_batch": 1, "vocab": 128256},
    # the same with full activation recompute and micro-batch 4
    {"name": "llama3b_s8192_mb4_recompute", "layers": 28, "hidden": 3072, "heads": 24,
     "ffn": 8192, "swiglu": True, "seq": 8192, "micro_batch": 4, "vocab": 128256,
     "recompute": True},
]


def part2(results, save):
    results["allocator"] = []
    for case in CASES:
        for conf in ("", "expandable_segments:True"):
            env = dict(os.environ)
            env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
            if conf:
                env["PYTORCH_CUDA_ALLOC_CONF"] = conf
            t0 = time.time()
            p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(case)], env=env,
                               capture_output=True, text=True, timeout=120)
            row = {"case": case, "alloc_conf": conf, "wall_s": time.time() - t0}
            try:
                row.update(json.loads(p.stdout.strip().splitlines()[-1]))
                row["reserved_over_allocated"] = row["max_reserved"] / row["max_allocated"] - 1
            except Exception:  # noqa: BLE001
                row["error"] = (p.stderr or p.stdout)[-2000:]
            results["allocator"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "step_s"}), flush=True)
            save()


def part3(results, save):
    """Second call: how the sustained loss varies with the kernel's shape and kind, and
    what it is for a whole training step (the GPT 1.4B of CASES[0], 30 s of steps)."""
    import torch

    samples = []
    stop = threading.Event()
    th = threading.Thread(target=nvml_sampler, args=(stop, samples), daemon=True)
    th.start()
    dev, bf = "cuda", torch.bfloat16
    out = results.setdefault("part3", {})
    for m, n, k in ((4096, 4096, 4096), (8192, 4096, 4096), (4096, 28672, 4096),
                    (2048, 2048, 2048), (16384, 8192, 1024)):
        A = torch.randn(m, k, device=dev, dtype=bf)
        B = torch.randn(k, n, device=dev, dtype=bf)
        fn = lambda: torch.mm(A, B)  # noqa: E731
        fl = 2.0 * m * n * k
        name = f"gemm_{m}x{n}x{k}"
        out[name] = {"burst": burst(torch, fn, fl, samples)}
        out[name]["sustained"] = sustained(torch, fn, fl, samples, seconds=10.0)
        save()
    try:
        n = 8192
        A8 = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
        B8 = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=dev)
        fn = lambda: torch._scaled_mm(A8, B8, scale_a=one, scale_b=one, out_dtype=bf)  # noqa: E731
        fl = 2.0 * n * n * n
        out["fp8_gemm_8192"] = {"burst": burst(torch, fn, fl, samples)}
        out["fp8_gemm_8192"]["sustained"] = sustained(torch, fn, fl, samples, seconds=10.0)
    except Exception as e:  # noqa: BLE001
        out["fp8_gemm_8192"] = {"error": repr(e)}
    save()
    X = torch.empty(2 * 1024**3, device=dev, dtype=torch.uint8)
    Y = torch.empty_like(X)
    fn = lambda: Y.copy_(X)  # noqa: E731
    out["hbm_copy_2GiB"] = {"burst": burst(torch, fn, 2.0 * X.numel(), samples)}
    out["hbm_copy_2GiB"]["sustained"] = sustained(torch, fn, 2.0 * X.numel(), samples, seconds=10.0)
    out["hbm_copy_2GiB"]["note"] = "tflops here = TB/s moved, read + write"
    del X, Y
    save()
    import torch.nn.functional as F

    q = torch.randn(4, 32, 4096, 128, device=dev, dtype=bf, requires_grad=True)
    kk = torch.randn_like(q, requires_grad=True)
    vv = torch.randn_like(q, requires_grad=True)
    go = torch.randn_like(q)

    def attn():
        F.scaled_dot_product_attention(q, kk, vv, is_causal=True).backward(go)

    fl = 3.5 * 2.0 * 4 * 32 * 4096 * 4096 * 128
    out["sdpa_4k_b4_fwdbwd"] = {"burst": burst(torch, attn, fl, samples)}
    out["sdpa_4k_b4_fwdbwd"]["sustained"] = sustained(torch, attn, fl, samples, seconds=10.0)
    del q, kk, vv, go
    save()
    stop.set()
    th.join()
    # a whole training step, 30 s of back-to-back steps, in its own process; clocks sampled here
    samples2 = []
    stop2 = threading.Event()
    th2 = threading.Thread(target=nvml_sampler, args=(stop2, samples2), daemon=True)
    th2.start()
    time.sleep(IDLE_S)
    case = dict(CASES[0], steps=110)
    t0 = time.time()
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(case)], capture_output=True,
                       text=True, timeout=200)
    t1 = time.time()
    stop2.set()
    th2.join()
    row = {"case": case}
    try:
        row.update(json.loads(p.stdout.strip().splitlines()[-1]))
        st = row["step_s"]
        row["first_steps_s"] = st[1:4]
        row["last_20_mean_s"] = sum(st[-20:]) / 20
        # clocks over the last 20 steps
        row["last_20_clocks"] = clocks_between(samples2, t1 - sum(st[-20:]) - 1.0, t1 - 1.0)
    except Exception:  # noqa: BLE001
        row["error"] = (p.stderr or p.stdout)[-2000:]
    out["gpt1.4b_train_sustained"] = row
    save()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="1,2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    path = os.path.join(args.out, "h200_sustained.json")

    def save():
        with open(path, "w") as f:
            json.dump(results, f, indent=1)

    try:
        smi = subprocess.run(["nvidia-smi", "-q", "-d", "CLOCK,POWER,PERFORMANCE"],
                             capture_output=True, text=True, timeout=20)
        results["nvidia_smi_q"] = smi.stdout[-6000:]
    except Exception as e:  # noqa: BLE001
        results["nvidia_smi_q"] = repr(e)
    import torch

    results["torch"] = torch.__version__
    results["device"] = torch.cuda.get_device_name(0)
    results["cudnn"] = torch.backends.cudnn.version()
    save()
    parts = args.parts.split(",")
    if "1" in parts:
        part1(results, save)
        for k in ("gemm_8192", "sdpa_16k_fwdbwd", "llama7b_layer_8k"):
            r = results[k]
            print(k, "burst", round(r["burst"]["tflops"], 1), "sustained first",
                  round(r["sustained"]["first_tenth_tflops"], 1), "last third",
                  round(r["sustained"]["last_third_tflops"], 1), "MHz",
                  round(r["sustained"]["last_third_sm_mhz"]), "W",
                  round(r["sustained"]["last_third_power_w"]), flush=True)
    if "2" in parts:
        part2(results, save)
    if "3" in parts:
        part3(results, save)
        for k, r in results["part3"].items():
            if "burst" in r:
                print(k, "burst", round(r["burst"]["tflops"], 1), "sustained last third",
                      round(r["sustained"]["last_third_tflops"], 1), "MHz",
                      round(r["sustained"]["last_third_sm_mhz"]), flush=True)
            else:
                print(k, {x: y for x, y in r.items() if x not in ("step_s", "case")}, flush=True)
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    save()


if __name__ == "__main__":
    main()

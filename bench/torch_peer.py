#!/usr/bin/env python3
"""torch_peer.py: the PyTorch side of bench/tensor.lua.

Times the same operations on the same sizes with the same thread count, and prints one line
per measurement for the Lua side to parse:

    gemm <dtype> <m> <k> <n> <median seconds>
    add <dtype> <elements> <median seconds>

Inputs are random (torch.rand); each case is warmed up, then timed `--reps` times and the
median is printed. With --cuda the tensors live on the GPU and each timing is bracketed by
torch.cuda.synchronize(); without a usable GPU build the script says so and exits 3.
"""
import argparse
import statistics
import sys
import time

import torch

DTYPES = {"f32": torch.float32, "f64": torch.float64}


def median_time(fn, reps, warmup, sync):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (0: PyTorch's default)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--gemm", default="", help="comma-separated dtype:MxKxN, e.g. f32:256x256x256")
    p.add_argument("--add", default="", help="comma-separated dtype:N, e.g. f32:16777216")
    p.add_argument("--cuda", action="store_true", help="run on the GPU")
    args = p.parse_args()

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    device = "cpu"
    sync = lambda: None  # noqa: E731
    if args.cuda:
        if not torch.cuda.is_available():
            print("torch_peer: this PyTorch has no usable CUDA", file=sys.stderr)
            return 3
        device = "cuda"
        sync = torch.cuda.synchronize
    print(f"peer torch {torch.__version__} device {device} threads {torch.get_num_threads()}", flush=True)

    for case in filter(None, args.gemm.split(",")):
        dt, dims = case.split(":")
        m, k, n = (int(x) for x in dims.split("x"))
        a = torch.rand(m, k, dtype=DTYPES[dt], device=device)
        b = torch.rand(k, n, dtype=DTYPES[dt], device=device)
        c = torch.empty(m, n, dtype=DTYPES[dt], device=device)
        t = median_time(lambda: torch.mm(a, b, out=c), args.reps, args.warmup, sync)
        print(f"gemm {dt} {m} {k} {n} {t:.9f}", flush=True)
        del a, b, c

    for case in filter(None, args.add.split(",")):
        dt, n = case.split(":")
        n = int(n)
        a = torch.rand(n, dtype=DTYPES[dt], device=device)
        b = torch.rand(n, dtype=DTYPES[dt], device=device)
        c = torch.empty(n, dtype=DTYPES[dt], device=device)
        t = median_time(lambda: torch.add(a, b, out=c), args.reps, args.warmup, sync)
        print(f"add {dt} {n} {t:.9f}", flush=True)
        del a, b, c
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""bench/loader_peer.py: the PyTorch peer of bench/loader.lua.

torchvision's ImageFolder (PIL decode) with the standard ImageNet transforms and a
DataLoader with the given worker counts; prints `RESULT <mode> <workers> <images/s>`.
Files are read through the page cache (bench/loader.lua warms it by caching the same set).
"""
import argparse
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(1)
    norm = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    modes = {
        "train": transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                                     transforms.ToTensor(), norm]),
        "eval": transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224),
                                    transforms.ToTensor(), norm]),
    }
    for workers in [int(t) for t in args.threads.split(",")]:
        for mode, tf in modes.items():
            ds = datasets.ImageFolder(args.dir, transform=tf)
            best = 0.0
            for _ in range(2):  # the first pass starts the worker processes and warms caches
                loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=workers,
                                    prefetch_factor=4, persistent_workers=False)
                t0, n = time.perf_counter(), 0
                for x, _ in loader:
                    n += x.shape[0]
                best = max(best, n / (time.perf_counter() - t0))
            print(f"RESULT {mode} {workers} {best:.1f}", flush=True)


if __name__ == "__main__":
    main()

# conv_layers_peer.py: PyTorch's side of bench/conv_layers.lua -- one convolution (no bias)
# forward, input gradient and weight gradient, each timed alone, on the CPU.
#   python3 bench/conv_layers_peer.py --threads 2 --reps 20 --warmup 3 --shapes 32x64x64x3x1x1x32,...
# (batch x nIn x nOut x kernel x stride x pad x size). Prints "<shape> <fwd ms> <gradInput ms> <gradWeight ms>".
import argparse, time, statistics
import torch


def timed(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1000)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--reps', type=int, default=20)
    ap.add_argument('--warmup', type=int, default=3)
    ap.add_argument('--shapes', required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    conv_bwd = torch.ops.aten.convolution_backward
    with torch.no_grad():
        for s in a.shapes.split(','):
            n, cin, cout, k, st, pad, h = (int(v) for v in s.split('x'))
            x = torch.randn(n, cin, h, h)
            w = torch.randn(cout, cin, k, k)
            y = torch.nn.functional.conv2d(x, w, None, st, pad)
            dy = torch.randn_like(y)
            args = (None, [st, st], [pad, pad], [1, 1], False, [0, 0], 1)
            f = timed(lambda: torch.nn.functional.conv2d(x, w, None, st, pad), a.reps, a.warmup)
            gi = timed(lambda: conv_bwd(dy, x, w, *args, [True, False, False]), a.reps, a.warmup)
            gw = timed(lambda: conv_bwd(dy, x, w, *args, [False, True, False]), a.reps, a.warmup)
            print(s, '%.3f %.3f %.3f' % (f, gi, gw), flush=True)


if __name__ == '__main__':
    main()

# layers_peer.py: PyTorch's side of the -layers table of bench/conv_layers.lua. Reads the scratch
# folder that bench/layers_table.lua wrote (manifest.txt: "C <case> <kind> <args>" and
# "T <case> <name> <dims>", each tensor raw float32 in <case>_<name>.bin, in moontorch's layout),
# recomputes each case's output and gradients from the same input, parameters and output gradient,
# and times forward and backward (autograd to the input and the parameters) on the CPU.
#   python3 bench/layers_peer.py --threads 2 --reps 20 --warmup 3 --dir /tmp/xyz
# Prints "<case> <fwd ms> <bwd ms> <max abs diff>" ("random" where the module draws noise).
import argparse, math, os, statistics, time
import numpy as np
import torch
import torch.nn.functional as F


def timed(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1000)
    return statistics.median(t)


def leaf(t):
    return t.clone().requires_grad_(True)


def kernel(w, a, b, dims):
    return int(round((w.numel() / (a * b)) ** (1.0 / dims)))


# Each builder returns (forward function, [(name of our gradient, leaf)]); the forward gives the
# output in moontorch's layout, so the gradients of the leaves are in it too.
def build(kind, a, T):
    x = T.get('x')
    if kind in ('conv2d', 'convT2d', 'conv3d', 'convT3d'):
        x, w, b = leaf(x), leaf(T['weight']), leaf(T['bias'])
        cin, cout = x.shape[1], T['y'].shape[1]
        d = 3 if kind.endswith('3d') else 2
        trans = kind.startswith('convT')
        k = kernel(w, cin, cout, d)
        shape = (cin, cout) if trans else (cout, cin)
        s, p = int(a[0]), int(a[1])
        if kind == 'conv2d':
            f = lambda: F.conv2d(x, w.view(*shape, k, k), b, s, p, int(a[2]))
        elif kind == 'convT2d':
            f = lambda: F.conv_transpose2d(x, w.view(*shape, k, k), b, s, p)
        elif kind == 'conv3d':
            f = lambda: F.conv3d(x, w.view(*shape, k, k, k), b, s, p)
        else:
            f = lambda: F.conv_transpose3d(x, w.view(*shape, k, k, k), b, s, p)
        return f, [('gx', x), ('gradWeight', w), ('gradBias', b)]
    if kind == 'local2d':
        x, w, b = leaf(x), leaf(T['weight']), leaf(T['bias'])
        k, s, p = int(a[1]), int(a[2]), int(a[3])
        n, cout, oh, ow = T['y'].shape

        def f():
            cols = F.unfold(x, k, padding=p, stride=s)  # N x (C k k) x L
            y = torch.einsum('nkl,lok->nol', cols, w.reshape(oh * ow, cout, -1))
            return (y + b.reshape(cout, oh * ow)).view(n, cout, oh, ow)
        return f, [('gx', x), ('gradWeight', w), ('gradBias', b)]
    if kind == 'conv1d':
        x, w, b = leaf(x), leaf(T['weight']), leaf(T['bias'])
        cin, cout, k = int(a[0]), int(a[1]), int(a[2])
        return (lambda: F.conv1d(x.transpose(1, 2), w.view(cout, k, cin).permute(0, 2, 1), b).transpose(1, 2),
                [('gx', x), ('gradWeight', w), ('gradBias', b)])
    if kind == 'embedding':
        idx, w = (T['x'] - 1).long(), leaf(T['weight'])
        return lambda: F.embedding(idx, w), [('gradWeight', w)]
    if kind == 'bmm':
        x1, x2 = leaf(T['x1']), leaf(T['x2'])
        return lambda: torch.bmm(x1, x2), [('gx1', x1), ('gx2', x2)]
    if kind == 'maxunpool2d':
        k = int(a[0])
        _, idx = F.max_pool2d(T['x0'], k, k, return_indices=True)
        x = leaf(x)
        return lambda: F.max_unpool2d(x, idx, k, k, output_size=T['x0'].shape[-2:]), [('gx', x)]
    if kind in ('bn', 'prelu'):
        x, w = leaf(x), leaf(T['weight'])
        if kind == 'prelu':
            return lambda: F.prelu(x, w), [('gx', x), ('gradWeight', w)]
        b, c = leaf(T['bias']), x.shape[1]
        rm, rv = torch.zeros(c), torch.ones(c)
        return (lambda: F.batch_norm(x, rm, rv, w, b, True, float(a[1]), float(a[0])),
                [('gx', x), ('gradWeight', w), ('gradBias', b)])
    if kind in ('nll', 'crossentropy', 'mse', 'smoothl1'):
        x, t = leaf(x), T['target']
        fn = {'nll': lambda: F.nll_loss(x, t.long() - 1), 'crossentropy': lambda: F.cross_entropy(x, t.long() - 1),
              'mse': lambda: F.mse_loss(x, t), 'smoothl1': lambda: F.smooth_l1_loss(x, t)}[kind]
        return (lambda: fn().view(1)), [('gx', x)]
    x = leaf(x)
    i = [int(v) if v.lstrip('-').isdigit() else None for v in a]
    fns = {
        'maxpool2d': lambda: F.max_pool2d(x, i[0], i[1], i[2]),
        'avgpool2d': lambda: F.avg_pool2d(x, i[0], i[1], i[2]),
        'adamax2d': lambda: F.adaptive_max_pool2d(x, (i[1], i[0])),
        'adaavg2d': lambda: F.adaptive_avg_pool2d(x, (i[1], i[0])),
        'fracmax2d': lambda: F.fractional_max_pool2d(x, i[0], output_size=i[1], _random_samples=T['samples']),
        'lppool2d': lambda: F.lp_pool2d(x, float(a[0]), i[1], i[2]),
        'maxpool1d': lambda: F.max_pool1d(x.transpose(1, 2), i[0], i[1]).transpose(1, 2),
        'maxpool3d': lambda: F.max_pool3d(x, i[0], i[1]),
        'avgpool3d': lambda: F.avg_pool3d(x, i[0], i[1]),
        'upnearest': lambda: F.interpolate(x, scale_factor=i[0], mode='nearest'),
        'upbilinear': lambda: F.interpolate(x, size=(i[0], i[1]), mode='bilinear', align_corners=True),
        'pad': lambda: F.pad(x, (i[1], i[2], i[3], i[4]), mode=a[0]),
        'lrn': lambda: F.local_response_norm(x, i[0], float(a[1]), float(a[2]), float(a[3])),
        'softmax1': lambda: F.softmax(x, 1),
        'elu': lambda: F.elu(x, float(a[0])),
        'rrelu': lambda: F.rrelu(x, float(a[0]), float(a[1]), training=True),
        'normalize': lambda: F.normalize(x, float(a[0]), 1, 1e-10),
    }
    return fns[kind], [('gx', x)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--reps', type=int, default=20)
    ap.add_argument('--warmup', type=int, default=3)
    ap.add_argument('--dir', required=True)
    o = ap.parse_args()
    torch.set_num_threads(o.threads)
    cases, tensors = [], {}
    for line in open(os.path.join(o.dir, 'manifest.txt')):
        f = line.split()
        if f[0] == 'C':
            cases.append((f[1], f[2], [] if f[3] == '-' else f[3].split(',')))
        else:
            dims = [int(d) for d in f[3].split('x')]
            a = np.fromfile(os.path.join(o.dir, '%s_%s.bin' % (f[1], f[2])), dtype=np.float32).reshape(dims)
            tensors.setdefault(f[1], {})[f[2]] = torch.from_numpy(a)
    for case, kind, args in cases:
        T = tensors[case]
        fn, leaves = build(kind, args, T)
        y = fn()
        assert y.shape == T['y'].shape, '%s %s: output %s, ours %s' % (case, kind, tuple(y.shape), tuple(T['y'].shape))
        crit = 'dy' not in T
        grads = torch.autograd.grad(y, [t for _, t in leaves], None if crit else T['dy'], retain_graph=True)
        diff = (y.detach() - T['y']).abs().max().item()
        for (name, _), g in zip(leaves, grads):
            assert g.shape == T[name].shape, '%s %s: %s %s, ours %s' % (case, kind, name, tuple(g.shape), tuple(T[name].shape))
            diff = max(diff, (g - T[name]).abs().max().item())
        if math.isnan(diff):
            diff = float('inf')
        fwd = timed(fn, o.reps, o.warmup)
        dy = None if crit else T['dy']
        ts = [t for _, t in leaves]
        bwd = timed(lambda: torch.autograd.grad(y, ts, dy, retain_graph=True), o.reps, o.warmup)
        print(case, '%.3f %.3f %s' % (fwd, bwd, 'random' if kind == 'rrelu' else '%.1e' % diff), flush=True)


if __name__ == '__main__':
    main()

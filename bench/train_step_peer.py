# train_step_peer.py: PyTorch's side of bench/train_step.lua -- one training step (forward,
# backward, SGD update) of the same models, batch sizes and thread count, on the CPU.
# With --cuda, on the GPU, each step bracketed by torch.cuda.synchronize().
#   python3 bench/train_step_peer.py --threads 2 --reps 10 --warmup 3 [--models small_cnn,resnet18]
#                                    [--precision fp32,bf16] [--layout nchw,nhwc] [--cuda]
# --precision, PyTorch's usual way to train in each (parameters and SGD stay float32 in all):
#   fp32  plain float32
#   bf16  torch.autocast(<device>, dtype=torch.bfloat16) around forward and loss
#   fp16  torch.autocast('cuda', dtype=torch.float16) and a GradScaler, GPU only: PyTorch 1.13's
#         CPU autocast has no float16, so on the CPU this prints n/a instead of a time
# --layout nhwc: model and input .to(memory_format=torch.channels_last).
# Prints one line per model, precision and layout: "<name> <precision>/<layout> <median ms/step>
# <first-step loss>", or "<name> <precision>/<layout> n/a".
import argparse, time, statistics
import torch
import torch.nn as nn


def small_cnn(width=32, hidden=128, n_classes=10):
    w = width
    return nn.Sequential(
        nn.Conv2d(1, w, 3, 1, 1), nn.BatchNorm2d(w), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
        nn.Conv2d(w, 2 * w, 3, 1, 1), nn.BatchNorm2d(2 * w), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(2 * w * 49, hidden), nn.BatchNorm1d(hidden), nn.ReLU(inplace=True),
        nn.Dropout(0.3), nn.Linear(hidden, n_classes))


class Basic(nn.Module):
    def __init__(self, n_in, n, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(n_in, n, 3, stride, 1, bias=False), nn.BatchNorm2d(n), nn.ReLU(inplace=True),
            nn.Conv2d(n, n, 3, 1, 1, bias=False), nn.BatchNorm2d(n))
        self.short = nn.Identity()
        if stride != 1 or n_in != n:  # shortcut type B: projection only where the shape changes
            self.short = nn.Sequential(nn.Conv2d(n_in, n, 1, stride, 0, bias=False), nn.BatchNorm2d(n))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + self.short(x))


def cifar_resnet18(n_classes=10):
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True)]
    n_in = 64
    for n, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Basic(n_in, n, stride), Basic(n, n, 1)]
        n_in = n
    layers += [nn.AvgPool2d(4), nn.Flatten(), nn.Linear(512, n_classes)]
    return nn.Sequential(*layers)


class Bottleneck(nn.Module):
    # 1x1, 3x3 (stride here, as in fb.resnet.torch and lua/moontorch/models/resnet.lua), 1x1 x4
    def __init__(self, n_in, n, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(n_in, n, 1, 1, 0, bias=False), nn.BatchNorm2d(n), nn.ReLU(inplace=True),
            nn.Conv2d(n, n, 3, stride, 1, bias=False), nn.BatchNorm2d(n), nn.ReLU(inplace=True),
            nn.Conv2d(n, 4 * n, 1, 1, 0, bias=False), nn.BatchNorm2d(4 * n))
        self.short = nn.Identity()
        if stride != 1 or n_in != 4 * n:
            self.short = nn.Sequential(nn.Conv2d(n_in, 4 * n, 1, stride, 0, bias=False), nn.BatchNorm2d(4 * n))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + self.short(x))


def imagenet_resnet50(n_classes=1000):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    n_in = 64
    for n, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(count):
            layers.append(Bottleneck(n_in, n, stride if i == 0 else 1))
            n_in = 4 * n
    layers += [nn.AvgPool2d(7), nn.Flatten(), nn.Linear(2048, n_classes)]
    return nn.Sequential(*layers)


CASES = {
    'small_cnn': (small_cnn, (64, 1, 28, 28), 10),
    'resnet18': (cifar_resnet18, (32, 3, 32, 32), 10),
    'resnet50': (imagenet_resnet50, (64, 3, 224, 224), 1000),
}


def make_step(model, crit, opt, x, y, prec, cuda):
    """one training step in the given precision, returning the loss"""
    if prec == 'fp32':
        def step():
            opt.zero_grad(set_to_none=False)
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step
    dtype = torch.bfloat16 if prec == 'bf16' else torch.float16
    dev = 'cuda' if cuda else 'cpu'
    if prec == 'bf16':  # bfloat16 has float32's range: no loss scaling
        def step():
            opt.zero_grad(set_to_none=False)
            with torch.autocast(dev, dtype=dtype):
                loss = crit(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step
    assert cuda, 'float16 autocast is GPU only here'
    scaler = torch.cuda.amp.GradScaler()

    def step():
        opt.zero_grad(set_to_none=False)
        with torch.autocast('cuda', dtype=dtype):
            loss = crit(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--reps', type=int, default=10)
    ap.add_argument('--warmup', type=int, default=3)
    ap.add_argument('--batch', type=int, default=0, help="every model's batch size (0: its own)")
    ap.add_argument('--models', default='small_cnn,resnet18')
    ap.add_argument('--precision', default='fp32,bf16', help='comma-separated: fp32, bf16, fp16')
    ap.add_argument('--layout', default='nchw', help='comma-separated: nchw, nhwc (torch.channels_last)')
    ap.add_argument('--cuda', action='store_true', help='run on the GPU')
    ap.add_argument('--tf32', action='store_true',
                    help="TF32 tensor cores in cuDNN convolutions and cuBLAS matmuls (moontorch's "
                         "torch.cuda.allowTF32(true)). Without it the peer computes in plain float32 as "
                         "moontorch does by default")
    a = ap.parse_args()
    precisions = a.precision.split(',')
    for prec in precisions:
        if prec not in ('fp32', 'bf16', 'fp16'):
            ap.error('unknown precision %s (fp32, bf16, fp16)' % prec)
    if a.cuda:
        torch.backends.cudnn.allow_tf32 = a.tf32
        torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.set_num_threads(a.threads)
    dev = 'cuda' if a.cuda else 'cpu'
    sync = torch.cuda.synchronize if a.cuda else (lambda: None)
    layouts = a.layout.split(',')
    for lay in layouts:
        if lay not in ('nchw', 'nhwc'):
            ap.error('unknown layout %s (nchw, nhwc)' % lay)
    variants = [(prec, lay) for prec in precisions for lay in layouts]
    for name in a.models.split(','):
        make, shape, classes = CASES[name]
        if a.batch:
            shape = (a.batch,) + tuple(shape[1:])
        for prec, lay in variants:
            key = prec + '/' + lay
            if prec == 'fp16' and not a.cuda:
                print(name, key, 'n/a', flush=True)
                continue
            fmt = torch.channels_last if lay == 'nhwc' else torch.contiguous_format
            torch.manual_seed(0)
            model = make().train().to(dev).to(memory_format=fmt)
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
            crit = nn.CrossEntropyLoss()
            x = torch.randn(*shape, device=dev).contiguous(memory_format=fmt)
            y = torch.randint(0, classes, (shape[0],), device=dev)
            step = make_step(model, crit, opt, x, y, prec, a.cuda)
            first = step().item()  # the first warm-up step
            for _ in range(a.warmup - 1):
                step()
            sync()
            times = []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                step()
                sync()
                times.append((time.perf_counter() - t0) * 1000)
            print(name, key, '%.3f' % statistics.median(times), '%.6f' % first, flush=True)
            del model, opt, step


if __name__ == '__main__':
    main()

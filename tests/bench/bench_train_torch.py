#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch's side of bench_train: the same training steps with torch (one thread, OpenBLAS),
timed the same way. bench_train runs it and prints the ratios; alone:

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 tests/bench/bench_train_torch.py

Prints one line per model: "<name> <steps per second>", and the CNN's again with two threads
("cnn_2threads"); its "cnn" line is the faster of one and two threads.
"""
import argparse
import time

import torch

# name: (MLP widths or None for the digits CNN, batch size, learning rate)
MODELS = {
    "small": ([2, 64, 64, 3], 256, 0.05),
    "large": ([784, 512, 512, 10], 128, 0.01),
    "cnn": (None, 64, 0.003),
}


def mlp(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def digits_cnn():
    """resources/examples/digits.nns: 1x16x16 images, ten classes."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10))


def steps_per_second(widths, batch, lr, seconds, clock):
    torch.manual_seed(0)
    batches = 16
    if widths:
        x = torch.randn(batches * batch, widths[0])
        y = torch.randint(0, widths[-1], (batches * batch,))
        net = mlp(widths)
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
    else:
        x = torch.randn(batches * batch, 1, 16, 16)
        y = torch.randint(0, 10, (batches * batch,))
        net = digits_cnn()
        opt = torch.optim.Adam(net.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(i):
        b = i % batches
        xb, yb = x[b * batch:(b + 1) * batch], y[b * batch:(b + 1) * batch]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(xb), yb)
        loss.backward()
        opt.step()

    for i in range(20):  # warm up
        step(i)
    best = 0.0
    for _ in range(3):  # the best of three windows, as bench_train does
        n, start = 0, clock()
        while clock() - start < seconds:
            step(n)
            n += 1
        best = max(best, n / (clock() - start))
    return best


def gpu_rate(step, seconds):
    """Steps per second of step(i) on the GPU: 20 to warm up, then the best of three windows,
    each ending with a synchronize (kernels are queued)."""
    for i in range(20):
        step(i)
    torch.cuda.synchronize()
    best = 0.0
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            step(n)
            n += 1
        torch.cuda.synchronize()
        best = max(best, n / (time.perf_counter() - start))
    return best


class ReverseTransformer(torch.nn.Module):
    """resources/examples/reverse_transformer.nns in PyTorch: Embedding(10, 32), learned
    positions (max_len 16), two TransformerEncoderLayer(32, 4, 64, dropout 0, batch_first),
    Linear(32, 10)."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 32)
        self.pos = torch.nn.Parameter(torch.randn(16, 32) * 0.02)
        self.encoder = torch.nn.Sequential(*[
            torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
            for _ in range(2)])
        self.head = torch.nn.Linear(32, 10)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[:tokens.shape[1]]
        return self.head(self.encoder(x))


def transformer_rate(seconds, device):
    """The reverse transformer's training steps per second (batch 64 of 8 tokens, Adam, the
    loss over the positions), as bench_train's transformer row."""
    torch.manual_seed(0)
    net = ReverseTransformer().to(device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = 16
    xs = [torch.randint(0, 10, (64, 8), device=device) for _ in range(batches)]
    ys = [torch.randint(0, 10, (64 * 8,), device=device) for _ in range(batches)]

    def step(i):
        b = i % batches
        opt.zero_grad(set_to_none=True)
        loss_fn(net(xs[b]).reshape(-1, 10), ys[b]).backward()
        opt.step()

    return gpu_rate(step, seconds)


def device_rates(seconds, device):
    """The MLPs and the CNN on a GPU (float32, TF32 off as PyTorch's default), and a 4096 x 4096
    float32 product's rate in TFLOP/s ("gemm4096"); each window ends with a synchronize."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name, (widths, batch, lr) in MODELS.items():
        torch.manual_seed(0)
        batches = 16
        if widths:
            x = torch.randn(batches * batch, widths[0], device=device)
            y = torch.randint(0, widths[-1], (batches * batch,), device=device)
            net = mlp(widths).to(device)
            opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
        else:
            x = torch.randn(batches * batch, 1, 16, 16, device=device)
            y = torch.randint(0, 10, (batches * batch,), device=device)
            net = digits_cnn().to(device)
            opt = torch.optim.Adam(net.parameters(), lr=lr)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step(i):
            b = i % batches
            opt.zero_grad(set_to_none=True)
            loss_fn(net(x[b * batch:(b + 1) * batch]), y[b * batch:(b + 1) * batch]).backward()
            opt.step()

        print(f"{name} {gpu_rate(step, seconds):.1f}", flush=True)
    print(f"transformer {transformer_rate(seconds, device):.1f}", flush=True)
    a = torch.randn(4096, 4096, device=device)
    b = torch.randn(4096, 4096, device=device)
    for _ in range(3):
        torch.mm(a, b)
    torch.cuda.synchronize()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        torch.mm(a, b)
        n += 1
    torch.cuda.synchronize()
    print(f"gemm4096 {2 * 4096 ** 3 * n / (time.perf_counter() - start) / 1e12:.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0, help="length of each window")
    parser.add_argument("--cpu", action="store_true",
                        help="count the process's CPU time instead of wall time")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda: the GPU rows")
    args = parser.parse_args()
    if args.device != "cpu":
        device_rates(args.seconds, args.device)
        return
    torch.set_num_threads(1)
    # As the engine's side does (a momentum buffer that decays turns denormal and slows both).
    torch.set_flush_denormal(True)
    clock = time.process_time if args.cpu else time.perf_counter
    for name, (widths, batch, lr) in MODELS.items():
        rate = steps_per_second(widths, batch, lr, args.seconds, clock)
        if widths is None:
            torch.set_num_threads(2)
            rate2 = steps_per_second(widths, batch, lr, args.seconds, clock)
            torch.set_num_threads(1)
            print(f"{name}_2threads {rate2:.1f}", flush=True)
            rate = max(rate, rate2)
        print(f"{name} {rate:.1f}", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""PyTorch's side of bench_train: the same training steps with torch (one thread, OpenBLAS),
timed the same way. bench_train runs it and prints the ratios; alone:

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 /usr/bin/python3 tests/bench/bench_train_torch.py

Prints one line per model: "<name> <steps per second>".
"""
import argparse
import time

import torch

# name: (widths, batch size, learning rate)
MODELS = {
    "small": ([2, 64, 64, 3], 256, 0.05),
    "large": ([784, 512, 512, 10], 128, 0.01),
}


def mlp(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def steps_per_second(widths, batch, lr, seconds, clock):
    torch.manual_seed(0)
    batches = 16
    x = torch.randn(batches * batch, widths[0])
    y = torch.randint(0, widths[-1], (batches * batch,))
    net = mlp(widths)
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0, help="length of each window")
    parser.add_argument("--cpu", action="store_true",
                        help="count the process's CPU time instead of wall time")
    args = parser.parse_args()
    torch.set_num_threads(1)
    # As the engine's side does (a momentum buffer that decays turns denormal and slows both).
    torch.set_flush_denormal(True)
    clock = time.process_time if args.cpu else time.perf_counter
    for name, (widths, batch, lr) in MODELS.items():
        print(f"{name} {steps_per_second(widths, batch, lr, args.seconds, clock):.1f}", flush=True)


if __name__ == "__main__":
    main()

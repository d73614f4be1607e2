#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""NN Studio's image loader against torchvision's DataLoader on the same folder of images, in
one run on one machine. Not a test (it times), a benchmark:

    /usr/bin/python3 tests/bench/bench_loader.py build/release/app/nnstudio-cli --runs 5

The folder (an ImageFolder layout: 10 class folders) is made once with PIL into --folder
(/tmp/nns_bench_loader) and kept for later runs: --images (10,000) images of 48 to 64 pixels a
side, 80% JPEG (quality 90) and 20% PNG, with real content (a colour gradient, a few shapes and
noise). Then, --runs times, interleaved, each side loads every image through
`Resize(40), RandomCrop(32), ToTensor(), Normalize(mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))`:

- NN Studio: `nnstudio-cli data FOLDER --transform "..."`, which decodes and transforms every
  image on all cores into one [N, 3, 32, 32] tensor; the whole command is timed (wall clock),
  its process start and folder listing included.
- torchvision: `ImageFolder(FOLDER, T.Compose([...]))` through `DataLoader(batch_size=256,
  num_workers=2, shuffle=True)`, every batch taken (the workers stack them); timed from making
  the DataLoader (its workers' start included) to the last batch. The ImageFolder, made once
  before, lists the folder; that time is printed apart. The workers run torch with one thread
  (DataLoader's own `torch.set_num_threads(1)`, set again by the worker_init_fn here).

One untimed round of both comes first (--warmup), so both read the files from the page cache.
Prints each side's images/s (median and best of --runs, and every run's seconds), the ratio
NN Studio / torchvision, each side's CPU time (user + system of all its processes: steadier
than wall time when other processes share the cores) and the load average before and after.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

TRANSFORM = ("Resize(40), RandomCrop(32), ToTensor(), "
             "Normalize(mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))")
CLASSES = 10
MARKER = ".bench_loader.json"  # at the folder's root: neither loader reads files there


def folder_spec(images):
    return {"images": images, "classes": CLASSES, "sizes": [48, 64], "png_share": 0.2,
            "jpeg_quality": 90, "seed": 0, "version": 1}


def make_image(rng, np, cls):
    """An RGB image of 48-64 x 48-64 pixels: a gradient between two colours (the class sets
    the first one's hue) in a random direction, a few filled rectangles and discs, and noise."""
    h, w = (int(v) for v in rng.integers(48, 65, size=2))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    angle = rng.uniform(0, 2 * np.pi)
    t = (np.cos(angle) * xx / w + np.sin(angle) * yy / h)
    t = (t - t.min()) / max(float(t.max() - t.min()), 1e-6)
    base = np.array([np.cos(cls * 0.63), np.cos(cls * 0.63 + 2.1), np.cos(cls * 0.63 + 4.2)])
    c0 = 127 + 100 * base + rng.normal(0, 20, 3)
    c1 = rng.uniform(0, 255, 3)
    img = c0[None, None, :] * (1 - t[..., None]) + c1[None, None, :] * t[..., None]
    for _ in range(int(rng.integers(1, 4))):
        colour = rng.uniform(0, 255, 3)
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r = rng.uniform(4, 16)
        if rng.random() < 0.5:
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
        else:
            mask = (abs(yy - cy) < r) & (abs(xx - cx) < r * rng.uniform(0.5, 1.5))
        img[mask] = 0.3 * img[mask] + 0.7 * colour
    img += rng.normal(0, 12, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def ensure_folder(folder, images):
    """The folder of images, made with PIL unless it is there already with the same spec."""
    spec = folder_spec(images)
    marker = os.path.join(folder, MARKER)
    try:
        with open(marker) as f:
            if json.load(f) == spec:
                return False
    except (OSError, ValueError):
        pass
    import numpy as np
    from PIL import Image
    os.makedirs(folder, exist_ok=True)
    if os.path.exists(marker):
        os.remove(marker)
    for c in range(CLASSES):  # a folder of another --images count: its images go
        d = os.path.join(folder, "class%d" % c)
        if os.path.isdir(d):
            for name in os.listdir(d):
                os.remove(os.path.join(d, name))
        os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(spec["seed"])
    start = time.perf_counter()
    for i in range(images):
        cls = i % CLASSES
        pixels = Image.fromarray(make_image(rng, np, cls), "RGB")
        stem = os.path.join(folder, "class%d" % cls, "%06d" % i)
        if rng.random() < spec["png_share"]:
            pixels.save(stem + ".png")
        else:
            pixels.save(stem + ".jpg", quality=spec["jpeg_quality"])
    with open(marker, "w") as f:
        json.dump(spec, f)
    print("made %s: %d images in %.1f s" % (folder, images, time.perf_counter() - start))
    return True


def describe_folder(folder):
    jpeg = png = size = 0
    for c in range(CLASSES):
        d = os.path.join(folder, "class%d" % c)
        for name in os.listdir(d):
            size += os.path.getsize(os.path.join(d, name))
            if name.endswith(".png"):
                png += 1
            else:
                jpeg += 1
    return jpeg, png, size


def cpu_seconds():
    """CPU time (user + system) of this process and of its children that have ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_nnstudio(cli, folder, images):
    """The command's wall time and CPU time."""
    cpu = cpu_seconds()
    start = time.perf_counter()
    done = subprocess.run([cli, "data", folder, "--transform", TRANSFORM],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu
    if done.returncode != 0:
        raise SystemExit("nnstudio-cli data failed (%d):\n%s%s"
                         % (done.returncode, done.stdout, done.stderr))
    m = re.search(r"(\d+) samples", done.stdout)
    if not m or int(m.group(1)) != images or "skipped" in done.stdout:
        raise SystemExit("expected %d samples from nnstudio-cli data:\n%s" % (images, done.stdout))
    return seconds, cpu


def one_thread(_worker_id):
    import torch
    torch.set_num_threads(1)


def run_torchvision(dataset, images, workers, batch_size):
    """The loop's wall time and CPU time (this process and its workers, which the DataLoader
    has joined when the last batch is taken)."""
    import torch
    from torch.utils.data import DataLoader
    cpu = cpu_seconds()
    start = time.perf_counter()
    loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, shuffle=True,
                        worker_init_fn=one_thread if workers > 0 else None)
    seen = 0
    for x, y in loader:
        seen += x.shape[0]
    seconds = time.perf_counter() - start
    del loader
    cpu = cpu_seconds() - cpu
    if seen != images or tuple(x.shape[1:]) != (3, 32, 32) or x.dtype != torch.float32:
        raise SystemExit("torchvision gave %d samples of %s, expected %d of (3, 32, 32)"
                         % (seen, tuple(x.shape[1:]), images))
    return seconds, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cli", nargs="?", default="build/release/app/nnstudio-cli")
    ap.add_argument("--folder", default="/tmp/nns_bench_loader",
                    help="the image folder, made there once (default /tmp/nns_bench_loader)")
    ap.add_argument("--images", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    ap.add_argument("--workers", type=int, default=2, help="torchvision's num_workers")
    ap.add_argument("--batch-size", type=int, default=256, help="torchvision's batch size")
    a = ap.parse_args()
    if not os.access(a.cli, os.X_OK):
        raise SystemExit(a.cli + ": no such program (build it: cmake --build --preset release "
                         "--target nnstudio-cli)")
    if a.images < CLASSES:
        raise SystemExit("--images must be at least %d" % CLASSES)

    ensure_folder(a.folder, a.images)
    jpeg, png, size = describe_folder(a.folder)
    if jpeg + png != a.images:
        raise SystemExit("%s holds %d images, expected %d" % (a.folder, jpeg + png, a.images))

    import torch
    import torchvision
    import torchvision.transforms as T
    from torchvision.datasets import ImageFolder
    start = time.perf_counter()
    dataset = ImageFolder(a.folder, T.Compose([
        T.Resize(40), T.RandomCrop(32), T.ToTensor(),
        T.Normalize(mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))]))
    listing = time.perf_counter() - start

    print("folder: %s, %d images (%d JPEG q90, %d PNG, 48-64 px a side), %d classes, %.1f MB"
          % (a.folder, a.images, jpeg, png, CLASSES, size / 1e6))
    print("transforms: %s" % TRANSFORM)
    print("machine: %d cores; torch %s, torchvision %s; load average %.2f %.2f %.2f at start"
          % ((os.cpu_count() or 0, torch.__version__, torchvision.__version__)
             + os.getloadavg()))
    sys.stdout.flush()

    times = {"nnstudio": [], "torchvision": []}
    cpu = {"nnstudio": [], "torchvision": []}
    for r in range(a.warmup + a.runs):
        nns = run_nnstudio(a.cli, a.folder, a.images)
        tv = run_torchvision(dataset, a.images, a.workers, a.batch_size)
        if r >= a.warmup:
            for side, (seconds, cpu_s) in (("nnstudio", nns), ("torchvision", tv)):
                times[side].append(seconds)
                cpu[side].append(cpu_s)

    labels = {
        "nnstudio": "NN Studio   (nnstudio-cli data, all cores)",
        "torchvision": "torchvision (DataLoader, %d workers, batch %d)" % (a.workers, a.batch_size),
    }
    rates = {}
    for side in ("nnstudio", "torchvision"):
        median = statistics.median(times[side])
        best = min(times[side])
        rates[side] = (a.images / median, a.images / best)
        print("%s: median %6.0f images/s (%.2f s), best %6.0f images/s; runs: %s"
              % (labels[side], a.images / median, median, a.images / best,
                 " ".join("%.2f" % s for s in times[side])))
    cpu_median = {side: statistics.median(cpu[side]) for side in cpu}
    print("CPU time, all processes (median): NN Studio %.2f s, torchvision %.2f s; "
          "images per CPU second %.0f and %.0f (%.2fx)"
          % (cpu_median["nnstudio"], cpu_median["torchvision"],
             a.images / cpu_median["nnstudio"], a.images / cpu_median["torchvision"],
             cpu_median["torchvision"] / cpu_median["nnstudio"]))
    print("torchvision's ImageFolder listing (made once, not in its time): %.3f s" % listing)
    print("NN Studio / torchvision: %.2fx (medians), %.2fx (bests)"
          % (rates["nnstudio"][0] / rates["torchvision"][0],
             rates["nnstudio"][1] / rates["torchvision"][1]))
    print("load average %.2f %.2f %.2f at the end" % os.getloadavg())


if __name__ == "__main__":
    main()

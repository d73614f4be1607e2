#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The exported train.py on a user's own files (ctest torch.export_own_data): a project whose
data is "files" exports a train.py that reads those files itself, as NN Studio reads them.

  1. MNIST idx files (600 train, gzipped, and 200 test, plain, in torchvision's root layout
     MNIST/raw; a bright bar whose row is the class, and noise): train.py's test tensors are
     `nnstudio-cli data SOURCE --split test`'s bit for bit, 3 epochs of train.py reach well
     above chance on the test split, and so do 3 epochs of `nnstudio-cli train`.
  2. An image folder of PNGs of several sizes without a test split (3 classes told apart by
     colour): data.pt holds the session's split (stratified: a quarter of each class tests),
     train.py's test tensors are `nnstudio-cli data FOLDER`'s at those indices bit for bit, and
     train.py, given the folder's new place with --data, and `nnstudio-cli train` both train it.
  3. CIFAR-10 binary batches through random transforms: the train set draws them, the test
     tensors are their test form's (a CenterCrop, no flip), `nnstudio-cli data`'s bit for bit.
  4. NumPy: an .npz with x_test and y_test, and an .npy pair without a test split: the test
     tensors are the session's, x as float32 and y as int64.

    /usr/bin/python3 tests/torch/export_own_data.py path/to/nnstudio-cli

Skipped without torch (exit 77), except in CI, where it fails (torch_checks.py).
"""

import gzip
import json
import os
import re
import shutil
import sys
import tempfile

from torch_checks import ROOT, check, cli, load_module, main, run, torch

import numpy as np  # noqa: E402  (after torch_checks, which skips without torch)
from PIL import Image  # noqa: E402

DIGITS = os.path.join(ROOT, "resources", "examples", "digits.nns")
RNG = np.random.default_rng(11)


def write_idx(path, array, gz):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def bars(n):
    """n 28 x 28 images, each a bright bar three rows high at a row given by its class, over
    noise; and their classes (each class as often)."""
    labels = np.arange(n) % 10
    RNG.shuffle(labels)
    images = RNG.integers(0, 90, (n, 28, 28))
    for image, label in zip(images, labels):
        top = 2 + 2 * label
        image[top:top + 3, 3:25] += 160
    return np.clip(images, 0, 255), labels


def write_mnist(root):
    raw = os.path.join(root, "MNIST", "raw")
    os.makedirs(raw)
    for prefix, n, gz in (("train", 600, True), ("t10k", 200, False)):
        images, labels = bars(n)
        suffix = ".gz" if gz else ""
        write_idx(os.path.join(raw, f"{prefix}-images-idx3-ubyte{suffix}"), images, gz)
        write_idx(os.path.join(raw, f"{prefix}-labels-idx1-ubyte{suffix}"), labels, gz)


def write_colours(root):
    """Three class folders of 20 square PNGs each, 18 to 30 pixels a side: reddish, greenish
    and bluish, with noise."""
    for c, name in enumerate(("blue", "green", "red")):
        os.makedirs(os.path.join(root, name))
        channel = {"red": 0, "green": 1, "blue": 2}[name]
        for i in range(20):
            side = int(RNG.integers(18, 31))
            pixels = RNG.integers(0, 110, (side, side, 3))
            pixels[..., channel] += 140
            Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB").save(
                os.path.join(root, name, f"{i:02d}.png"))


def make_project(path, source, transforms, channels, batch_size):
    """digits.nns (a small CNN on 16 x 16 images) on the files at `source`, with `channels`."""
    project = json.load(open(DIGITS))
    for node in project["graph"]["nodes"]:
        if node["type"] == "Input":
            node["options"]["shape"] = [channels, 16, 16]
        if node["name"] == "conv1":
            node["options"]["in_channels"] = channels
    project["dataset"] = {"name": "files", "path": source, "transforms": transforms,
                          "test_fraction": 0.25, "seed": 0}
    project["training"]["batch_size"] = batch_size
    json.dump(project, open(path, "w"), indent=1)


def test_accuracy(output):
    """The last 'test: loss L accuracy A%' of a run, as a fraction."""
    found = re.findall(r"^test: loss [0-9.]+ accuracy ([0-9.]+)%", output, re.M)
    return float(found[-1]) / 100 if found else -1.0


def exported(tmp, project, name):
    """Exports `project` to tmp/name and imports its train.py as a module."""
    folder = os.path.join(tmp, name)
    cli("export", project, "--format", "pytorch", "--out", folder)
    sys.path.insert(0, folder)  # train.py imports model and nnstudio_runs from beside it
    sys.modules.pop("model", None)
    try:
        module = load_module(os.path.join(folder, "train.py"), "train_" + name)
    finally:
        sys.path.remove(folder)
    return folder, module


def train_py(folder, *args):
    return run([sys.executable, os.path.join(folder, "train.py"), "--epochs", "3", "--no-record",
                *args])


def check_mnist(tmp):
    data = os.path.join(tmp, "data", "mnist")
    write_mnist(data)
    transforms = "Resize(16), ToTensor(), Normalize(mean=(0.5,), std=(0.5,))"
    project = os.path.join(tmp, "mnist.nns")
    make_project(project, "data/mnist", transforms, 1, 16)
    folder, module = exported(tmp, project, "mnist_export")

    text = open(os.path.join(folder, "train.py")).read()
    check(f"DATA = {json.dumps(os.path.abspath(data))}" in text,
          "MNIST: train.py reads the files where the project has them (an absolute path)")
    check("T.Resize(16),\n    T.ToTensor(),\n    T.Normalize(mean=(0.5,), std=(0.5,)),\n" in text
          and "class MNISTFiles(Dataset)" in text and 'FILES = "MNIST/raw"' in text,
          "MNIST: the transforms as T.Compose([...]), the idx files read by MNISTFiles")
    split = torch.load(os.path.join(folder, "data.pt"))
    check(torch.equal(split["train_indices"], torch.arange(600)) and
          torch.equal(split["test_indices"], torch.arange(200)),
          "MNIST: data.pt says all of the train split trains and all of the test split tests")

    train_set, x_test, y_test = module.load_data(module.DATA, torch.device("cpu"))
    engine = os.path.join(tmp, "mnist_test.pt")
    cli("data", data, "--transform", transforms, "--split", "test", "--head", "200", "--out",
        engine)
    want = torch.load(engine, weights_only=True)
    check(x_test.dtype == torch.float32 and x_test.shape == (200, 1, 16, 16) and
          torch.equal(x_test, want["x"]) and torch.equal(y_test, want["y"]),
          "MNIST: train.py's test tensors are `nnstudio-cli data --split test`'s bit for bit")
    x0, y0 = train_set[0]
    check(len(train_set) == 600 and x0.shape == (1, 16, 16) and isinstance(y0, int),
          "MNIST: the train set has the 600 gzipped samples, PIL images through the transforms")

    accuracy = test_accuracy(train_py(folder))
    check(accuracy > 0.6, f"MNIST: train.py, 3 epochs: {100 * accuracy:.1f}% test accuracy "
          "(chance 10%)")
    engine_accuracy = test_accuracy(cli("train", project, "--epochs", "3", "--no-record"))
    check(engine_accuracy > 0.6,
          f"MNIST: nnstudio-cli train, 3 epochs: {100 * engine_accuracy:.1f}% test accuracy")


def check_folder(tmp):
    data = os.path.join(tmp, "colours")
    write_colours(data)
    transforms = "Resize(16), ToTensor(), Normalize(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))"
    project = os.path.join(tmp, "colours.nns")
    make_project(project, "colours", transforms, 3, 8)
    folder, module = exported(tmp, project, "colours_export")

    text = open(os.path.join(folder, "train.py")).read()
    check("torchvision.datasets.ImageFolder(folder, transform=transform)" in text and
          'TRAIN_FOLDER = "."' in text and "OWN_TEST_SPLIT = False" in text,
          "image folder: train.py reads it with ImageFolder, the test samples from its train split")
    split = torch.load(os.path.join(folder, "data.pt"))
    train_indices, test_indices = split["train_indices"], split["test_indices"]
    labels = torch.arange(60) // 20  # ImageFolder's order: blue, green, red, 20 each
    check(train_indices.dtype == torch.int64 and len(test_indices) == 15 and
          sorted(train_indices.tolist() + test_indices.tolist()) == list(range(60)) and
          torch.bincount(labels[test_indices]).tolist() == [5, 5, 5],
          "image folder: data.pt splits the 60 images, 5 of each class for testing")

    _, x_test, y_test = module.load_data(module.DATA, torch.device("cpu"))
    engine = os.path.join(tmp, "colours_all.pt")
    cli("data", data, "--transform", transforms, "--head", "60", "--out", engine)
    everything = torch.load(engine, weights_only=True)
    check(torch.equal(x_test, everything["x"][test_indices]) and
          torch.equal(y_test, everything["y"][test_indices]),
          "image folder: train.py's test tensors are `nnstudio-cli data`'s at data.pt's "
          "test_indices, bit for bit")

    # The folder moves: --data finds it at its new place.
    moved = os.path.join(tmp, "moved_colours")
    shutil.move(data, moved)
    accuracy = test_accuracy(train_py(folder, "--data", moved))
    check(accuracy > 0.8,
          f"image folder: train.py --data NEW_PLACE, 3 epochs: {100 * accuracy:.1f}% test "
          "accuracy (chance 33%)")
    shutil.move(moved, data)
    engine_accuracy = test_accuracy(cli("train", project, "--epochs", "3", "--no-record"))
    check(engine_accuracy > 0.8,
          f"image folder: nnstudio-cli train, 3 epochs: {100 * engine_accuracy:.1f}% test "
          "accuracy")


def write_cifar10(folder):
    """CIFAR-10 binary batches: five of 12 records and a test batch of 25 (a label byte, then
    the red, green and blue 32 x 32 planes)."""
    os.makedirs(folder)
    for name, n in [(f"data_batch_{b}", 12) for b in range(1, 6)] + [("test_batch", 25)]:
        records = np.concatenate([RNG.integers(0, 10, (n, 1)), RNG.integers(0, 256, (n, 3072))], 1)
        records.astype(np.uint8).tofile(os.path.join(folder, name + ".bin"))


def check_cifar(tmp):
    """Random transforms: the train set draws them (a step runs), the test set goes through
    their test form, as `nnstudio-cli data` gives it."""
    data = os.path.join(tmp, "cifar")
    write_cifar10(os.path.join(data, "cifar-10-batches-bin"))
    normalize = "ToTensor(), Normalize(mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3))"
    project = os.path.join(tmp, "cifar.nns")
    make_project(project, data, "Resize(20), RandomCrop(16, padding=2), "
                 "RandomHorizontalFlip(), " + normalize, 3, 8)
    folder, module = exported(tmp, project, "cifar_export")
    text = open(os.path.join(folder, "train.py")).read()
    check("T.RandomCrop(16, padding=2),\n    T.RandomHorizontalFlip(p=0.5)," in text and
          "TEST_TRANSFORM = T.Compose([\n    T.Resize(20),\n    T.CenterCrop(16),\n    T.ToTensor()"
          in text and 'FILES = "cifar-10-batches-bin"' in text and "hundred=False" in text,
          "CIFAR-10: the random transforms for training, their test form for testing")
    train_set, x_test, y_test = module.load_data(module.DATA, torch.device("cpu"))
    engine = os.path.join(tmp, "cifar_test.pt")
    cli("data", data, "--transform", "Resize(20), CenterCrop(16), " + normalize, "--split",
        "test", "--head", "25", "--out", engine)
    want = torch.load(engine, weights_only=True)
    check(len(train_set) == 60 and train_set[0][0].shape == (3, 16, 16) and
          torch.equal(x_test, want["x"]) and torch.equal(y_test, want["y"]),
          "CIFAR-10: 60 training samples; the test tensors are `nnstudio-cli data`'s bit for bit")
    out = run([sys.executable, os.path.join(folder, "train.py"), "--steps", "3", "--no-record"])
    check(re.search(r"^3 steps", out, re.M) is not None, "CIFAR-10: train.py trains 3 steps")


def check_numpy(tmp):
    """An .npz with its own test split, and an .npy pair without one: TensorDatasets of x as
    float32 and y as int64, the split in data.pt."""
    x = RNG.normal(size=(40, 1, 16, 16))
    y = (np.arange(40) % 4).astype(np.int16)
    np.savez(os.path.join(tmp, "arrays.npz"), x_train=x, y_train=y, x_test=x[:10] * 2,
             y_test=y[:10])
    np.save(os.path.join(tmp, "digits_x.npy"), x.astype(np.float32))
    np.save(os.path.join(tmp, "digits_y.npy"), y.astype(np.uint8))
    for name in ("arrays.npz", "digits_x.npy"):
        project = os.path.join(tmp, name + ".nns")
        make_project(project, name, "", 1, 8)
        folder, module = exported(tmp, project, name.replace(".", "_") + "_export")
        split = torch.load(os.path.join(folder, "data.pt"))
        train_set, x_test, y_test = module.load_data(module.DATA, torch.device("cpu"))
        if name == "arrays.npz":
            same = torch.equal(x_test, torch.from_numpy(x[:10] * 2).float()) and \
                torch.equal(y_test, torch.from_numpy(y[:10]).long()) and len(train_set) == 40
        else:
            # Stratified: each class of 10 gives 2 or 3 of the 10 test samples.
            test = split["test_indices"]
            counts = torch.bincount(torch.from_numpy(y).long()[test], minlength=4).tolist()
            same = len(test) == 10 and all(c in (2, 3) for c in counts) and \
                torch.equal(x_test, torch.from_numpy(x).float()[test]) and \
                torch.equal(y_test, torch.from_numpy(y).long()[test]) and len(train_set) == 30
        check(same, f"{name}: train.py's test set is the session's, x float32 and y int64")
        out = run([sys.executable, os.path.join(folder, "train.py"), "--steps", "2",
                   "--no-record"])
        check(re.search(r"^2 steps", out, re.M) is not None, f"{name}: train.py trains 2 steps")


def checks():
    with tempfile.TemporaryDirectory() as tmp:
        check_mnist(tmp)
        check_folder(tmp)
        check_cifar(tmp)
        check_numpy(tmp)


if __name__ == "__main__":
    main(checks, __doc__)

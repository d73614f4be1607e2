#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Your own data, against torchvision's own readers (ctest torch.own_data):

  1. Files in each format are written here (no download): an image folder (PNG in RGB, L, RGBA
     and palette modes, JPEG in color and gray, BMP, a nested folder, a file that is not an
     image), MNIST and Fashion-MNIST idx files (plain and .gz), CIFAR-10 and CIFAR-100 binary
     batches (and the same images as torchvision's pickled batches, which its CIFAR10 and
     CIFAR100 read), and NumPy .npz and .npy files.
  2. `nnstudio-cli data SOURCE --transform T --head N --out x.pt` gives the tensors
     torchvision's ImageFolder, MNIST, FashionMNIST, CIFAR10 and CIFAR100 give through the same
     transforms, bit for bit, for the deterministic transforms (Resize up and down, CenterCrop
     with odd margins and with padding, Grayscale, ToTensor, Normalize); RandomCrop with padding
     gives a window of the padded image, and the same seed the same samples.
  3. Bad input: a corrupt image is skipped and listed; images of different sizes without a
     Resize, an idx file with a wrong magic number or count, a CIFAR batch of the wrong length,
     an .npz without x/y or of complex numbers, an empty class folder are refused, naming the
     file; a folder of 10,000 files with one class folder among them reads that one class.

    /usr/bin/python3 tests/torch/own_data.py path/to/nnstudio-cli

Skipped without torch (exit 77), except in CI, where it fails (torch_checks.py).
"""

import gzip
import os
import pickle
import tempfile

import torch_checks
from torch_checks import ROOT, check, cli, main, run, torch

import numpy as np  # noqa: E402  (after torch_checks, which skips without torch)
import torchvision  # noqa: E402
from PIL import Image  # noqa: E402
from torchvision import transforms as T  # noqa: E402

RNG = np.random.default_rng(7)

DETERMINISTIC = [
    "ToTensor()",
    "Resize(40), CenterCrop(32), ToTensor(), Normalize(mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3))",
    "Resize((13, 21)), ToTensor()",
    "Resize(9), CenterCrop(7), ToTensor()",
    "CenterCrop((37, 35)), ToTensor()",
    "Grayscale(), Resize(17), CenterCrop(15), ToTensor(), Normalize(mean=(0.5,), std=(0.5,))",
    "Grayscale(num_output_channels=3), Resize((20, 20)), ToTensor()",
]


def torchvision_transform(text):
    """The same text as a torchvision Compose: the CLI's transforms are torchvision's calls."""
    return eval(f"T.Compose([{', '.join('T.' + t.strip() for t in split_calls(text))}])")


def split_calls(text):
    """'A(1, 2), B()' -> ['A(1, 2)', 'B()'] (commas inside calls kept)."""
    calls, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c in "([" and 1 or (-1 if c in ")]" else 0)
        if c == "," and depth == 0:
            calls.append(text[start:i])
            start = i + 1
    calls.append(text[start:])
    return [c for c in calls if c.strip()]


def smooth_image(h, w, channels):
    """An image with gradients and edges (resampling differences show), as uint8."""
    y, x = np.mgrid[0:h, 0:w]
    planes = [(np.sin(x / (3 + c) + y / 5) * 100 + 128 + RNG.integers(-20, 20, (h, w)))
              for c in range(channels)]
    return np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)


def write_image_folder(root):
    """Three classes in the order torchvision sorts them ('Dog' before 'bird' before 'cat'),
    every file kind the decoders take, of several sizes."""
    files = {
        "Dog": [("a.png", "RGB", (48, 40)), ("b.jpg", "RGB", (41, 53)), ("c.bmp", "RGB", (36, 36)),
                ("d.jpeg", "L", (30, 44))],
        "bird": [("x1.png", "L", (40, 40)), ("x2.png", "RGBA", (45, 38)),
                 ("nested/x3.png", "P", (33, 50)), ("notes.txt", None, None)],
        "cat": [("z.JPG", "RGB", (64, 48)), ("y.png", "RGB", (40, 40)),
                ("sub/deeper/w.png", "RGB", (39, 41))],
    }
    for cls, entries in files.items():
        for name, mode, size in entries:
            path = os.path.join(root, cls, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if mode is None:
                with open(path, "w") as f:
                    f.write("not an image")
                continue
            h, w = size
            pixels = smooth_image(h, w, 1 if mode == "L" else (4 if mode == "RGBA" else 3))
            image = Image.fromarray(pixels[..., 0] if mode == "L" else pixels,
                                    "L" if mode == "L" else ("RGBA" if mode == "RGBA" else "RGB"))
            if mode == "P":
                image = image.convert("P", palette=Image.ADAPTIVE, colors=64)
            if name.lower().endswith((".jpg", ".jpeg")):
                image.save(path, quality=90)
            else:
                image.save(path)


def write_idx(path, array, gz):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    with (gzip.open if gz else open)(path, "wb") as f:
        f.write(data)


def write_mnist(root, tv_root, folder, gz):
    """The idx files in root/folder/raw (gzipped when gz) and, uncompressed, in
    tv_root/folder/raw, where torchvision 0.14 reads them."""
    raw, tv_raw = os.path.join(root, folder, "raw"), os.path.join(tv_root, folder, "raw")
    os.makedirs(raw)
    os.makedirs(tv_raw)
    for prefix, n in (("train", 50), ("t10k", 20)):
        for kind, array in (("images-idx3", RNG.integers(0, 256, (n, 28, 28))),
                            ("labels-idx1", RNG.integers(0, 10, (n,)))):
            name = f"{prefix}-{kind}-ubyte"
            write_idx(os.path.join(raw, name + (".gz" if gz else "")), array, gz)
            write_idx(os.path.join(tv_raw, name), array, False)


def write_cifar(bin_dir, py_dir, hundred):
    """The same images as binary batches (what NN Studio reads) and pickled batches (what
    torchvision reads)."""
    os.makedirs(bin_dir)
    os.makedirs(py_dir)
    batches = [("train", "train", 60), ("test", "test", 25)] if hundred else \
        [(f"data_batch_{b}", f"data_batch_{b}", 12) for b in range(1, 6)] + \
        [("test_batch", "test_batch", 25)]
    classes = 100 if hundred else 10
    for bin_name, py_name, n in batches:
        data = RNG.integers(0, 256, (n, 3072)).astype(np.uint8)
        fine = RNG.integers(0, classes, (n,)).astype(np.uint8)
        coarse = (fine // 5).astype(np.uint8)
        columns = [coarse[:, None], fine[:, None], data] if hundred else [fine[:, None], data]
        with open(os.path.join(bin_dir, bin_name + ".bin"), "wb") as f:
            f.write(np.concatenate(columns, 1).tobytes())
        entry = {"data": data, ("fine_labels" if hundred else "labels"): fine.tolist()}
        if hundred:
            entry["coarse_labels"] = coarse.tolist()
        with open(os.path.join(py_dir, py_name), "wb") as f:
            pickle.dump(entry, f)
    names = [f"class{c:02d}" for c in range(classes)]
    with open(os.path.join(bin_dir, "fine_label_names.txt" if hundred else "batches.meta.txt"),
              "w") as f:
        f.write("\n".join(names) + "\n")
    with open(os.path.join(py_dir, "meta" if hundred else "batches.meta"), "wb") as f:
        pickle.dump({"fine_label_names" if hundred else "label_names": names}, f)


class IntegrityUnchecked:
    """torchvision's CIFAR readers check the files' MD5 sums against the real CIFAR's; these
    are generated, so the check (and the meta file's, which has it inline) is skipped."""

    def _check_integrity(self):
        return True

    def _load_meta(self):
        with open(os.path.join(self.root, self.base_folder, self.meta["filename"]), "rb") as f:
            self.classes = pickle.load(f, encoding="latin1")[self.meta["key"]]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}


class Cifar10(IntegrityUnchecked, torchvision.datasets.CIFAR10):
    pass


class Cifar100(IntegrityUnchecked, torchvision.datasets.CIFAR100):
    pass


def engine_samples(tmp, source, transform, n, split="train", seed=None):
    out = os.path.join(tmp, "samples.pt")
    args = ["data", source, "--transform", transform, "--head", str(n), "--out", out,
            "--split", split]
    text = cli(*args, *(["--seed", str(seed)] if seed is not None else []))
    return torch.load(out, weights_only=True), text


def compare(tmp, what, source, dataset_for, transform, n, split="train"):
    tensors, _ = engine_samples(tmp, source, transform, n, split)
    ds = dataset_for(torchvision_transform(transform))
    n = min(n, len(ds))
    xs = torch.stack([ds[i][0] for i in range(n)])
    ys = torch.tensor([ds[i][1] for i in range(n)])
    same = tensors["x"].shape == xs.shape and torch.equal(tensors["x"], xs) and \
        torch.equal(tensors["y"], ys)
    detail = "" if same else (f" (shapes {tuple(tensors['x'].shape)} vs {tuple(xs.shape)}, max "
                              f"difference {(tensors['x'] - xs).abs().max().item() if tensors['x'].shape == xs.shape else '-'})")
    check(same, f"{what} [{split}] {transform!r}: {n} samples equal torchvision's bit for bit{detail}")


def check_formats(tmp):
    folder = os.path.join(tmp, "folder")
    write_image_folder(folder)
    image_folder = lambda t: torchvision.datasets.ImageFolder(folder, transform=t)  # noqa: E731
    for transform in DETERMINISTIC[1:]:
        compare(tmp, "ImageFolder", folder, image_folder, transform, 11)
    text = cli("data", folder, "--transform", "Resize((8, 8)), ToTensor()")
    check("image folder" in text and "Dog" in text and "bird" in text and "cat" in text,
          "data prints the kind and the class names")

    for folder_name, reader, gz in (("MNIST", torchvision.datasets.MNIST, True),
                                    ("FashionMNIST", torchvision.datasets.FashionMNIST, False)):
        root, tv_root = os.path.join(tmp, folder_name.lower()), os.path.join(tmp, "tv")
        write_mnist(root, tv_root, folder_name, gz)
        for split in ("train", "test"):
            for transform in ("ToTensor()", "Resize(40), CenterCrop(33), ToTensor(), "
                              "Normalize(mean=(0.1307,), std=(0.3081,))"):
                compare(tmp, folder_name, root,
                        lambda t, s=split: reader(tv_root, train=s == "train", transform=t),
                        transform, 50, split)
        text = cli("data", root)
        check(("Fashion-MNIST" if folder_name == "FashionMNIST" else "MNIST") in text and
              ("Ankle boot" if folder_name == "FashionMNIST" else "9 - nine") in text,
              f"{folder_name}: the kind and torchvision's class names")

    for hundred, reader, bin_name, py_name in (
            (False, Cifar10, "cifar-10-batches-bin", "cifar-10-batches-py"),
            (True, Cifar100, "cifar-100-binary", "cifar-100-python")):
        root = os.path.join(tmp, "cifar100" if hundred else "cifar10")
        write_cifar(os.path.join(root, bin_name), os.path.join(root, py_name), hundred)
        for split in ("train", "test"):
            for transform in ("ToTensor()", DETERMINISTIC[1]):
                compare(tmp, "CIFAR-100" if hundred else "CIFAR-10", root,
                        lambda t, r=root, s=split: reader(r, train=s == "train", transform=t),
                        transform, 60, split)

    # NumPy: x and y as TensorDataset holds them (x as float32, y as int64).
    x = RNG.normal(size=(30, 3, 5, 5)).astype(np.float64)
    y = RNG.integers(0, 4, (30,)).astype(np.int16)
    np.savez_compressed(os.path.join(tmp, "arrays.npz"), x=x, y=y)
    np.save(os.path.join(tmp, "train_x.npy"), x.astype(np.float32))
    np.save(os.path.join(tmp, "train_y.npy"), y.astype(np.uint8))
    for name in ("arrays.npz", "train_x.npy"):
        tensors, _ = engine_samples(tmp, os.path.join(tmp, name), "", 30)
        check(torch.equal(tensors["x"], torch.from_numpy(x).float()) and
              torch.equal(tensors["y"], torch.from_numpy(y).long()),
              f"{name}: x and y as float32 and int64")
    return folder


def check_random(tmp, folder):
    cifar = os.path.join(tmp, "cifar10")
    crop = "RandomCrop(32, padding=4), RandomHorizontalFlip(), ToTensor()"
    a, _ = engine_samples(tmp, cifar, crop, 40, seed=3)
    b, _ = engine_samples(tmp, cifar, crop, 40, seed=3)
    c, _ = engine_samples(tmp, cifar, crop, 40, seed=4)
    check(torch.equal(a["x"], b["x"]) and not torch.equal(a["x"], c["x"]),
          "random transforms: the same seed gives the same samples, another seed others")
    plain, _ = engine_samples(tmp, cifar, "ToTensor()", 40)
    padded = torch.nn.functional.pad(plain["x"], (4, 4, 4, 4))
    windows, flips = 0, 0
    for i in range(40):
        found = None
        for top in range(9):
            for left in range(9):
                window = padded[i, :, top:top + 32, left:left + 32]
                if torch.equal(window, a["x"][i]):
                    found = "plain"
                elif torch.equal(window.flip(-1), a["x"][i]):
                    found = found or "flipped"
        windows += found is not None
        flips += found == "flipped"
    check(windows == 40 and 5 <= flips <= 35,
          f"RandomCrop(32, padding=4) + flip: each sample a window of the padded image "
          f"({windows}/40), {flips} flipped")


def check_streamed_training(tmp, folder):
    """A set larger than the memory budget ($NNSTUDIO_DATA_MEMORY, here 2 KB) is streamed: the
    run's losses and accuracies are those of the same set held in memory, to the last digit."""
    digits = os.path.join(ROOT, "resources", "examples", "digits.nns")
    args = ["train", digits, "--data", folder, "--transform",
            "Grayscale(), Resize((16, 16)), RandomCrop(16, padding=2), RandomHorizontalFlip(), "
            "ToTensor(), Normalize(mean=(0.5,), std=(0.25,))",
            "--epochs", "4", "--batch-size", "4", "--no-record", "--quiet"]
    figures = lambda text: [line for line in text.splitlines()  # noqa: E731
                            if line.startswith(("train:", "test:"))]
    held = run([torch_checks.CLI, *args])
    streamed = run([torch_checks.CLI, *args], env={**os.environ, "NNSTUDIO_DATA_MEMORY": "2000"})
    shown = run([torch_checks.CLI, "data", folder, "--transform", "Resize((16, 16)), ToTensor()"],
                env={**os.environ, "NNSTUDIO_DATA_MEMORY": "2000"})
    check("streamed" in shown, "a set past the memory budget says it is streamed")
    check(figures(held) and figures(held) == figures(streamed),
          f"streamed training gives the figures of the set in memory: {figures(streamed)}")


def check_bad_input(tmp, folder):
    # A corrupt image is skipped and listed.
    broken = os.path.join(tmp, "broken")
    write_image_folder(broken)
    with open(os.path.join(broken, "cat", "y.png"), "r+b") as f:
        f.seek(40)
        f.write(b"\0" * 200)
    text = cli("data", broken, "--transform", "Resize((16, 16)), ToTensor()")
    check("skipped 1 unreadable image" in text and "y.png" in text and "9 samples" in text,
          "a corrupt image: skipped and listed by name")
    out = cli("data", folder, "--transform", "ToTensor()", code=1)
    check("different sizes" in out and "Resize" in out and ".png" in out,
          "images of different sizes without Resize: refused, naming the file")

    mnist = os.path.join(tmp, "bad_mnist")
    os.makedirs(mnist)
    write_idx(os.path.join(mnist, "train-images-idx3-ubyte"), RNG.integers(0, 256, (5, 28, 28)),
              False)
    write_idx(os.path.join(mnist, "train-labels-idx1-ubyte"), RNG.integers(0, 10, (5,)), False)
    with open(os.path.join(mnist, "train-labels-idx1-ubyte"), "r+b") as f:
        f.write(bytes([0, 0, 8, 3]))
    out = cli("data", mnist, code=1)
    check("magic number" in out and "train-labels-idx1-ubyte" in out,
          "an idx file with a wrong magic number: refused, naming the file")
    with open(os.path.join(mnist, "train-labels-idx1-ubyte"), "wb") as f:
        f.write(bytes([0, 0, 8, 1]) + (6).to_bytes(4, "big") + bytes(5))
    out = cli("data", mnist, code=1)
    check("header says 6" in out, "an idx file whose count does not match its size: refused")

    cifar = os.path.join(tmp, "bad_cifar")
    os.makedirs(cifar)
    with open(os.path.join(cifar, "test_batch.bin"), "wb") as f:
        f.write(bytes(3073 * 2 + 100))
    out = cli("data", cifar, "--split", "test", code=1)
    check("3073" in out and "test_batch.bin" in out, "a CIFAR batch of the wrong length: refused")

    np.savez(os.path.join(tmp, "no_xy.npz"), a=np.zeros(3), b=np.zeros(3))
    out = cli("data", os.path.join(tmp, "no_xy.npz"), code=1)
    check("'x'" in out and "a, b" in out, "an .npz without x and y: refused, listing its arrays")
    np.savez(os.path.join(tmp, "complex.npz"), x=np.zeros((3, 2), np.complex64), y=np.zeros(3))
    out = cli("data", os.path.join(tmp, "complex.npz"), code=1)
    check("complex" in out, "an .npz of complex numbers: refused, naming the dtype")

    empty = os.path.join(tmp, "empty_class")
    write_image_folder(empty)
    os.makedirs(os.path.join(empty, "zebra"))
    out = cli("data", empty, code=1)
    check("'zebra'" in out and "no images" in out, "an empty class folder: refused, naming it")

    many = os.path.join(tmp, "many")
    os.makedirs(os.path.join(many, "only"))
    for i in range(10000):
        open(os.path.join(many, f"file{i:05d}.png"), "w").close()
    for i in range(3):
        Image.fromarray(smooth_image(8, 8, 3)).save(os.path.join(many, "only", f"{i}.png"))
    tensors, text = engine_samples(tmp, many, "ToTensor()", 10)
    check(tensors["x"].shape == (3, 3, 8, 8) and "only" in text,
          "10,000 files and one class folder: that class's 3 images")


def checks():
    with tempfile.TemporaryDirectory() as tmp:
        folder = check_formats(tmp)
        check_random(tmp, folder)
        check_streamed_training(tmp, folder)
        check_bad_input(tmp, folder)


if __name__ == "__main__":
    main(checks, __doc__)

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Weight files between NN Studio and real PyTorch, both ways (the ctest test torch.roundtrip):

  1. Files the engine writes (nns_torch_roundtrip write) load in PyTorch: the state dicts
     (.pt through torch.load(weights_only=True), .safetensors byte-identical to the reference
     writer) go into the equivalent PyTorch model with load_state_dict(strict=True) and give
     the engine's outputs; the SGD-momentum and Adam checkpoints resume in torch.optim and
     their next step gives the engine's next step.
  2. Files PyTorch writes (torch.save, the safetensors layout) load in the engine (nns_torch_
     roundtrip read) strictly and give PyTorch's outputs; PyTorch's SGD and Adam checkpoints
     resume in the engine and their next step gives PyTorch's.

    /usr/bin/python3 tests/torch/roundtrip.py path/to/nns_torch_roundtrip

Needs torch under the system interpreter (packaging/setup.sh --tests). Without it the test is
skipped (exit 77), except in CI (CI set in the environment), where it fails: these round trips
are the proof that the files work in PyTorch, and must run there.
"""

import collections
import json
import os
import pickletools
import struct
import subprocess
import sys
import tempfile
import zipfile

try:
    import torch
except ImportError:
    print("torch.roundtrip: torch is not installed for /usr/bin/python3; "
          "packaging/setup.sh --tests installs it", file=sys.stderr)
    sys.exit(1 if os.environ.get("CI") else 77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures", "state_dict"))
from make_state_dict_fixtures import (  # noqa: E402  (the models and writer, defined once)
    BigNet, ST_DTYPES, features_classifier, safetensors_bytes)

MODELS = ("mlp", "features_classifier", "bignet")
FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def make_model(name):
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    if name == "features_classifier":
        return features_classifier()
    return BigNet()


def input_shape(name):
    return {"mlp": (5, 4), "features_classifier": (4, 1, 4, 4), "bignet": (3, 5)}[name]


def to_json(t):
    t = t.detach()
    return {"shape": list(t.shape), "values": t.double().reshape(-1).tolist()}


def from_json(j):
    return torch.tensor(j["values"], dtype=torch.float64).reshape(j["shape"]).float()


def close(ours, theirs, what):
    ours, theirs = ours.detach().float(), theirs.detach().float()
    same = ours.shape == theirs.shape and torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    diff = (ours - theirs).abs().max().item() if ours.shape == theirs.shape else float("inf")
    check(same, f"{what} (max |diff| {diff:.3g})")


def run_helper(helper, command, folder):
    done = subprocess.run([helper, command, folder], capture_output=True, text=True)
    check(done.returncode == 0, f"nns_torch_roundtrip {command}: exit {done.returncode}"
          f"{(': ' + done.stderr.strip()) if done.returncode else ''}")
    return done.returncode == 0


# ---- reading files as PyTorch does ------------------------------------------------------------

# The opcodes and globals torch 2.x's weights-only unpickler accepts (spec B.4, B.7).
WEIGHTS_ONLY_OPCODES = {
    "PROTO", "STOP", "GLOBAL", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET", "BINUNICODE",
    "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "NONE", "NEWTRUE", "NEWFALSE",
    "EMPTY_TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "TUPLE", "MARK", "EMPTY_LIST", "APPEND",
    "APPENDS", "EMPTY_DICT", "SETITEM", "SETITEMS", "REDUCE", "BUILD", "BINPERSID", "NEWOBJ",
    "EMPTY_SET", "SHORT_BINSTRING"}


def load_weights_only(path):
    """torch.load(path, weights_only=True). torch 1.13's weights-only unpickler lacks BINFLOAT
    (2.x has it), so a file with floats (a checkpoint's lr, loss) fails there for no fault of
    the file; then the pickle is checked against 2.x's opcodes and 1.13's allowed globals
    before the ordinary unpickler reads it."""
    try:
        return torch.load(path, weights_only=True)
    except Exception as e:  # torch raises pickle.UnpicklingError with the reason inside
        if not (torch.__version__.startswith("1.") and "Unsupported operand 71" in str(e)):
            raise
    allowed = torch._weights_only_unpickler._get_allowed_globals()
    with zipfile.ZipFile(path) as z:
        pkl = next(n for n in z.namelist() if n.endswith("/data.pkl"))
        for op, arg, _ in pickletools.genops(z.read(pkl)):
            if op.name not in WEIGHTS_ONLY_OPCODES:
                raise RuntimeError(f"{path}: opcode {op.name} is not weights-only")
            if op.name == "GLOBAL" and arg.replace(" ", ".") not in allowed:
                raise RuntimeError(f"{path}: global {arg} is not weights-only")
    return torch.load(path, weights_only=False)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n], object_pairs_hook=collections.OrderedDict)
    metadata = header.pop("__metadata__", None)
    by_name = {v: k for k, v in ST_DTYPES.items()}
    tensors = collections.OrderedDict()
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        dtype = by_name[info["dtype"]]
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(info["shape"])
    return data, tensors, metadata


def check_torch_zip(path):
    """The container as PyTorch writes it (spec B.2, B.3)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    with zipfile.ZipFile(path) as z:
        check(z.testzip() is None, f"{stem}: zip CRCs")
        names = [i.filename for i in z.infolist()]
        check(names[0] == f"{stem}/data.pkl" and f"{stem}/version" in names,
              f"{stem}: records {names}")
        check(z.read(f"{stem}/byteorder") == b"little", f"{stem}: byteorder little")
        with open(path, "rb") as f:
            raw = f.read()
        for info in z.infolist():
            n, m = struct.unpack_from("<HH", raw, info.header_offset + 26)
            if info.filename.startswith(f"{stem}/data/"):
                offset = info.header_offset + 30 + n + m
                check(offset % 64 == 0, f"{stem}: {info.filename} at {offset}, 64-aligned")


# ---- 1. the engine's files in PyTorch ---------------------------------------------------------


def engine_to_torch(helper, folder):
    if not run_helper(helper, "write", folder):
        return
    for name in MODELS:
        with open(os.path.join(folder, f"{name}.json")) as f:
            recorded = json.load(f)
        x, y = from_json(recorded["input"]), from_json(recorded["output"])
        model = make_model(name)
        check(list(model.state_dict()) == recorded["keys"],
              f"{name}: the engine's state dict keys are PyTorch's, in order")

        path = os.path.join(folder, f"{name}.pt")
        check_torch_zip(path)
        sd = load_weights_only(path)
        result = model.load_state_dict(sd, strict=True)
        check(not result.missing_keys and not result.unexpected_keys,
              f"{name}.pt: load_state_dict(strict=True)")
        model.eval()
        with torch.no_grad():
            close(y, model(x), f"{name}.pt: PyTorch's output is the engine's")

        data, tensors, metadata = read_safetensors(os.path.join(folder, f"{name}.safetensors"))
        check(data == safetensors_bytes(tensors, metadata),
              f"{name}.safetensors: byte-identical to the reference writer's layout")
        model = make_model(name)
        result = model.load_state_dict(tensors, strict=True)
        check(not result.missing_keys and not result.unexpected_keys,
              f"{name}.safetensors: load_state_dict(strict=True)")
        model.eval()
        with torch.no_grad():
            close(y, model(x), f"{name}.safetensors: PyTorch's output is the engine's")

    # The checkpoints resume in PyTorch: the next step there is the engine's next step.
    for kind in ("sgd", "adam"):
        path = os.path.join(folder, f"ckpt_{kind}.pt")
        check_torch_zip(path)
        ckpt = load_weights_only(path)
        check(ckpt.get("epoch") == 3 and ckpt.get("loss") == 0.125 and
              ckpt.get("note") == "written by nns_torch_roundtrip",
              f"ckpt_{kind}.pt: extra entries {[k for k in ckpt if not k.endswith('_dict')]}")
        with open(os.path.join(folder, f"ckpt_{kind}.json")) as f:
            recorded = json.load(f)
        model = make_model("mlp")
        model.load_state_dict(ckpt["model_state_dict"], strict=True)
        optimizer = make_optimizer(kind, model, resume=True)
        optimizer.load_state_dict(ckpt["optimizer_state_dict"])
        group = {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}
        check(group["lr"] == 0.01 and group.get("momentum", 0.9) == 0.9,
              f"ckpt_{kind}.pt: param_groups {group}")
        train_step(model, optimizer, from_json(recorded["input"]))
        for name, param in model.named_parameters():
            close(from_json(recorded["after_step"][name]), param,
                  f"ckpt_{kind}.pt: {name} after one more step in PyTorch")


def make_optimizer(kind, model, resume):
    """As nns_torch_roundtrip makes them: on resume, options that the file must replace."""
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.5 if resume else 0.01,
                               momentum=0.0 if resume else 0.9)
    return torch.optim.Adam(model.parameters(), lr=0.5 if resume else 0.01)


def train_step(model, optimizer, x):
    model.train()
    optimizer.zero_grad()
    model(x).pow(2).mean().backward()
    optimizer.step()


# ---- 2. PyTorch's files in the engine ---------------------------------------------------------


def torch_to_engine(helper, folder):
    expected = {}
    for name in MODELS:
        torch.manual_seed(20)
        model = make_model(name)
        x = torch.randn(input_shape(name))
        if name == "features_classifier":  # running statistics and num_batches_tracked move
            model.train()
            with torch.no_grad():
                model(x)
                model(x * 2)
        model.eval()
        with torch.no_grad():
            expected[name] = model(x)
        torch.save(model.state_dict(), os.path.join(folder, f"torch_{name}.pt"))
        sd = collections.OrderedDict((k, v.detach()) for k, v in model.state_dict().items())
        with open(os.path.join(folder, f"torch_{name}.safetensors"), "wb") as f:
            f.write(safetensors_bytes(sd, {"format": "pt"}))
        with open(os.path.join(folder, f"torch_{name}.json"), "w") as f:
            json.dump({"input": to_json(x)}, f)

    # Checkpoints with options other than the engine's defaults, so they must come from the
    # file.
    after_step = {}
    for kind in ("sgd", "adam"):
        torch.manual_seed(21)
        model = make_model("mlp")
        x = torch.randn(6, 4)
        if kind == "sgd":
            optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.8,
                                        weight_decay=1e-3, nesterov=True)
        else:
            optimizer = torch.optim.Adam(model.parameters(), lr=0.02, betas=(0.8, 0.99),
                                         weight_decay=1e-3, amsgrad=True)
        for _ in range(3):
            train_step(model, optimizer, x)
        torch.save({"epoch": 7, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(), "loss": 0.5,
                    "history": [1.0, None, "text", {"nested": (1, 2)}]},
                   os.path.join(folder, f"torch_ckpt_{kind}.pt"))
        with open(os.path.join(folder, f"torch_ckpt_{kind}.json"), "w") as f:
            json.dump({"input": to_json(x)}, f)
        train_step(model, optimizer, x)
        after_step[kind] = {k: v.detach().clone() for k, v in model.named_parameters()}

    if not run_helper(helper, "read", folder):
        return
    for name in MODELS:
        for ext in (".pt", ".safetensors"):
            with open(os.path.join(folder, f"torch_{name}{ext}.out.json")) as f:
                out = json.load(f)
            check(out["matched"] == len(make_model(name).state_dict()),
                  f"torch_{name}{ext}: every key matched ({out['matched']})")
            close(from_json(out["output"]), expected[name],
                  f"torch_{name}{ext}: the engine's output is PyTorch's")
    for kind in ("sgd", "adam"):
        with open(os.path.join(folder, f"torch_ckpt_{kind}.out.json")) as f:
            out = json.load(f)
        check(out["epoch"] == 7, f"torch_ckpt_{kind}.pt: epoch {out['epoch']}")
        for name, param in after_step[kind].items():
            close(from_json(out["after_step"][name]), param,
                  f"torch_ckpt_{kind}.pt: {name} after one more step in the engine")


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}")
    with tempfile.TemporaryDirectory(prefix="nns_roundtrip_") as folder:
        engine_to_torch(sys.argv[1], folder)
        torch_to_engine(sys.argv[1], folder)
    if FAILURES:
        print(f"torch.roundtrip: {len(FAILURES)} checks failed", file=sys.stderr)
        sys.exit(1)
    print("torch.roundtrip: every check passed")


if __name__ == "__main__":
    main()

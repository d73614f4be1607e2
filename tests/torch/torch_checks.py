# SPDX-License-Identifier: GPL-3.0-or-later
"""What the torch.* tests of nnstudio-cli share (plugins_roundtrip.py, export_roundtrip.py,
export_train.py, onnx_export.py, onnx_import.py): torch itself, the checks they print and count, running the CLI and other
programs, the CLI's forward pass as tensors, and inputs for a project.

Importing it without torch exits 77 (ctest's skip), except in CI (CI set in the environment),
where the test fails: these round trips are the proof that the files work in PyTorch.
"""

import importlib.util
import json
import os
import subprocess
import sys

try:
    import torch
except ImportError:
    print(f"{os.path.basename(sys.argv[0])}: torch is not installed for /usr/bin/python3; "
          "packaging/setup.sh --tests installs it", file=sys.stderr)
    sys.exit(1 if os.environ.get("CI") else 77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "state_dict"))
from make_state_dict_fixtures import safetensors_bytes  # noqa: E402

CLI = None  # nnstudio-cli, from the command line (main)
FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def run(command, code=0, env=None, timeout=300):
    """The output of a program that must exit with `code`."""
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    if result.returncode != code:
        raise SystemExit(f"{' '.join(command)}: exit {result.returncode}, expected {code}:\n"
                         f"{result.stdout}{result.stderr}")
    return result.stdout + result.stderr


def cli(*args, code=0):
    return run([CLI, *args], code=code)


def load_module(path, name):
    """A Python file (an exported model.py) as a module."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def engine_forward(tmp, project, weights, x, *extra):
    """`nnstudio-cli forward --grad` on input x: 'output', 'grad.input' and 'grad.<parameter>'
    of output.sum(), as a dict of tensors."""
    inp, out, out_pt = (os.path.join(tmp, n) for n in ("x.safetensors", "y.safetensors", "y.pt"))
    with open(inp, "wb") as f:
        f.write(safetensors_bytes({"input": x}))
    cli("forward", project, "--weights", weights, "--input", inp, "--output", out, "--grad", *extra)
    cli("convert", out, out_pt)
    return torch.load(out_pt, weights_only=True)


def engine_eval(tmp, project, x, weights=None):
    """`nnstudio-cli forward --eval` on x (no gradients, so int64 inputs too), with the weights
    file or the initial weights: the output tensor."""
    inp, out, out_pt = (os.path.join(tmp, n) for n in ("xe.safetensors", "ye.safetensors",
                                                       "ye.pt"))
    with open(inp, "wb") as f:
        f.write(safetensors_bytes({"input": x}))
    cli("forward", project, "--input", inp, "--output", out, "--eval",
        *(["--weights", weights] if weights else []))
    cli("convert", out, out_pt)
    return torch.load(out_pt, weights_only=True)["output"]


def input_for(project_path):
    """A batch of 5 inputs of the project's (first) Input node's shape: normal floats, or class
    indices below 4 for an int64 input."""
    with open(project_path) as f:
        project = json.load(f)
    node = next(n for n in project["graph"]["nodes"] if n["type"] == "Input")
    torch.manual_seed(0)
    shape = node["options"]["shape"]
    if node["options"].get("dtype") == "int64":
        return torch.randint(0, 4, (5, *shape))
    return torch.randn(5, *shape)


# The node types the ONNX export has no form for yet (issue 17's sequence layers): it refuses a
# project that holds one, naming the node, and writes nothing.
NO_ONNX_FORM = {"RNN", "LSTM", "GRU", "TransformerEncoderLayer",
                "TransformerDecoderLayer", "PositionalEncoding", "LearnedPositionalEncoding"}


def without_onnx_form(project_path):
    """The (name, type) of the project's first node whose type has no ONNX form, or None."""
    with open(project_path) as f:
        nodes = json.load(f)["graph"]["nodes"]
    return next(((n["name"], n["type"]) for n in nodes if n["type"] in NO_ONNX_FORM), None)


def main(run_checks, doc):
    """Runs run_checks() with CLI from the command line; exits 1 if a check failed."""
    global CLI
    if len(sys.argv) != 2:
        raise SystemExit(doc)
    CLI = sys.argv[1]
    run_checks()
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)

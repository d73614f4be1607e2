#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""ONNX files of opsets 18 to 21, as torch 2.x's default exporter writes them, opened by NN
Studio (ctest torch.onnx_opsets):

The fixtures of tests/fixtures/onnx/make_opset_fixtures.py (the reductions with axes as an
input, layer_norm's and GELU's decompositions at opset 18, LayerNormalization and Gelu at 20,
Split by num_outputs, Pad with axes, scaled_dot_product_attention's decomposition in self- and
cross-attention, an MLP at opset 21) each compute the PyTorch module's output that the script
stored (run by the ONNX interpreter of onnx_export.py, on PyTorch's kernels: the files are
right), and `nnstudio-cli import` of each gives a project whose `nnstudio-cli forward --eval`
is that output (rtol 1e-4), with the node types and names it should have: attention is a
MultiheadAttention named after the module of its projections, the scopes of torch 2.x's node
metadata name the modules without weights. NN Studio's own export at opset 18 of every example
project imports back to the project's outputs. An opset above 21 and an operator with no node
(ReduceMax) are refused, naming the range or the operator and its node, and nothing is written.

    /usr/bin/python3 tests/torch/onnx_opsets.py path/to/nnstudio-cli

Skipped without torch or onnx (exit 77), except in CI, where it fails (torch_checks.py).
"""

import json
import os
import sys
import tempfile

from torch_checks import (ROOT, check, cli, engine_eval, input_for, main, torch,
                          without_onnx_form)

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:
    print("onnx_opsets.py: onnx is not installed for /usr/bin/python3; packaging/setup.sh "
          "--tests installs it (python3-onnx)", file=sys.stderr)
    sys.exit(1 if os.environ.get("CI") else 77)

from onnx_export import PROJECTS, run_model  # noqa: E402  (the ONNX interpreter)

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "onnx")

# fixture -> (node types the project must hold, types it must not, node names it must hold)
EXPECT = {
    "opset_reductions": (["Mean", "Mul", "Constant", "Concat"], [], []),
    "opset_decomposed": (["LayerNorm", "GELU"], ["Mul", "Add", "Div"], ["norm", "act", "act2"]),
    "opset_layernorm_gelu": (["LayerNorm", "GELU"], [], ["fc1", "norm", "act", "act2", "fc2"]),
    "opset_split": (["Narrow", "Concat"], [], []),
    "opset_pad": (["Conv2d", "Mean"], [], ["conv"]),
    "opset_attention": (["MultiheadAttention"], ["MatMul", "Softmax", "Transpose"],
                        ["blk0", "blk1"]),
    "opset_cross_attention": (["MultiheadAttention", "Narrow"], ["MatMul", "Softmax"], ["attn"]),
    "opset_mlp": (["Linear", "ReLU", "Softmax"], [], ["0", "1", "2", "3"]),
}


def read_safetensors(path):
    """The tensors of a safetensors file (float32 and int64 here)."""
    data = open(path, "rb").read()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    dtypes = {"F32": torch.float32, "I64": torch.int64}
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[8 + size + begin:8 + size + end])
        out[name] = torch.frombuffer(raw, dtype=dtypes[entry["dtype"]]).reshape(entry["shape"])
    return out


def node_types(project):
    nodes = json.load(open(project))["graph"]["nodes"]
    return [n["type"] for n in nodes], [n["name"] for n in nodes]


def check_fixture(tmp, name, io):
    x, want = io[name + ".input"], io[name + ".output"]
    path = os.path.join(FIXTURES, name + ".onnx")
    model = onnx.load(path)
    opset = model.opset_import[0].version
    what = f"{name} (opset {opset})"
    got = list(run_model(model, {"x": x}).values())[0]
    check(got.shape == want.shape and torch.allclose(got, want, rtol=1e-4, atol=1e-5),
          f"{what}: the file computes the PyTorch module's output")
    project = os.path.join(tmp, name + ".nns")
    cli("import", path, project)
    got = engine_eval(tmp, project, x, os.path.join(tmp, name + ".safetensors"))
    check(got.shape == want.shape and torch.allclose(got, want, rtol=1e-4, atol=1e-5),
          f"{what}: the imported project computes the PyTorch module's output (max diff "
          f"{(got - want).abs().max().item() if got.shape == want.shape else 'shape'})")
    types, names = node_types(project)
    has, has_not, named = EXPECT[name]
    check(all(t in types for t in has) and not any(t in types for t in has_not)
          and all(n in names for n in named),
          f"{what}: its nodes are {sorted(set(types))}, named {sorted(names)}")
    return project


def check_attention_options(project, want):
    nodes = json.load(open(project))["graph"]["nodes"]
    got = [{k: n["options"].get(k) for k in want[0]} for n in nodes
           if n["type"] == "MultiheadAttention"]
    check(got == want, f"{os.path.basename(project)}: MultiheadAttention options {got}")


def refused(tmp, model, name, expect):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(model, path)
    project = os.path.join(tmp, name + ".nns")
    out = cli("import", path, project, code=1)
    check(all(e in out for e in expect) and not os.path.exists(project) and
          not os.path.exists(os.path.join(tmp, name + ".safetensors")),
          f"{name} is refused, nothing written ({out.strip()})")


def check_refusals(tmp):
    mlp = onnx.load(os.path.join(FIXTURES, "opset_mlp.onnx"))
    mlp.opset_import[0].version = 22
    refused(tmp, mlp, "opset22", ["opset 22 is not supported", "reads opsets 13 to 21"])
    axes = helper.make_node("Constant", [], ["axes"], name="axes",
                            value=helper.make_tensor("a", TensorProto.INT64, [1], [1]))
    nodes = [axes, helper.make_node("ReduceMax", ["x", "axes"], ["y"], name="reduce_max_1"),
             helper.make_node("Gelu", ["y"], ["z"], name="gelu_2", approximate="erf")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     ["N", 4])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    refused(tmp, m, "reduce_max", ["operators NN Studio has no node for",
                                   "ReduceMax (1): reduce_max_1"])
    m.graph.node[1].op_type = "ReduceMean"
    refused(tmp, m, "gelu_erf", ["Gelu 'gelu_2'", "approximate 'erf'"])


def check_export_18(tmp):
    """NN Studio's export at opset 18 (ReduceMean's axes an input) imports back to the
    project's outputs."""
    for path in PROJECTS:
        if without_onnx_form(path):
            continue
        name = os.path.splitext(os.path.basename(path))[0]
        exported = os.path.join(tmp, f"rt18_{name}.onnx")
        cli("export", path, "--format", "onnx", "--opset", "18", "--out", exported)
        project = os.path.join(tmp, f"rt18_{name}.nns")
        cli("import", exported, project)
        x = input_for(path)
        want = engine_eval(tmp, path, x)
        got = engine_eval(tmp, project, x, os.path.join(tmp, f"rt18_{name}.safetensors"))
        check(got.shape == want.shape and torch.allclose(got, want, rtol=1e-5, atol=1e-6),
              f"{name}: its opset-18 export imports back to its outputs")


def run_checks():
    io = read_safetensors(os.path.join(FIXTURES, "opset_fixtures.safetensors"))
    with tempfile.TemporaryDirectory() as tmp:
        projects = {name: check_fixture(tmp, name, io) for name in EXPECT}
        keys = ["embed_dim", "num_heads", "bias", "batch_first", "is_causal"]
        check_attention_options(projects["opset_attention"], [
            dict(zip(keys, [8, 2, True, True, False])), dict(zip(keys, [8, 2, True, True, True]))])
        check_attention_options(projects["opset_cross_attention"],
                                [dict(zip(keys, [8, 2, True, True, False]))])
        check_refusals(tmp)
        check_export_18(tmp)


if __name__ == "__main__":
    main(run_checks, __doc__)

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ONNX files `nnstudio-cli export --format onnx` writes, checked by libonnx's Python side
and run by PyTorch's kernels (ctest torch.onnx_export):

For every example project and the test models, at opsets 18 (ReduceMean's axes an input), 17
and 13 (LayerNorm's two forms), with --weights (a trained state dict) and without (the
project's initial weights), the file passes onnx.checker.check_model(full_check=True) (where
the installed onnx knows the opset; onnx 1.12 knows up to 17, so an opset-18 file is checked as
its copy at 17 with ReduceMean's axes an attribute, and the opset-18 form by itself); its
initializers are the state dict's entries (keys, shapes and values; the BatchNorm counters
left out); its inputs and outputs have the batch as dim_param "N"; and a small interpreter of
the operators the export writes, built on torch.nn.functional (there is no ONNX runtime here,
and onnx 1.12 has no reference evaluator), gives on a batch of 5 what `nnstudio-cli forward
--eval` gives, rtol 1e-4, atol 1e-5. That interpreter knows nothing of NN Studio's C++: it
reads the ONNX operators' definitions.

    /usr/bin/python3 tests/torch/onnx_export.py path/to/nnstudio-cli

Skipped without torch or onnx (exit 77), except in CI, where it fails (torch_checks.py).
"""

import json
import math
import os
import sys
import tempfile

from torch_checks import (HERE, ROOT, check, cli, engine_eval, engine_forward, input_for, main,
                          safetensors_bytes, torch, without_onnx_form)

try:
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("onnx_export.py: onnx is not installed for /usr/bin/python3; packaging/setup.sh "
          "--tests installs it (python3-onnx)", file=sys.stderr)
    sys.exit(1 if os.environ.get("CI") else 77)

import torch.nn.functional as F  # noqa: E402

EXAMPLES = os.path.join(ROOT, "resources", "examples")
PROJECTS = [os.path.join(EXAMPLES, f) for f in sorted(os.listdir(EXAMPLES)) if f.endswith(".nns")]
# Containers, LayerNorm, GELU (tanh), Dropout, BatchNorm1d, Parameter and non-persistent Buffer
# nodes, Mul, Concat, MatMul, Add, SiLU, ELU, LeakyReLU and a Ref.
PROJECTS.append(os.path.join(HERE, "export_models.nns"))


# ---- A small ONNX interpreter on PyTorch's kernels ----------------------------------------------

def attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def tensor(proto):
    return torch.from_numpy(numpy_helper.to_array(proto).copy())


def pool_padding(pads):
    begin, end = pads[:len(pads) // 2], pads[len(pads) // 2:]
    assert list(begin) == list(end), f"asymmetric pads {pads}"
    return tuple(begin)


def channel_shape(x, v):
    """A per-channel vector [C] shaped to broadcast over dim 1 of x."""
    return v.reshape([1, -1] + [1] * (x.dim() - 2))


def reshape(x, shape):
    target = [x.shape[i] if s == 0 else s for i, s in enumerate(shape.tolist())]
    return x.reshape(target)


def run_node(node, args, a):
    op = node.op_type
    x = args[0] if args else None
    if op == "Constant":
        return tensor(a["value"])
    if op == "Identity":
        return x
    if op in ("Add", "Sub", "Mul", "Div", "Pow"):
        return {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
                "Pow": torch.pow}[op](x, args[1])
    if op in ("Relu", "Sigmoid", "Tanh", "Erf", "Sqrt"):
        return {"Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh,
                "Erf": torch.erf, "Sqrt": torch.sqrt}[op](x)
    if op == "LeakyRelu":
        return torch.where(x >= 0, x, x * a.get("alpha", 0.01))
    if op == "Elu":
        alpha = a.get("alpha", 1.0)
        return torch.where(x > 0, x, alpha * (torch.exp(x) - 1))
    if op == "PRelu":
        return torch.where(x >= 0, x, x * args[1])
    if op in ("Softmax", "LogSoftmax"):
        fn = torch.softmax if op == "Softmax" else torch.log_softmax
        return fn(x, dim=a.get("axis", -1))
    if op == "Gemm":
        A = x.t() if a.get("transA", 0) else x
        B = args[1].t() if a.get("transB", 0) else args[1]
        y = a.get("alpha", 1.0) * (A @ B)
        return y + a.get("beta", 1.0) * args[2] if len(args) > 2 else y
    if op == "MatMul":
        return torch.matmul(x, args[1])
    if op == "Transpose":
        return x.permute(*a["perm"])
    if op == "Conv":
        conv = {3: F.conv1d, 4: F.conv2d}[x.dim()]
        bias = args[2] if len(args) > 2 else None
        return conv(x, args[1], bias, stride=tuple(a.get("strides", [1] * (x.dim() - 2))),
                    padding=pool_padding(a.get("pads", [0] * 2 * (x.dim() - 2))),
                    dilation=tuple(a.get("dilations", [1] * (x.dim() - 2))),
                    groups=a.get("group", 1))
    if op == "BatchNormalization":
        scale, bias, mean, var = args[1:5]
        eps = a.get("epsilon", 1e-5)
        return ((x - channel_shape(x, mean)) / torch.sqrt(channel_shape(x, var) + eps)
                * channel_shape(x, scale) + channel_shape(x, bias))
    if op == "LayerNormalization":
        axis = a.get("axis", -1) % x.dim()
        bias = args[2] if len(args) > 2 else None
        return F.layer_norm(x, x.shape[axis:], args[1], bias, a.get("epsilon", 1e-5))
    if op in ("ReduceMean", "ReduceSum", "ReduceSumSquare"):
        # Axes an attribute up to opset 17 (ReduceSum 12), an input from 18 (ReduceSum 13).
        axes = a["axes"] if "axes" in a else (args[1].tolist() if len(args) > 1 else [])
        if not axes and a.get("noop_with_empty_axes", 0):
            return x
        axes = tuple(axes) if axes else tuple(range(x.dim()))
        keep = bool(a.get("keepdims", 1))
        if op == "ReduceMean":
            return x.mean(dim=axes, keepdim=keep)
        return (x * x if op == "ReduceSumSquare" else x).sum(dim=axes, keepdim=keep)
    if op == "Gelu":
        return F.gelu(x, approximate=a.get("approximate", b"none").decode())
    if op == "Split":
        axis = a.get("axis", 0)
        if len(args) > 1:
            sizes = args[1].tolist()
        else:  # num_outputs (opset 18): equal parts, the last smaller
            n = a["num_outputs"]
            each = -(-x.shape[axis] // n)
            sizes = [min(each, x.shape[axis] - k * each) for k in range(n)]
        return tuple(torch.split(x, sizes, dim=axis))
    if op == "Pad":
        pads = args[1].tolist()
        axes = args[3].tolist() if len(args) > 3 else list(range(x.dim()))
        full = [0] * (2 * x.dim())
        for k, axis in enumerate(axes):
            full[axis % x.dim()], full[axis % x.dim() + x.dim()] = pads[k], pads[k + len(axes)]
        torch_pads = []
        for axis in reversed(range(x.dim())):
            torch_pads += [full[axis], full[axis + x.dim()]]
        value = float(args[2]) if len(args) > 2 else 0.0
        return F.pad(x, torch_pads, value=value)
    if op == "MaxPool":
        return F.max_pool2d(x, tuple(a["kernel_shape"]), tuple(a.get("strides", [1, 1])),
                            pool_padding(a.get("pads", [0] * 4)), tuple(a.get("dilations", [1, 1])),
                            ceil_mode=bool(a.get("ceil_mode", 0)))
    if op == "AveragePool":
        return F.avg_pool2d(x, tuple(a["kernel_shape"]), tuple(a.get("strides", [1, 1])),
                            pool_padding(a.get("pads", [0] * 4)),
                            ceil_mode=bool(a.get("ceil_mode", 0)),
                            count_include_pad=bool(a.get("count_include_pad", 0)))
    if op == "GlobalAveragePool":
        return x.mean(dim=tuple(range(2, x.dim())), keepdim=True)
    if op == "Flatten":
        axis = a.get("axis", 1)
        return x.reshape(math.prod(x.shape[:axis]), -1)
    if op == "Reshape":
        return reshape(x, args[1])
    if op == "Gather":
        return torch.index_select(x, a.get("axis", 0), args[1].reshape(-1)).reshape(
            *x.shape[:a.get("axis", 0)], *args[1].shape, *x.shape[a.get("axis", 0) + 1:])
    if op == "Concat":
        return torch.cat(args, dim=a["axis"])
    if op == "Clip":
        return torch.clamp(x, args[1], args[2])
    if op in ("HardSigmoid", "HardSwish"):
        h = torch.clamp(x * a.get("alpha", 1 / 6) + a.get("beta", 0.5), 0, 1)
        return h if op == "HardSigmoid" else x * h
    if op == "Slice":
        y = x
        axes = args[3].tolist() if len(args) > 3 else range(len(args[1]))
        steps = args[4].tolist() if len(args) > 4 else [1] * len(args[1])
        for start, end, axis, step in zip(args[1].tolist(), args[2].tolist(), axes, steps):
            n = y.shape[axis]
            start, end = (max(min(v, n), -n - 1) for v in (start, end))  # INT64_MAX: the end
            y = y[(slice(None),) * (axis % y.dim()) + (slice(start, end, step),)]
        return y
    if op == "Shape":
        return torch.tensor(x.shape, dtype=torch.int64)[a.get("start", 0):a.get("end", x.dim())]
    if op == "Expand":
        return x.expand(*torch.broadcast_shapes(x.shape, tuple(args[1].tolist())))
    raise NotImplementedError(f"the test's interpreter has no {op} ({node.name})")


def run_model(model, feeds):
    """The graph's outputs, by name, for the inputs `feeds` (name -> tensor)."""
    values = {init.name: tensor(init) for init in model.graph.initializer}
    values.update(feeds)
    for node in model.graph.node:
        args = [values[name] for name in node.input if name]
        out = run_node(node, args, attributes(node))
        for name, v in zip(node.output, out if isinstance(out, tuple) else (out,)):
            values[name] = v
    return {out.name: values[out.name] for out in model.graph.output}


# ---- The checks --------------------------------------------------------------------------------



def checkable(model):
    """The model as this onnx's checker can read it: itself, or where its opset is newer than
    onnx knows (Debian's onnx 1.12 knows 17), a copy at the newest opset onnx knows with
    ReduceMean's axes (an input from opset 18) an attribute again; NN Studio writes no other
    operator whose form changed at 18. check_reductions checks the opset-18 form itself."""
    known = onnx.defs.onnx_opset_version()
    if model.opset_import[0].version <= known:
        return model, "onnx.checker with full_check"
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.opset_import[0].version = known
    constants = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
                 for n in copy.graph.node if n.op_type == "Constant"}
    for n in copy.graph.node:
        if n.op_type == "ReduceMean" and len(n.input) == 2:
            axes = constants[n.input[1]].tolist()
            del n.input[1]
            n.attribute.append(onnx.helper.make_attribute("axes", axes))
    return copy, f"onnx.checker with full_check (onnx {onnx.__version__} knows opsets up to " \
                 f"{known}: at {known}, ReduceMean's axes an attribute)"


def check_reductions(model, what):
    """The reductions' axes: an attribute up to opset 17, a constant 1-D int64 input from 18
    (ReduceMean-18's form)."""
    opset = model.opset_import[0].version
    constants = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
                 for n in model.graph.node if n.op_type == "Constant"}
    for n in model.graph.node:
        if not n.op_type.startswith("Reduce"):
            continue
        names = {a.name for a in n.attribute}
        if opset >= 18:
            axes = constants.get(n.input[1]) if len(n.input) == 2 else None
            ok = (axes is not None and axes.dtype.name == "int64" and axes.ndim == 1
                  and names <= {"keepdims", "noop_with_empty_axes"})
        else:
            ok = len(n.input) == 1 and "axes" in names
        check(ok, f"{what}: {n.name} has its axes as opset {opset} has them")


def check_file(path, what, state):
    """The file as ONNX's checker and the state dict see it; returns the model."""
    model = onnx.load(path)
    checked, how = checkable(model)
    try:
        onnx.checker.check_model(checked, full_check=True)
        check(True, f"{what}: passes {how}")
    except Exception as e:  # noqa: BLE001: the checker's own exception types vary
        check(False, f"{what}: passes {how} ({e})")
    check_reductions(model, what)
    keys = [k for k in state if not k.endswith("num_batches_tracked")]
    names = [init.name for init in model.graph.initializer]
    check(names == keys, f"{what}: the initializers are the state dict's keys, in order")
    shapes = {init.name: list(init.dims) for init in model.graph.initializer}
    check(all(shapes.get(k) == list(state[k].shape) for k in keys),
          f"{what}: the initializers have the state dict's shapes")
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        check(len(dims) > 0 and dims[0].dim_param == "N",
              f"{what}: {value.name} has the batch as dim_param N")
    return model


def check_project(tmp, path):
    name = os.path.splitext(os.path.basename(path))[0]
    project = json.load(open(path))
    weights = os.path.join(tmp, name + ".pt")
    cli("train", path, "--steps", "3", "--quiet", "--save", weights)  # trained, not as built
    state = os.path.join(tmp, name + "_state.pt")
    cli("convert", weights, state)
    sd = torch.load(state, weights_only=True)
    x = input_for(path)
    ours = engine_forward(tmp, path, state, x, "--eval")["output"]
    inputs = [n["name"] for n in project["graph"]["nodes"] if n["type"] == "Input"]
    for opset in ("18", "17", "13"):
        out = os.path.join(tmp, f"{name}_{opset}.onnx")
        cli("export", path, "--format", "onnx", "--out", out, "--weights", state, "--opset", opset)
        what = f"{name} (opset {opset}, trained)"
        model = check_file(out, what, sd)
        values = {i.name: tensor(i) for i in model.graph.initializer}
        check(all(torch.equal(values[k], sd[k]) for k in values),
              f"{what}: the initializers hold the weights")
        y = list(run_model(model, {inputs[0]: x}).values())[0]
        check(torch.allclose(y, ours, rtol=1e-4, atol=1e-5),
              f"{what}: the model computes nnstudio-cli forward's output "
              f"(max diff {(y - ours).abs().max().item():.2e})")

        out = os.path.join(tmp, f"{name}_{opset}_initial.onnx")
        cli("export", path, "--format", "onnx", "--out", out, "--opset", opset)
        again = os.path.join(tmp, f"{name}_{opset}_again.onnx")
        cli("export", path, "--format", "onnx", "--out", again, "--opset", opset)
        what = f"{name} (opset {opset}, initial weights)"
        model = check_file(out, what, sd)
        check(open(out, "rb").read() == open(again, "rb").read(),
              f"{what}: the project's seed makes the same file every time")
        # Those weights as a state dict file give the same output in nnstudio-cli forward.
        initial = {i.name: tensor(i) for i in model.graph.initializer}
        for key in sd:
            initial.setdefault(key, sd[key])  # the BatchNorm counters
        initial_file = os.path.join(tmp, f"{name}_initial.safetensors")
        with open(initial_file, "wb") as f:
            f.write(safetensors_bytes(initial))
        y = list(run_model(model, {inputs[0]: x}).values())[0]
        ours_initial = engine_eval(tmp, path, x, initial_file)
        check(torch.allclose(y, ours_initial, rtol=1e-4, atol=1e-5),
              f"{what}: the model computes nnstudio-cli forward's output with these weights "
              f"(max diff {(y - ours_initial).abs().max().item():.2e})")
        # And they are the project's initial weights everywhere: forward without --weights
        # (onnxruntime found the two apart when forward drew them without the project's seed).
        if opset == "17":
            unweighted = engine_eval(tmp, path, x)
            check(torch.equal(unweighted, ours_initial),
                  f"{name}: nnstudio-cli forward without --weights uses the weights the export "
                  f"writes (max diff {(unweighted - ours_initial).abs().max().item():.2e})")


# Chains of the layers the examples lack, written as projects here: every other built-in
# layer's ONNX form, run with random weights (BatchNorm's running statistics included).
CHAINS = {
    "Layers2d": ([2, 9, 9], "float32", [
        ("Conv2d", {"in_channels": 2, "out_channels": 4, "kernel_size": [3, 3],
                    "padding": [1, 1]}),
        ("BatchNorm2d", {"num_features": 4, "track_running_stats": False}),
        ("PReLU", {"num_parameters": 4}),
        ("AvgPool2d", {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1],
                       "count_include_pad": False}),
        ("BatchNorm2d", {"num_features": 4, "affine": False}),
        ("MaxPool2d", {"kernel_size": [2, 2], "stride": [1, 1]}),
        ("AdaptiveAvgPool2d", {"output_size": [2, 2]}),
        ("Flatten", {"start_dim": 2}),
        ("Unflatten", {"dim": 2, "unflattened_size": [2, 2]}),
        ("AdaptiveAvgPool2d", {"output_size": [1, 1]}),
        ("Flatten", {}),
        ("GELU", {}),
        ("Sigmoid", {}),
        ("Linear", {"in_features": 4, "out_features": 6}),
        ("Tanh", {}),
        ("PReLU", {}),
        ("Softmax", {}),
        ("LogSoftmax", {"dim": 1}),
    ]),
    # The functions' forms: PyTorch's own functions and tensor methods on [N, C, H, W].
    "Functions": ([2, 6, 6], "float32", [
        ("F.hardtanh", {"min_val": -0.5, "max_val": 0.7}),
        ("Conv2d", {"in_channels": 2, "out_channels": 4, "kernel_size": [3, 3], "padding": [1, 1]}),
        ("F.hardswish", {}),
        ("F.adaptive_avg_pool2d", {"output_size": [3, 3]}),
        ("Permute", {"dims": [0, 2, 3, 1]}),
        ("Narrow", {"dim": 3, "start": 1, "length": 3}),
        ("Transpose", {"dim0": 1, "dim1": 3}),
        ("F.hardsigmoid", {}),
        ("Select", {"dim": 2, "index": 1}),
        ("torch.sigmoid", {}),
        ("Reshape", {"shape": [3, 3]}),
        ("F.silu", {}),
        ("Mean", {"dim": [2], "keepdim": True}),
        ("torch.tanh", {}),
        ("torch.flatten", {"start_dim": 1}),
        ("F.gelu", {"approximate": "tanh"}),
    ]),
    # Self-attention (query, key and value one tensor), causal, batch first.
    "Attention": ([5, 8], "float32", [
        ("MultiheadAttention", {"embed_dim": 8, "num_heads": 2, "batch_first": True,
                                "is_causal": True}),
        ("LayerNorm", {"normalized_shape": [8]}),
        ("MultiheadAttention", {"embed_dim": 8, "num_heads": 4, "bias": False}),
    ]),
    "Tokens": ([6], "int64", [
        ("Embedding", {"num_embeddings": 10, "embedding_dim": 8, "padding_idx": 0}),
        ("Conv1d", {"in_channels": 6, "out_channels": 4, "kernel_size": 3, "padding": 1,
                    "dilation": 2, "groups": 2, "bias": False}),
        ("BatchNorm1d", {"num_features": 4}),
        ("LayerNorm", {"normalized_shape": [4, 6], "elementwise_affine": False}),
        ("Linear", {"in_features": 6, "out_features": 3}),
        ("ELU", {}),
        ("Softmax", {"dim": -1}),
        ("Identity", {}),
        ("Dropout", {"p": 0.5}),
    ]),
}


def chain_project(tmp, name, shape, dtype, layers):
    nodes = [{"id": 1, "type": "Input", "name": "x",
              "options": {"shape": shape, "dtype": dtype}, "x": 0, "y": 0}]
    for i, (type_, options) in enumerate(layers):
        nodes.append({"id": i + 2, "type": type_, "name": f"l{i}", "options": options,
                      "x": 0, "y": 0})
    nodes.append({"id": len(nodes) + 1, "type": "Output", "name": "y", "options": {}, "x": 0,
                  "y": 0})
    ports = {"MultiheadAttention": ["query", "key", "value"]}
    edges = [{"from": {"node": i, "port": "out"}, "to": {"node": i + 1, "port": port}}
             for i in range(1, len(nodes))
             for port in ports.get(nodes[i]["type"], ["in"])]
    project = {"format": "nnstudio-project", "version": 1, "name": name,
               "graph": {"nodes": nodes, "edges": edges, "next_id": len(nodes) + 1}}
    path = os.path.join(tmp, name + ".nns")
    with open(path, "w") as f:
        json.dump(project, f)
    return path




def check_chains(tmp):
    torch.manual_seed(1)
    for name, (shape, dtype, layers) in CHAINS.items():
        path = chain_project(tmp, name, shape, dtype, layers)
        x = (torch.randint(0, 10, (5, *shape)) if dtype == "int64" else torch.randn(5, *shape))
        initial = os.path.join(tmp, name + "_initial.onnx")
        cli("export", path, "--format", "onnx", "--out", initial)
        # Random weights for every entry; running variances positive, the counters zero.
        state = {}
        for init in onnx.load(initial).graph.initializer:
            t = torch.randn(*init.dims)
            state[init.name] = t.abs() + 0.5 if init.name.endswith("running_var") else t
            if init.name.endswith(".running_mean"):
                key = init.name[:-len("running_mean")] + "num_batches_tracked"
                state[key] = torch.tensor(0, dtype=torch.int64)
        weights = os.path.join(tmp, name + ".safetensors")
        with open(weights, "wb") as f:
            f.write(safetensors_bytes(state))
        for opset in ("18", "17", "13"):
            out = os.path.join(tmp, f"{name}_{opset}.onnx")
            cli("export", path, "--format", "onnx", "--out", out, "--opset", opset,
                "--weights", weights)
            what = f"{name} (opset {opset})"
            model = check_file(out, what, state)
            ops = sorted({n.op_type for n in model.graph.node})
            y = run_model(model, {"x": x})["y"]
            ours = engine_eval(tmp, path, x, weights)
            check(y.shape == ours.shape and torch.allclose(y, ours, rtol=1e-4, atol=1e-5),
                  f"{what}: {', '.join(ops)} compute nnstudio-cli forward's output "
                  f"(max diff {(y - ours).abs().max().item():.2e})")


def check_forms(tmp):
    """LayerNorm is one operator from opset 17 and torch.onnx's decomposition before; the
    reductions' axes are an input from opset 18 (the Functions chain's Mean)."""
    path = os.path.join(HERE, "export_models.nns")
    ops = {}
    for opset in ("17", "13"):
        out = os.path.join(tmp, f"forms_{opset}.onnx")
        cli("export", path, "--format", "onnx", "--out", out, "--opset", opset, "--force")
        ops[opset] = [n.op_type for n in onnx.load(out).graph.node]
    check("LayerNormalization" in ops["17"] and "LayerNormalization" not in ops["13"]
          and "ReduceMean" in ops["13"], "LayerNorm's forms at opsets 17 and 13")
    functions = chain_project(tmp, "Functions", *CHAINS["Functions"])
    inputs = {}
    for opset in ("18", "17"):
        out = os.path.join(tmp, f"functions_{opset}.onnx")
        cli("export", functions, "--format", "onnx", "--out", out, "--opset", opset, "--force")
        mean = next(n for n in onnx.load(out).graph.node if n.op_type == "ReduceMean")
        inputs[opset] = (len(mean.input), [a.name for a in mean.attribute])
    check(inputs == {"18": (2, ["keepdims"]), "17": (1, ["axes", "keepdims"])},
          f"ReduceMean's axes an input at opset 18, an attribute at 17 ({inputs})")


def check_refusals(tmp):
    spirals = PROJECTS[0]
    out = os.path.join(tmp, "refused.onnx")
    message = cli("export", spirals, "--format", "onnx", "--out", out, "--opset", "12", code=2)
    check("[13, 18]" in message and not os.path.exists(out), "opset 12 is refused")
    message = cli("export", spirals, "--format", "onnx", "--out", out, "--opset", "19", code=2)
    check("[13, 18]" in message and not os.path.exists(out), "opset 19 is refused")
    message = cli("export", spirals, "--format", "pytorch", "--out", out, "--opset", "17", code=2)
    check("--opset" in message and not os.path.exists(out), "--opset with pytorch is refused")
    open(out, "w").write("mine")
    message = cli("export", spirals, "--format", "onnx", "--out", out, code=1)
    check("exists" in message and open(out).read() == "mine",
          "an existing file is not overwritten without --force")
    cli("export", spirals, "--format", "onnx", "--out", out, "--force")
    check(onnx.load(out).producer_name == "NN Studio", "--force replaces the file")
    plugins = os.path.join(ROOT, "tests", "cli", "plugins_net.nns")
    out = os.path.join(tmp, "plugins.onnx")
    message = cli("export", plugins, "--format", "onnx", "--out", out, code=1)
    check("which has no ONNX form" in message and not os.path.exists(out),
          "a plugin type is refused and nothing is written")


def check_refused(tmp, path, node, node_type):
    """An example with a layer that has no ONNX form: refused with the node's name, no file."""
    out = os.path.join(tmp, os.path.basename(path) + ".onnx")
    message = cli("export", path, "--format", "onnx", "--out", out, code=1)
    check(f"node '{node}': the type {node_type} has no ONNX form" in message and
          not os.path.exists(out),
          f"{os.path.basename(path)}: {node_type} has no ONNX form yet, so the export is refused "
          f"and nothing is written ({message.strip()})")


def checks():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for path in PROJECTS:
            missing = without_onnx_form(path)
            if missing:
                check_refused(tmp, path, *missing)
            else:
                check_project(tmp, path)
        check_chains(tmp)
        check_forms(tmp)
        check_refusals(tmp)


if __name__ == "__main__":
    main(checks, __doc__)

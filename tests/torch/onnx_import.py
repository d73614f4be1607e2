#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""ONNX files that torch.onnx.export (torch 1.13) writes, opened by NN Studio (ctest
torch.onnx_import):

Each PyTorch model below is exported to ONNX, `nnstudio-cli import` makes a project and its
weights from the file, and `nnstudio-cli forward` on the project gives torch's output (rtol
1e-4). Where the exporter keeps PyTorch's modules (no BatchNorm folded into a Conv), the
imported weights have the PyTorch model's state-dict keys, shapes and values, and `nnstudio-cli
summary` prints the PyTorch module tree. An imported model trains and probes like a built one.
A model with operators NN Studio has no node for is refused with those operators and their node
names, a file that is not ONNX, truncated, with an initializer of the wrong size or an opset
outside 13..21 is a clear error, and none of them writes a file. NN Studio's own ONNX export of
every example project comes back with the project's outputs, keys and values.

    /usr/bin/python3 tests/torch/onnx_import.py path/to/nnstudio-cli

Skipped without torch (exit 77), except in CI, where it fails (torch_checks.py).
"""

import json
import os
import tempfile
import warnings

from torch_checks import (HERE, ROOT, check, cli, engine_eval, input_for, load_module, main,
                          torch, without_onnx_form)

import onnx
from onnx import helper, TensorProto

nn = torch.nn
warnings.filterwarnings("ignore")

EXAMPLES = os.path.join(ROOT, "resources", "examples")
ROUNDTRIP = [os.path.join(EXAMPLES, f) for f in sorted(os.listdir(EXAMPLES)) if f.endswith(".nns")]
# Containers, LayerNorm/GELU/Dropout, Parameter and Buffer nodes, Mul, Concat, MatMul, a Ref.
ROUNDTRIP.append(os.path.join(HERE, "export_models.nns"))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class CNN(nn.Module):
    """Conv, BatchNorm, pooling; a Sequential with a Dropout the exporter leaves out."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3, stride=1, padding=1, groups=2, bias=False), nn.BatchNorm2d(8),
            nn.LeakyReLU(0.2), nn.AvgPool2d(2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flat = nn.Flatten()
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(self.drop(self.flat(self.pool(self.features(x)))))


class Residual(nn.Module):
    """A residual block with Add, then a Concat of two branches."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 3, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(3)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(3, 3, 3, padding=1, dilation=1)
        self.bn2 = nn.BatchNorm2d(3)
        self.side = nn.Conv2d(3, 2, 1)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(5 * 6 * 6, 4))

    def forward(self, x):
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        h = self.relu(h + x)
        return self.head(torch.cat([h, self.side(x)], dim=1))


class LayerNormGELU(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.norm = nn.LayerNorm(16)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.act(self.norm(self.fc1(x))))


class Activations(nn.Module):
    """The other activations, Conv1d, Unsqueeze and a static Reshape, a module called twice."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 3, padding=1)
        self.prelu = nn.PReLU(4)
        self.elu = nn.ELU(0.5)
        self.fc = nn.Linear(32, 8)
        self.shared = nn.Linear(8, 8)
        self.tanh = nn.Tanh()
        self.sigmoid = nn.Sigmoid()
        self.out = nn.Linear(8, 4)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, x):
        h = self.elu(self.prelu(self.conv(x.unsqueeze(1))))
        h = self.fc(h.reshape(-1, 32))
        h = self.tanh(self.shared(h))
        h = self.sigmoid(self.shared(h))
        return self.softmax(self.out(h))


class Tokens(nn.Module):
    """Embedding's Gather, Linear on rank 3 (MatMul + Add), a Softmax."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.proj = nn.Linear(6, 5)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        return self.softmax(self.proj(self.embed(x)))


class ViewFlatten(nn.Module):
    """x.view(x.size(0), -1) (Shape, Gather, Unsqueeze, Concat, Reshape) and x.reshape(-1, n):
    the flattening of older PyTorch code, and a Linear called twice."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.fc = nn.Linear(2 * 4 * 4, 3)

    def forward(self, x):
        h = self.conv(x)
        return self.fc(h.view(h.size(0), -1)) + self.fc(h.reshape(-1, 32))


class SubBuffer(nn.Module):
    """x - a buffer (Sub with a constant operand), x / 2 (Div), x.mean(1) (ReduceMean)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("center", torch.randn(4, 8))
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc((x - self.center).mean(1) / 2)


class ConvNeXtBlocks(nn.Module):
    """torchvision's ConvNeXt block (x.permute to channels-last and back, LayerNorm, Linear,
    GELU, the layer scale's Mul) behind a stem: convnext_tiny is 28M parameters."""

    def __init__(self):
        super().__init__()
        from torchvision.models.convnext import CNBlock
        self.stem = nn.Conv2d(3, 16, 4, stride=4)
        self.blocks = nn.Sequential(CNBlock(16, 0.5, 0.0), CNBlock(16, 0.5, 0.0))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        return self.head(self.pool(self.blocks(self.stem(x))).flatten(1))


class Encoder(nn.Module):
    """nn.TransformerEncoder: attention's decomposition (its batch moved into the heads) comes
    back as MultiheadAttention."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        return self.head(self.encoder(x)[:, 0])


class ChannelSplit(nn.Module):
    """torch.split along the channels (Split), x[:, :, 1:] (Slice), PReLU on [N, C, H, W]."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 6, 3, padding=1)
        self.prelu = nn.PReLU(2)

    def forward(self, x):
        a, b, c = torch.split(self.conv(x), [2, 1, 3], dim=1)
        return torch.cat([self.prelu(a)[:, :, 1:], (b * c[:, :1])[:, :, 1:]], dim=1)


def torchvision_models():
    """Real models as a new user brings them: torchvision's (num_classes 10, small inputs)."""
    import torchvision
    m = torchvision.models

    def vit():
        model = m.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                    hidden_dim=32, mlp_dim=64, num_classes=10)
        # torchvision zeroes the head: every output would be 0 and any comparison pass.
        nn.init.normal_(model.heads.head.weight)
        nn.init.normal_(model.heads.head.bias)
        return model

    image = lambda size: (lambda: torch.randn(2, 3, size, size))
    return [
        # name, model, input, opsets
        ("resnet18", lambda: m.resnet18(num_classes=10), image(64), (17,)),
        ("mobilenet_v2", lambda: m.mobilenet_v2(num_classes=10), image(64), (13,)),  # Clip
        ("mobilenet_v3_small", lambda: m.mobilenet_v3_small(num_classes=10), image(64),
         (13, 17)),  # HardSigmoid (x * it is hardswish at 13), HardSwish
        ("shufflenet_v2", lambda: m.shufflenet_v2_x0_5(num_classes=10), image(64), (17,)),
        ("mnasnet", lambda: m.mnasnet0_5(num_classes=10), image(64), (13,)),  # ReduceMean
        ("vit", vit, image(32), (13, 17)),  # Expand/Where, attention, Select
        ("convnext_blocks", ConvNeXtBlocks, image(16), (17,)),
        ("transformer_encoder", Encoder, lambda: torch.randn(3, 12, 32), (13, 17)),
        ("sub_buffer", SubBuffer, lambda: torch.randn(3, 4, 8), (13,)),
        ("channel_split", ChannelSplit, lambda: torch.randn(2, 2, 5, 5), (13, 17)),
    ]


def check_real_model(tmp, name, make, make_input, opset):
    """torch's output (atol relative to the output's scale: deep models); the state dict's keys,
    shapes and values (ONNX keeps no class names, so the module tree is not compared)."""
    model, project, weights, what = import_and_compare(tmp, name, make, make_input, opset, True,
                                                       relative=True)
    # A custom module's own nn.Parameter (ViT's encoder.pos_embedding) is a Parameter node at
    # the top level, its dots made underscores: groups hold modules only, and ONNX keeps no
    # class to make a block of (docs/onnx.md).
    own = {name for module_name, module in model.named_modules()
           for name, _ in module.named_parameters(module_name, recurse=False)
           if list(module.children()) and not isinstance(module, nn.MultiheadAttention)}
    state = {k.replace(".", "_") if k in own else k: v for k, v in model.state_dict().items()}
    check_weights(tmp, weights, state, what)
    return project, weights


def check_own_export(tmp, project, weights, name):
    """NN Studio's own ONNX export of an imported real model imports back to the same outputs
    (PReLU on [N, C, H, W] is exported with a Reshape of its slope)."""
    exported = os.path.join(tmp, f"{name}_again.onnx")
    cli("export", project, "--format", "onnx", "--out", exported, "--weights", weights)
    again = os.path.join(tmp, f"{name}_again.nns")
    cli("import", exported, again)
    x = input_for(project)
    want = engine_eval(tmp, project, x, weights)
    got = engine_eval(tmp, again, x, os.path.join(tmp, f"{name}_again.safetensors"))
    check(got.shape == want.shape and torch.allclose(got, want, rtol=1e-5, atol=1e-6),
          f"{name}: NN Studio's ONNX export of the imported model imports back to its outputs")


def randomize_batchnorm(model):
    """Running statistics that are not 0 and 1, so that they matter and are not deduplicated
    with the weights."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def export(model, x, path, opset, preserve):
    torch.onnx.export(
        model, x, path, input_names=["x"], output_names=["y"],
        dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=opset,
        training=torch.onnx.TrainingMode.PRESERVE if preserve else torch.onnx.TrainingMode.EVAL)




# name, model, input, opsets, whether PyTorch's modules survive the export (their state dict)
CASES = [
    ("mlp", MLP, lambda: torch.randn(7, 2), (13, 17), True),
    ("cnn_folded", CNN, lambda: torch.randn(3, 1, 8, 8), (13,), False),
    ("cnn", CNN, lambda: torch.randn(3, 1, 8, 8), (13, 17), True),
    ("residual", Residual, lambda: torch.randn(2, 3, 6, 6), (13,), True),
    ("residual_folded", Residual, lambda: torch.randn(2, 3, 6, 6), (17,), False),
    ("layernorm_gelu", LayerNormGELU, lambda: torch.randn(5, 6), (13, 14, 15, 16, 17), True),
    ("activations", Activations, lambda: torch.randn(4, 8), (13, 17), True),
    ("tokens", Tokens, lambda: torch.randint(0, 10, (3, 7)), (13, 17), True),
    ("view_flatten", ViewFlatten, lambda: torch.randn(3, 1, 6, 6), (13, 17), True),
]


def import_and_compare(tmp, name, make, make_input, opset, preserve, relative=False):
    """The model (eval mode, BatchNorm statistics randomized) exported to ONNX and imported:
    `forward --eval` is torch's output (rtol 1e-4, atol 1e-5, times the output's largest
    magnitude when relative). Returns (model, project, weights, what)."""
    torch.manual_seed(0)
    model = make()
    randomize_batchnorm(model)
    model.eval()
    x = make_input()
    with torch.no_grad():
        want = model(x)
    what = f"{name} (opset {opset})"
    path = os.path.join(tmp, f"{name}_{opset}.onnx")
    export(model, x, path, opset, preserve)
    project = os.path.join(tmp, f"{name}_{opset}.nns")
    weights = os.path.join(tmp, f"{name}_{opset}.safetensors")
    cli("import", path, project)
    got = engine_eval(tmp, project, x, weights)
    atol = 1e-5 * (want.abs().max().item() if relative else 1)
    check(got.shape == want.shape and torch.allclose(got, want, rtol=1e-4, atol=atol),
          f"{what}: the imported model's output is torch's (max diff "
          f"{(got - want).abs().max().item() if got.shape == want.shape else 'shape'})")
    return model, project, weights, what


def check_weights(tmp, weights, state, what):
    """The imported weights file holds `state`: its keys, and each tensor's shape and values."""
    weights_pt = os.path.join(tmp, "weights.pt")
    cli("convert", weights, weights_pt)
    imported = torch.load(weights_pt)
    check(sorted(imported) == sorted(state),
          f"{what}: the weights have the PyTorch model's state-dict keys "
          f"({sorted(set(imported) ^ set(state))[:6]} differ)")
    same = all(k in imported and imported[k].shape == v.shape and torch.equal(
        imported[k].to(v.dtype), v) for k, v in state.items() if "num_batches" not in k)
    check(same, f"{what}: every weight has the PyTorch model's shape and values")


def check_case(tmp, name, make, make_input, opset, preserve):
    model, project, weights, what = import_and_compare(tmp, name, make, make_input, opset,
                                                       preserve)
    if preserve:
        check_weights(tmp, weights, model.state_dict(), what)
        summary = cli("summary", project)
        # Less the Dropout modules, which the exporter leaves out of an eval-mode model.
        lines = [line for line in repr(model).splitlines()[1:] if "Dropout(" not in line]
        check(all(line in summary for line in lines),
              f"{what}: `summary` prints the PyTorch model's module tree")
    return project, weights


def check_training(tmp):
    """The imported MLP trains on its data set (spirals fits: 2 inputs, 3 classes) and its
    probes report."""
    project, weights = check_case(tmp, "train_mlp", MLP, lambda: torch.randn(4, 2), 17, True)
    out = cli("train", project, "--weights", weights, "--steps", "30", "--probe", "fc1,act",
              "--save", os.path.join(tmp, "trained.safetensors"))
    check("fc1" in out and "act" in out and "loss" in out.lower(),
          "an imported model trains from its weights and its probes report")


def check_pytorch_code(tmp):
    """An imported bare nn.Sequential (modules named 0, 1, ...: not Python attributes) exports
    as PyTorch code that loads its weights strictly and computes the same."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2)).eval()
    x = torch.randn(4, 3)
    path = os.path.join(tmp, "bare.onnx")
    export(model, x, path, 17, True)
    project = os.path.join(tmp, "bare.nns")
    cli("import", path, project)
    folder = os.path.join(tmp, "bare_pytorch")
    cli("export", project, "--format", "pytorch", "--out", folder, "--weights",
        os.path.join(tmp, "bare.safetensors"))
    code = load_module(os.path.join(folder, "model.py"), "bare_model")
    net = code.bare()
    net.load_state_dict(torch.load(os.path.join(folder, "weights.pt")), strict=True)
    with torch.no_grad():
        check(torch.allclose(net.eval()(x), model(x), atol=1e-6),
              "an imported nn.Sequential exports as PyTorch code with its keys and outputs")


def refused(args, expect, what, tmp, written):
    out = cli(*args, code=1)
    ok = all(e in out for e in expect)
    check(ok and not any(os.path.exists(p) for p in written), f"{what} (message: {out.strip()})")


def check_bad_input(tmp):
    # Operators without a node: each named with its nodes; nothing written.
    class Unsupported(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return torch.sin(self.fc(x)) + torch.cos(x).abs()

    path = os.path.join(tmp, "unsupported.onnx")
    export(Unsupported().eval(), torch.randn(2, 4), path, 13, True)
    out_nns = os.path.join(tmp, "unsupported.nns")
    written = [out_nns, os.path.join(tmp, "unsupported.safetensors")]
    refused(["import", path, out_nns], ["operators NN Studio has no node for", "Sin (1): /Sin",
                                        "Cos (1): /Cos", "Abs (1): /Abs"],
            "a model with unsupported operators is refused, listing each with its nodes", tmp,
            written)
    # Not ONNX, truncated.
    junk = os.path.join(tmp, "junk.onnx")
    with open(junk, "wb") as f:
        f.write(b"\x00\x01this is not a protobuf\xff\xff\xff")
    refused(["import", junk, out_nns], ["not an ONNX model"], "a file that is not ONNX is refused",
            tmp, written)
    good = os.path.join(tmp, "good.onnx")
    export(MLP().eval(), torch.randn(2, 2), good, 13, True)
    data = open(good, "rb").read()
    cut = os.path.join(tmp, "cut.onnx")
    with open(cut, "wb") as f:
        f.write(data[: len(data) * 2 // 3])
    refused(["import", cut, out_nns], ["not an ONNX model"], "a truncated file is refused", tmp,
            written)
    # An initializer whose data does not fit its dims.
    m = onnx.load(good)
    w = m.graph.initializer[0]
    w.dims[0] += 1
    bad = os.path.join(tmp, "bad_size.onnx")
    onnx.save(m, bad)
    refused(["import", bad, out_nns], [f"tensor '{w.name}'", "bytes of data"],
            "an initializer of the wrong size is refused, naming it", tmp, written)
    # Opsets outside 13..21.
    for opset in (11, 22):
        m = onnx.load(good)
        m.opset_import[0].version = opset
        path = os.path.join(tmp, f"opset{opset}.onnx")
        onnx.save(m, path)
        refused(["import", path, out_nns], [f"opset {opset} is not supported", "13 to 21"],
                f"opset {opset} is refused, naming the supported range", tmp, written)
    # A dynamic size after the batch.
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "L"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "L"])])
    path = os.path.join(tmp, "dynamic.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    refused(["import", path, out_nns], ["input 'x'", "dim 1 has no fixed size"],
            "an input with a dynamic size after the batch is refused", tmp, written)
    # An existing project is not replaced without --force.
    project = os.path.join(tmp, "exists.nns")
    open(project, "w").write("{}")
    out = cli("import", good, project, code=1)
    check("exists" in out and open(project).read() == "{}",
          "an existing project is not replaced without --force")




def check_roundtrip(tmp):
    """NN Studio's own ONNX exports come back unchanged: importing the export of every example
    project (and the test models) gives the project's outputs, and weights under the same keys
    with the same values; only a switch ModuleDict's inactive members, which the export leaves
    unused, are not in the file's model."""
    for path in ROUNDTRIP:
        if without_onnx_form(path):
            continue  # no export to import (onnx_export.py checks the refusal)
        name = os.path.splitext(os.path.basename(path))[0]
        trained = os.path.join(tmp, f"rt_{name}_trained.safetensors")
        cli("train", path, "--steps", "3", "--batch-size", "8", "--quiet", "--save", trained)
        exported = os.path.join(tmp, f"rt_{name}.onnx")
        cli("export", path, "--format", "onnx", "--out", exported, "--weights", trained)
        project = os.path.join(tmp, f"rt_{name}.nns")
        cli("import", exported, project)
        weights = os.path.join(tmp, f"rt_{name}.safetensors")
        x = input_for(path)
        want = engine_eval(tmp, path, x, trained)
        got = engine_eval(tmp, project, x, weights)
        check(got.shape == want.shape and torch.allclose(got, want, rtol=1e-5, atol=1e-6),
              f"{name}: importing its ONNX export gives its outputs")
        pt = os.path.join(tmp, "rt.pt")
        cli("convert", trained, pt)
        before = torch.load(pt)
        cli("convert", weights, pt)
        after = torch.load(pt)
        unused = set(before) - set(after)
        switch_members = inactive_switch_members(path)
        # A non-persistent buffer is no state-dict entry, but the export needs its values: it
        # comes back as a Parameter of the same name.
        check(set(after) - set(before) <= non_persistent_buffers(path) and all(
            any(k.startswith(m + ".") for m in switch_members) for k in unused),
              f"{name}: the imported weights have the project's keys "
              f"(missing {sorted(unused)}, new {sorted(set(after) - set(before))})")
        # num_batches_tracked only counts training steps; ONNX has no place for it (0 here).
        check(all(torch.equal(after[k], before[k]) for k in after
                  if k in before and not k.endswith("num_batches_tracked")),
              f"{name}: and the project's values")


def non_persistent_buffers(path):
    graph = json.load(open(path))["graph"]
    return {n["name"] for n in graph["nodes"]
            if n["type"] == "Buffer" and n.get("options", {}).get("persistent") is False}


def inactive_switch_members(path):
    """The module names of the members a switch ModuleDict of the top level does not run."""
    graph = json.load(open(path))["graph"]
    nodes = {n["id"]: n for n in graph["nodes"]}
    out = []
    for n in graph["nodes"]:
        options = n.get("options", {})
        if n["type"] == "ModuleDict" and options.get("switch"):
            active = options.get("active")
            out += [f"{n['name']}.{nodes[m]['name']}" for m in n["members"]
                    if nodes[m]["name"] != active]
    return out


def run_checks():
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, make_input, opsets, preserve in CASES:
            for opset in opsets:
                check_case(tmp, name, make, make_input, opset, preserve)
        for name, make, make_input, opsets in torchvision_models():
            for opset in opsets:
                project, weights = check_real_model(tmp, name, make, make_input, opset)
            if name in ("channel_split", "vit", "mobilenet_v3_small"):
                check_own_export(tmp, project, weights, name)
        check_training(tmp)
        check_roundtrip(tmp)
        check_pytorch_code(tmp)
        check_bad_input(tmp)


if __name__ == "__main__":
    main(run_checks, __doc__)

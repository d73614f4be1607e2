#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch code imported by `nnstudio-cli import SOURCE OUT.nns --input ...` (ctest
torch.torch_import), checked against real PyTorch:

- torchvision's resnet18, shufflenet_v2, mobilenet_v3_small and a small VisionTransformer, tests/torch/import/models.py:Containers (a Sequential, a
  ModuleList of a custom block used twice, a ModuleDict, a Parameter, a buffer, and functional
  calls) and :Encoder (nn.TransformerEncoder): the project has the module's state-dict keys, its groups are the containers (same
  kind, same names), and `forward --eval` with the written weights and with a torch.save'd
  state dict equals the module's output in eval mode (rtol 1e-4);
- the round trip: `export --format pytorch` of the example projects, then `import
  DIR/model.py:<Class>`, gives the same groups, keys and outputs; the imported model exports
  back to PyTorch code that computes the same;
- refusals write nothing and name the cause: a Python without torch, a syntax error,
  data-dependent control flow, an op NN Studio has no node for.

    /usr/bin/python3 tests/torch/torch_import.py path/to/nnstudio-cli

Skipped without torch (exit 77), except in CI, where it fails (torch_checks.py).
"""

import json
import os
import stat
import sys
import tempfile

import torch_checks
from torch_checks import HERE, ROOT, check, cli, engine_eval, load_module, main, run, torch

MODELS = os.path.join(HERE, "import", "models.py")


def imported(tmp, source, out, *inputs, code=0, python=sys.executable):
    args = ["import", source, out, "--python", python]
    for i in inputs:
        args += ["--input", i]
    return run([torch_checks.CLI, *args], code=code, timeout=120)


def groups(project):
    """(name, type, member count) of the containers of the project and its blocks (a block
    stands for all of its instances: each distinct entry once)."""
    out = []
    for graph in [project["graph"]] + [b["graph"] for b in project.get("blocks", [])]:
        for n in graph["nodes"]:
            if n["type"] in ("Sequential", "ModuleList", "ModuleDict"):
                out.append((n["name"], n["type"], len(n.get("members", []))))
    return sorted(set(out))


def torch_groups(model):
    """The same from a PyTorch module's tree (names as the parent calls them); an empty
    container (shufflenet's branch1 where it has none) holds no key and is no group."""
    out = []
    for path, m in model.named_modules():
        kind = type(m).__name__
        if isinstance(m, torch.nn.Sequential):
            kind = "Sequential"
        if kind in ("Sequential", "ModuleList", "ModuleDict") and len(list(m.children())):
            out.append((path.rsplit(".", 1)[-1], kind, len(list(m.children()))))
    return sorted(set(out))


def compare(tmp, name, model, out, x, same_groups=True):
    """The project at `out` against the PyTorch module: keys, groups, outputs."""
    model.eval()
    with open(out) as f:
        project = json.load(f)
    weights = out[:-4] + ".safetensors"
    converted = os.path.join(tmp, name + "_weights.pt")
    cli("convert", weights, converted)
    sd = torch.load(converted, weights_only=True)
    check(sorted(sd) == sorted(model.state_dict()),
          f"{name}: the weights have the module's state-dict keys ({len(sd)})")
    if same_groups:
        check(groups(project) == torch_groups(model),
              f"{name}: the groups are the module's containers {groups(project)}")
    with torch.no_grad():
        expected = model(x)
    ours = engine_eval(tmp, out, x, weights)
    check(torch.allclose(ours, expected, rtol=1e-4, atol=1e-5),
          f"{name}: forward --eval equals PyTorch's (max diff "
          f"{float((ours - expected).abs().max()):.2e})")
    # A state dict torch.save'd by PyTorch loads into the project as well.
    saved = os.path.join(tmp, name + "_saved.pt")
    torch.save(model.state_dict(), saved)
    ours = engine_eval(tmp, out, x, saved)
    check(torch.allclose(ours, expected, rtol=1e-4, atol=1e-5),
          f"{name}: the same with a torch.save'd state dict")
    return project


def check_models(tmp):
    import torchvision

    torch.manual_seed(0)
    out = os.path.join(tmp, "resnet18.nns")
    text = imported(tmp, "torchvision.models:resnet18(num_classes=10)", out, "3,64,64")
    check("wrote" in text, "resnet18: imported")
    model = torchvision.models.resnet18(num_classes=10)
    sd = load_state(tmp, out)
    model.load_state_dict(sd)  # the tracer's own random weights: compare on those
    project = compare(tmp, "resnet18", model, out, torch.randn(2, 3, 64, 64))
    blocks = [b["name"] for b in project["blocks"]]
    check(blocks == ["BasicBlock", "BasicBlock_2"],
          f"resnet18: BasicBlock as custom blocks, one per structure (with and without "
          f"downsample), the channels as arguments ({blocks})")
    args = project["blocks"][0]["arguments"]
    check(args.get("conv1_in_channels") == 64, f"resnet18: BasicBlock's arguments ({args})")
    members = {m for n in project["graph"]["nodes"] for m in n.get("members", [])}
    top = [n["name"] for n in project["graph"]["nodes"]
           if n["type"] not in ("Input", "Output") and n["id"] not in members]
    check(top[:9] == ["conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4",
                      "avgpool"], f"resnet18: the top level is the module's children ({top})")
    laid_out = {n["name"] for n in json.loads(cli("layout", os.path.join(tmp, "resnet18.nns")))
                ["nodes"]}
    children = [name for name, _ in model.named_children()]
    check(set(children) <= laid_out,
          f"resnet18: every top-level child is a node in nnstudio-cli layout ({children})")

    # shufflenet unpacks x.size() (torch 1.13 on Python 3.11 needs the tracer's Proxy.__iter__
    # fix), splits with chunk and shuffles channels with view/transpose.
    out = os.path.join(tmp, "shufflenet.nns")
    imported(tmp, "torchvision.models:shufflenet_v2_x0_5()", out, "3,64,64")
    model = torchvision.models.shufflenet_v2_x0_5()
    model.load_state_dict(load_state(tmp, out))
    compare(tmp, "shufflenet", model, out, torch.randn(2, 3, 64, 64))

    # mobilenet_v3: Hardswish and Hardsigmoid (custom blocks of F.hardswish, F.hardsigmoid),
    # squeeze-excitation's scale * x.
    out = os.path.join(tmp, "mobilenet.nns")
    imported(tmp, "torchvision.models:mobilenet_v3_small()", out, "3,64,64")
    model = torchvision.models.mobilenet_v3_small()
    model.load_state_dict(load_state(tmp, out))
    compare(tmp, "mobilenet_v3_small", model, out, torch.randn(2, 3, 64, 64))

    # A VisionTransformer: the class token expanded along the batch (x.shape[0]), attention
    # with need_weights=False, x[:, 0]; its encoder's layers are a Sequential with named
    # members, which becomes a ModuleDict called in a chain (the same keys).
    out = os.path.join(tmp, "vit.nns")
    imported(tmp, MODELS + ":small_vit", out, "3,32,32")
    model = load_module(MODELS, "import_models_vit").small_vit()
    model.load_state_dict(load_state(tmp, out))
    compare(tmp, "vit", model, out, torch.randn(2, 3, 32, 32), same_groups=False)

    out = os.path.join(tmp, "containers.nns")
    imported(tmp, MODELS + ":Containers", out, "3,8,8")
    model = load_module(MODELS, "import_models").Containers()
    model.load_state_dict(load_state(tmp, out))
    project = compare(tmp, "containers", model, out, torch.randn(3, 3, 8, 8))
    types = {n["type"] for n in project["graph"]["nodes"]}
    check({"Parameter", "Buffer", "Sequential", "ModuleList", "ModuleDict", "Sub", "Div",
           "Reshape", "Transpose", "torch.flatten", "Narrow", "Concat", "Mean"} <= types,
          f"containers: every kind of node is there ({sorted(types)})")
    check([b["name"] for b in project["blocks"]] == ["Mixer"],
          "containers: two Mixers of one structure share one block")
    encoder_out = os.path.join(tmp, "encoder.nns")
    imported(tmp, MODELS + ":Encoder", encoder_out, "5,6")
    encoder = load_module(MODELS, "import_models_enc").Encoder()
    encoder.load_state_dict(load_state(tmp, encoder_out))
    encoder_project = compare(tmp, "encoder", encoder, encoder_out, torch.randn(3, 5, 6))
    inner = [n["type"] for b in encoder_project["blocks"] for n in b["graph"]["nodes"]]
    check(inner.count("TransformerEncoderLayer") == 2 and "ModuleList" in inner,
          f"encoder: nn.TransformerEncoder is a block of its layers ({inner})")

    # Leaves by type, not by name: a subclass of nn.Linear that keeps its forward is a Linear;
    # a user's own class called LayerNorm with other math is a custom block of that math.
    own_out = os.path.join(tmp, "own.nns")
    imported(tmp, MODELS + ":OwnClasses", own_out, "6")
    own = load_module(MODELS, "import_models_own").OwnClasses()
    own.load_state_dict(load_state(tmp, own_out))
    own_project = compare(tmp, "own classes", own, own_out, torch.randn(4, 6))
    kinds = {n["name"]: n["type"] for n in own_project["graph"]["nodes"]}
    check(kinds.get("proj") == "Linear" and kinds.get("norm") != "LayerNorm"
          and [b["name"] for b in own_project["blocks"]] == [kinds.get("norm")],
          f"own classes: Projection(nn.Linear) a Linear, a user's LayerNorm a custom block ({kinds})")

    # The imported project exports back to PyTorch code that computes the same.
    folder = os.path.join(tmp, "containers_export")
    cli("export", out, "--format", "pytorch", "--out", folder, "--weights",
        out[:-4] + ".safetensors")
    again = load_module(os.path.join(folder, "model.py"), "containers_again").Containers()
    again.load_state_dict(torch.load(os.path.join(folder, "weights.pt"), weights_only=True))
    again.eval()
    x = torch.randn(3, 3, 8, 8)
    with torch.no_grad():
        check(torch.allclose(again(x), model(x), rtol=1e-5, atol=1e-6),
              "containers: exported back to PyTorch code, the same outputs")


def load_state(tmp, out):
    """The weights the import wrote beside `out`, as PyTorch reads them."""
    converted = os.path.join(tmp, os.path.basename(out) + ".pt")
    if not os.path.exists(converted):
        cli("convert", out[:-4] + ".safetensors", converted)
    return torch.load(converted, weights_only=True)


def check_round_trip(tmp):
    for name in ["spirals", "residual_mlp", "digits", "dynamic_net"]:
        path = os.path.join(ROOT, "resources", "examples", name + ".nns")
        with open(path) as f:
            original = json.load(f)
        node = next(n for n in original["graph"]["nodes"] if n["type"] == "Input")
        shape = ",".join(str(s) for s in node["options"]["shape"])
        folder = os.path.join(tmp, "export_" + name)
        cli("export", path, "--format", "pytorch", "--out", folder)
        out = os.path.join(tmp, "back_" + name + ".nns")
        imported(tmp, os.path.join(folder, "model.py") + ":" + original["name"], out, shape)
        with open(out) as f:
            back = json.load(f)
        check(groups(back) == groups(original),
              f"round trip {name}: the same groups {groups(back)}")
        model = getattr(load_module(os.path.join(folder, "model.py"), "rt_" + name),
                        original["name"])()
        torch.manual_seed(1)
        x = torch.randn(4, *[int(s) for s in shape.split(",")])
        sd = load_state(tmp, out)
        model.load_state_dict(sd)
        check(list(sd) == list(model.state_dict()) or sorted(sd) == sorted(model.state_dict()),
              f"round trip {name}: the same keys")
        model.eval()
        with torch.no_grad():
            expected = model(x)
        ours = engine_eval(tmp, out, x, out[:-4] + ".safetensors")
        check(torch.allclose(ours, expected, rtol=1e-4, atol=1e-5),
              f"round trip {name}: the same outputs")
        if name == "spirals":
            text = cli("train", out, "--steps", "3", "--weights", out[:-4] + ".safetensors")
            check("loss" in text, "round trip spirals: the imported project trains a few steps")


def refused(tmp, name, source, wanted, python=sys.executable):
    out = os.path.join(tmp, name + ".nns")
    text = imported(tmp, source, out, "4", code=1, python=python)
    check(not os.path.exists(out) and not os.path.exists(out[:-4] + ".safetensors"),
          f"refused {name}: nothing written")
    check(all(w in text for w in wanted), f"refused {name}: the message names the cause: "
          f"{text.strip().splitlines()[-1][:300] if text.strip() else ''}")


def check_refusals(tmp):
    # A Python without torch: the system's, without its site packages.
    no_torch = os.path.join(tmp, "python-without-torch")
    with open(no_torch, "w") as f:
        f.write("#!/bin/sh\nexec %s -S \"$@\"\n" % sys.executable)
    os.chmod(no_torch, os.stat(no_torch).st_mode | stat.S_IEXEC)
    refused(tmp, "no_torch", MODELS + ":Branchy", ["cannot import torch", "--python",
                                                    "NNSTUDIO_PYTHON"], python=no_torch)
    broken = os.path.join(tmp, "broken.py")
    with open(broken, "w") as f:
        f.write("import torch\n\nclass Net(torch.nn.Module:\n    pass\n")
    refused(tmp, "syntax", broken + ":Net", ["broken.py", "line 3", "syntax error"])
    refused(tmp, "branchy", MODELS + ":Branchy", ["data-dependent control flow", "Branchy",
                                                  "models.py", "if x.sum() > 0"])
    refused(tmp, "masked encoder", MODELS + ":MaskedEncoder", ["'encoder'", "TransformerEncoder",
                                                              "mask", "takes no masks"])
    refused(tmp, "unknown", MODELS + ":Unknown", ["torch.cumsum", "models.py",
                                                  "torch.cumsum(self.fc(x), 1)",
                                                  "no node for it"])


def run_checks():
    with tempfile.TemporaryDirectory() as tmp:
        check_models(tmp)
        check_round_trip(tmp)
        check_refusals(tmp)


if __name__ == "__main__":
    main(run_checks, __doc__)

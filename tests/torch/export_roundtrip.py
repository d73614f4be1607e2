#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The PyTorch code NN Studio exports, run by real PyTorch (ctest torch.export):

For every example project and the test models, `nnstudio-cli export --weights` writes
model.py and weights.pt; model.py's class, made with no arguments, has NN Studio's state-dict
keys in NN Studio's order, loads weights.pt with strict=True, and gives the output and the
gradients (of output.sum(), w.r.t. the input and every parameter) that `nnstudio-cli forward
--grad` gives, rtol 1e-5. A project that does not build, and an existing folder without
--force, are refused and write nothing.

    /usr/bin/python3 tests/torch/export_roundtrip.py path/to/nnstudio-cli

Skipped without torch (exit 77), except in CI, where it fails (torch_checks.py).
"""

import json
import os
import tempfile

from torch_checks import HERE, ROOT, check, cli, engine_forward, input_for, load_module, main, torch

EXAMPLES = os.path.join(ROOT, "resources", "examples")
PROJECTS = [os.path.join(EXAMPLES, f) for f in sorted(os.listdir(EXAMPLES)) if f.endswith(".nns")]
PROJECTS.append(os.path.join(ROOT, "tests", "cli", "spirals_mlp.nns"))
# Every kind of node at once: containers, a Sequential's LayerNorm/GELU/Dropout, Parameter and
# non-persistent Buffer nodes, Mul, Concat, MatMul, Add, a Ref, a frozen parameter.
PROJECTS.append(os.path.join(HERE, "export_models.nns"))
# RNN (relu), a 2-layer bidirectional LSTM (nn.LSTM returns (out, (h_n, c_n))), causal
# self-attention (is_causal: an attn_mask in the call), a GRU, and a Transformer encoder layer
# (after sinusoidal positions) whose output a decoder layer (gelu, norm_first; after learned
# positions) attends to.
PROJECTS.append(os.path.join(HERE, "sequence_models.nns"))
# Plugin types: model.py holds the plugins' own PyTorch twins (RMSNorm, FourierFeatures).
PROJECTS.append(os.path.join(ROOT, "tests", "cli", "plugins_net.nns"))




def check_project(tmp, path):
    name = os.path.splitext(os.path.basename(path))[0]
    project = json.load(open(path))
    weights = os.path.join(tmp, name + ".pt")
    cli("train", path, "--steps", "3", "--quiet", "--save", weights)  # trained, not as built
    state = os.path.join(tmp, name + "_state.pt")
    cli("convert", weights, state)
    folder = os.path.join(tmp, name)
    cli("export", path, "--format", "pytorch", "--out", folder, "--weights", state)
    Model = getattr(load_module(os.path.join(folder, "model.py"), "model_" + name),
                    project["name"])
    model = Model()
    sd = torch.load(os.path.join(folder, "weights.pt"), weights_only=True)
    check(list(model.state_dict().keys()) == list(sd.keys()),
          f"{name}: model.py's state_dict keys are NN Studio's, in order")
    model.load_state_dict(sd, strict=True)
    model.eval()

    x = input_for(path)
    ours = engine_forward(tmp, path, state, x, "--eval")
    # Token indices (int64) have no gradient; a floating-point input's is compared.
    floating = x.is_floating_point()
    xg = x.clone().requires_grad_(True) if floating else x
    y = model(xg)
    y.sum().backward()
    check(torch.allclose(y.detach(), ours["output"], rtol=1e-5, atol=1e-6),
          f"{name}: the output matches")
    if floating:
        check(torch.allclose(xg.grad, ours["grad.input"], rtol=1e-5, atol=1e-6),
              f"{name}: the input's gradient matches")
    else:
        check("grad.input" not in ours, f"{name}: token inputs have no gradient")
    params = dict(model.named_parameters())
    grads = [k for k, p in params.items() if p.grad is not None]
    # A gradient's entries are sums of products as large as its largest entry: summed in
    # another order (torch 2.11's CPU kernels) a small entry is off by rounding at the tensor's
    # scale, not its own (torch 2.11: in_proj_weight 1.9e-6 apart with max |grad| 21.7, one
    # float32 ulp of 21.7). So the absolute tolerance is 1e-6 of that scale (at least 1e-6).
    def grad_close(theirs, mine):
        return torch.allclose(theirs, mine, rtol=1e-5,
                              atol=1e-6 * max(1.0, mine.abs().max().item()))
    apart = [k for k in grads if not grad_close(params[k].grad, ours["grad." + k])]
    # The parameter furthest apart (relative to its gradient's size), for a failure's message.
    worst = max(apart, default=None, key=lambda k: (
        (params[k].grad - ours["grad." + k]).abs().max() / params[k].grad.abs().max().clamp_min(
            1e-30)).item())
    check(not apart and len(grads) > 0,
          f"{name}: the gradients of {len(grads)} parameters match" + (
              f" ({len(apart)} apart; the worst, {worst}: max diff "
              f"{(params[worst].grad - ours['grad.' + worst]).abs().max().item():.3e} of "
              f"max |grad| {params[worst].grad.abs().max().item():.3e})" if worst else ""))


def check_refusals(tmp):
    # A project that does not build: the builder's message, and no folder.
    bad = os.path.join(ROOT, "tests", "fixtures", "projects", "bad_shape.nns")
    folder = os.path.join(tmp, "bad")
    message = cli("export", bad, "--out", folder, code=1)
    check("the graph has 1 problem" in message and not os.path.exists(folder),
          "a project that does not build is refused and writes nothing")
    # A missing plugin: named, and nothing written.
    faulty = os.path.join(ROOT, "tests", "cli", "faulty_layer.nns")
    message = cli("export", faulty, "--out", folder, code=1)
    check("plugin 'faulty' 0.1.0 is not installed" in message and not os.path.exists(folder),
          "a project whose plugin is missing is refused and writes nothing")
    # An existing folder is kept unless --force.
    folder = os.path.join(tmp, "existing")
    os.makedirs(folder)
    open(os.path.join(folder, "keep.txt"), "w").write("mine")
    message = cli("export", PROJECTS[0], "--out", folder, code=1)
    check("exists" in message and os.listdir(folder) == ["keep.txt"],
          "an existing folder is not overwritten without --force")
    cli("export", PROJECTS[0], "--out", folder, "--force")
    check(sorted(os.listdir(folder)) == ["README.md", "data.pt", "model.py", "nnstudio_runs.py",
                                        "nnstudio_runs_schema.json", "train.py"],
          "--force replaces the folder")
    check(not [f for f in os.listdir(tmp) if f.startswith(".existing")],
          "no staging folder is left behind")


def checks():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        for path in PROJECTS:
            check_project(tmp, path)
        check_refusals(tmp)


if __name__ == "__main__":
    main(checks, __doc__)

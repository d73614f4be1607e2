#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The example plugins' state dicts through real PyTorch, both ways (ctest torch.plugins):

  1. PyTorch -> NN Studio: the twin model of tests/cli/plugins_net.nns (FourierFeatures ->
     RMSNorm -> Linear, tests/fixtures/areas/plugins.py) is saved with torch.save; the CLI's
     `forward --weights` loads it strictly and gives PyTorch's output and gradients.
  2. NN Studio -> PyTorch: the CLI trains the project a few steps and saves a checkpoint; its
     state dict (through `convert`) loads in the twin with load_state_dict(strict=True, weights_only)
     and gives the CLI's output.

    /usr/bin/python3 tests/torch/plugins_roundtrip.py path/to/nnstudio-cli

Skipped without torch (exit 77), except in CI, where it fails (torch_checks.py).
"""

import os
import runpy
import tempfile

from torch_checks import ROOT, check, cli, engine_forward, main, torch

PROJECT = os.path.join(ROOT, "tests", "cli", "plugins_net.nns")

# The twins, from the fixture area that defines them (its decorator is not needed here).
TWINS = runpy.run_path(os.path.join(ROOT, "tests", "fixtures", "areas", "plugins.py"),
                       init_globals={"torch": torch, "area": lambda name: (lambda f: f),
                                     "op_case": None})
PluginNet = TWINS["PluginNet"]


def close(a, b, rtol=1e-4, atol=1e-5):
    return a.shape == b.shape and torch.allclose(a, b, rtol=rtol, atol=atol)


def checks():
    torch.manual_seed(0)
    x = torch.randn(6, 2)
    with tempfile.TemporaryDirectory() as tmp:
        # 1. PyTorch -> NN Studio.
        net = PluginNet()
        with torch.no_grad():
            net.rms.weight.copy_(torch.rand(16) + 0.5)
        torch_pt = os.path.join(tmp, "torch.pt")
        torch.save(net.state_dict(), torch_pt)
        xg = x.clone().requires_grad_(True)
        out = net(xg)
        out.sum().backward()
        got = engine_forward(tmp, PROJECT, torch_pt, x)
        check(close(got["output"], out.detach()), "torch.save'd weights: the output matches")
        check(close(got["grad.input"], xg.grad), "the input's gradient matches")
        for name, p in net.named_parameters():
            check(close(got["grad." + name], p.grad), f"the gradient of {name} matches")
        check("grad.ff.B" not in got, "ff.B is a buffer: no gradient")

        # 2. NN Studio -> PyTorch.
        # A .pt checkpoint keeps the state dict's order (safetensors sorts its keys).
        checkpoint = os.path.join(tmp, "trained_checkpoint.pt")
        weights_pt = os.path.join(tmp, "trained.pt")
        cli("train", PROJECT, "--steps", "10", "--quiet", "--save", checkpoint)
        # torch 1.13's weights_only unpickler lacks BINFLOAT (the optimizer's lr): a full load.
        check(list(torch.load(checkpoint)["model_state_dict"].keys())
              == ["ff.B", "rms.weight", "fc.weight", "fc.bias"], "the checkpoint loads in torch")
        cli("convert", checkpoint, weights_pt)
        state = torch.load(weights_pt, weights_only=True)
        check(list(state.keys()) == ["ff.B", "rms.weight", "fc.weight", "fc.bias"],
              f"the state dict's keys are PyTorch's: {list(state.keys())}")
        twin = PluginNet()
        twin.load_state_dict(state, strict=True)
        check(not torch.equal(state["rms.weight"], torch.ones(16)), "rms.weight was trained")
        got = engine_forward(tmp, PROJECT, weights_pt, x)
        check(close(got["output"], twin(x).detach()),
              "NN Studio's trained weights give its output in PyTorch")


if __name__ == "__main__":
    main(checks, __doc__)

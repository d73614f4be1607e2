#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""`nnstudio-cli diff --json`'s numbers against PyTorch's own (ctest torch.model_diff):

Two projects on NumPy data (data.npz, no test split, so the training set is the file in its
order): B is A with fc2 renamed dense; both have a functional Add (a skip connection). Their
weights are written here, B's with dense's weight and head's bias moved. PyTorch runs the same
two models in eval mode on the first N samples, the input requiring grad, with A's loss, and
keeps every module's output and d loss / d output (the Add's too). The CLI's mean, std
(unbiased) and norm of each, the outputs' cosine, each module's weight change
||w_b - w_a|| / ||w_a||, the divergence and the losses equal PyTorch's within float32's error;
the modules come most divergent first, and the renamed layer is matched with its weights.

    /usr/bin/python3 tests/torch/model_diff.py path/to/nnstudio-cli

Skipped without torch (exit 77), except in CI, where it fails (torch_checks.py).
"""

import json
import math
import os
import tempfile

from torch_checks import check, cli, main, safetensors_bytes, torch

import numpy as np  # noqa: E402  (after torch_checks, which skips without torch)

SAMPLES, FEATURES, CLASSES = 40, 4, 3


def project(mid):
    """Input -> fc1 -> act1 (Tanh) -> MID -> skip (MID's output + act1's) -> act2 -> head."""
    nodes = [("Input", "x", {"shape": [FEATURES]}),
             ("Linear", "fc1", {"in_features": FEATURES, "out_features": 8}),
             ("Tanh", "act1", {}),
             ("Linear", mid, {"in_features": 8, "out_features": 8}),
             ("Add", "skip", {"inputs": 2}),
             ("ReLU", "act2", {}),
             ("Linear", "head", {"in_features": 8, "out_features": CLASSES}),
             ("Output", "logits", {})]
    wires = [(1, "out", 2, "in"), (2, "out", 3, "in"), (3, "out", 4, "in"), (4, "out", 5, "in0"),
             (3, "out", 5, "in1"), (5, "out", 6, "in"), (6, "out", 7, "in"), (7, "out", 8, "in")]
    return {
        "format": "nnstudio-project", "version": 1, "name": "SkipNet",
        "graph": {
            "nodes": [{"id": i + 1, "type": t, "name": n, "options": o, "x": 0, "y": 0}
                      for i, (t, n, o) in enumerate(nodes)],
            "edges": [{"from": {"node": a, "port": p}, "to": {"node": b, "port": q}}
                      for a, p, b, q in wires],
            "next_id": len(nodes) + 1},
        "blocks": [], "probes": [],
        "dataset": {"name": "files", "path": "data.npz", "test_fraction": 0, "seed": 0},
        "training": {"loss": "CrossEntropyLoss", "loss_options": {}, "optimizer": "SGD",
                     "optimizer_options": {"lr": 0.1}, "scheduler": "", "scheduler_options": {},
                     "batch_size": 16, "epochs": 1, "seed": 0, "clip_grad_norm": 0}}


class SkipNet(torch.nn.Module):
    def __init__(self, mid):
        super().__init__()
        self.mid = mid
        self.fc1 = torch.nn.Linear(FEATURES, 8)
        self.act1 = torch.nn.Tanh()
        setattr(self, mid, torch.nn.Linear(8, 8))
        self.act2 = torch.nn.ReLU()
        self.head = torch.nn.Linear(8, CLASSES)
        self.kept = {}
        for name, module in self.named_children():
            module.register_forward_hook(lambda m, i, out, name=name: self.keep(name, out))

    def keep(self, name, out):
        out.retain_grad()
        self.kept[name] = out
        return out

    def forward(self, x):
        a = self.act1(self.fc1(x))
        skip = self.keep("skip", getattr(self, self.mid)(a) + a)
        return self.head(self.act2(skip))


def torch_side(model, x, y):
    """Each module's output and its gradient (by path), and the loss, as PyTorch has them."""
    model.kept = {}
    model.eval()
    x = x.clone().requires_grad_()
    loss = torch.nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
    return {k: (v.detach().double(), v.grad.double()) for k, v in model.kept.items()}, loss.item()


def moments(t):
    return {"mean": t.mean().item(), "std": t.std().item(), "norm": t.norm().item()}


def close(ours, theirs, scale, what):
    """Within float32's error: relative 1e-5, and 1e-6 of the tensor's typical size for values
    near zero (a mean of logits' gradients is 0 up to rounding)."""
    ok = ours is not None and abs(ours - theirs) <= 1e-5 * abs(theirs) + 1e-6 * scale
    check(ok, f"{what}: {ours} vs PyTorch's {theirs}")


def check_batch(a_path, b_path, wa, wb, net_a, net_b, x, y, n):
    out = json.loads(cli("diff", a_path, b_path, "--weights-a", wa, "--weights-b", wb,
                         "--batch", str(n), "--json"))
    check(out["error"] == "" and out["batch"] == n and out["data"] == "data.npz",
          f"batch {n}: the first {n} samples of data.npz, no error ({out['error']!r})")
    check([(d["kind"], d["path_a"], d["path_b"]) for d in out["differences"]] ==
          [("renamed", "fc2", "dense")], "the one difference: fc2 renamed dense")
    kept_a, loss_a = torch_side(net_a, x[:n], y[:n])
    kept_b, loss_b = torch_side(net_b, x[:n], y[:n])
    close(out["loss_a"], loss_a, 1, f"batch {n}: loss A")
    close(out["loss_b"], loss_b, 1, f"batch {n}: loss B")

    modules = out["modules"]
    check(sorted(m["path_a"] for m in modules) == sorted(["fc1", "act1", "fc2", "skip", "act2",
                                                          "head"]),
          "every matched module and the functional Add are compared")
    divergences = [m["divergence"] for m in modules]
    check(divergences == sorted(divergences, reverse=True), "most divergent first")
    params_a = dict(net_a.named_parameters())
    params_b = dict(net_b.named_parameters())
    for m in modules:
        pa, pb = m["path_a"], m["path_b"]
        where = f"batch {n}: {pa}"
        for side, kept, path in (("a", kept_a, pa), ("b", kept_b, pb)):
            for what, index in (("output", 0), ("grad", 1)):
                t = kept[path][index]
                scale = t.norm().item() / math.sqrt(t.numel())
                for stat, value in moments(t).items():
                    close(m[f"{what}_{side}"][stat], value, scale, f"{where} {what}_{side} {stat}")
        oa, ob = kept_a[pa][0].flatten(), kept_b[pb][0].flatten()
        cosine = (oa @ ob / (oa.norm() * ob.norm())).item()
        close(m["output_cosine"], cosine, 1, f"{where} output cosine")
        names = [k for k in params_a if k.startswith(pa + ".")]
        if names:
            before = torch.cat([params_a[k].detach().double().flatten() for k in names])
            after = torch.cat([params_b[pb + k[len(pa):]].detach().double().flatten()
                               for k in names])
            change = ((after - before).norm() / before.norm()).item()
            close(m["weight_change"], change, 1e-3, f"{where} weight change")
        else:
            check(m["weight_change"] is None, f"{where}: no weights, no weight change (null)")
            change = 0
        divergence = max(min(max(1 - cosine, 0), 1), change / (1 + change))
        check(abs(m["divergence"] - divergence) <= 1e-6,
              f"{where} divergence {m['divergence']} vs {divergence}")
    unmoved = next(m for m in modules if m["path_a"] == "fc1")
    check(unmoved["output_cosine"] == 1 and unmoved["weight_change"] == 0 and
          unmoved["divergence"] == 0, "fc1, the same on both sides: cosine 1, no weight change")


def run_checks():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(SAMPLES, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, (SAMPLES,)).astype(np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(os.path.join(tmp, "data.npz"), x=x, y=y)
        a_path, b_path = os.path.join(tmp, "a.nns"), os.path.join(tmp, "b.nns")
        for path, mid in ((a_path, "fc2"), (b_path, "dense")):
            with open(path, "w") as f:
                json.dump(project(mid), f)

        torch.manual_seed(5)
        net_a = SkipNet("fc2")
        net_b = SkipNet("dense")
        with torch.no_grad():
            for (_, p), (_, q) in zip(net_a.named_parameters(), net_b.named_parameters()):
                q.copy_(p)
            net_b.dense.weight.add_(0.05 * torch.randn(8, 8))
            net_b.head.bias.add_(0.1)
        wa, wb = os.path.join(tmp, "a.safetensors"), os.path.join(tmp, "b.safetensors")
        for path, net in ((wa, net_a), (wb, net_b)):
            with open(path, "wb") as f:
                f.write(safetensors_bytes({k: v.detach() for k, v in net.state_dict().items()}))

        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        for n in (16, 5):
            check_batch(a_path, b_path, wa, wb, net_a, net_b, xt, yt, n)


if __name__ == "__main__":
    main(run_checks, __doc__)

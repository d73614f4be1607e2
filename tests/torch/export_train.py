#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The exported train.py, run by real PyTorch (ctest torch.export_train):

  1. One process, a few steps: exits 0 and writes a checkpoint that `nnstudio-cli train
     --resume` continues from.
  2. Two processes with DistributedDataParallel over gloo on localhost, started with the
     variables torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; Debian's
     torch 1.13 torchrun itself fails under Python 3.11): both exit 0, rank 0 says
     "DDP: 2 processes, gloo, cpu", and the checkpoint resumes in the CLI.
  3. The same weights and settings, 50 steps of full-batch training: the models train.py and
     `nnstudio-cli train` end with have the same loss on the training set (rtol 1e-4).
  4. The same for a regression project with SGD (Nesterov), clipping and a cosine schedule.
  5. The same for a class per position (the reverse transformer): the loss over positions.

    /usr/bin/python3 tests/torch/export_train.py path/to/nnstudio-cli

Skipped without torch (exit 77), except in CI, where it fails (torch_checks.py).
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

from torch_checks import ROOT, check, cli, load_module, main, run, torch

SPIRALS = os.path.join(ROOT, "resources", "examples", "spirals.nns")
REVERSE = os.path.join(ROOT, "resources", "examples", "reverse_transformer.nns")


def steps_run(output):
    found = re.search(r"^([0-9]+) steps", output, re.M)
    return int(found.group(1)) if found else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddp_run(train_py, args, tries=2):
    """Runs train.py as two DDP processes (rank 0 and 1) and returns them with their outputs.
    When one fails the other would wait in a collective for gloo's 30-minute timeout: it is
    stopped, and both outputs are reported. A port another process took between free_port()
    and rank 0's bind is tried again with a new one."""
    for attempt in range(tries):
        port = str(free_port())
        procs = []
        for rank in range(2):
            env = dict(os.environ, PYTHONFAULTHANDLER="1", RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            procs.append(subprocess.Popen(
                [sys.executable, train_py, *args], env=env, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True))
        # Both normally end in seconds. One that failed leaves the other waiting: it is
        # stopped at once. Two still running at the deadline are stopped with SIGABRT, which
        # makes Python's fault handler print where each one waits.
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            codes = [p.poll() for p in procs]
            if None not in codes or any(c not in (None, 0) for c in codes):
                break
            time.sleep(0.1)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGABRT)
        outputs = [p.communicate()[0] for p in procs]
        if attempt + 1 < tries and any("Address already in use" in o for o in outputs):
            continue
        return procs, outputs
    return procs, outputs


def same_training(tmp, name, project, loss_fn, train_args, what):
    """Exports `project`, trains it from one start with train.py and with nnstudio-cli (both
    with train_args), and checks the two models end at the same loss on the training set;
    returns train.py's output."""
    path = os.path.join(tmp, name + ".nns")
    json.dump(project, open(path, "w"))
    folder = os.path.join(tmp, name)
    cli("export", path, "--out", folder)
    module = load_module(os.path.join(folder, "model.py"), "model_" + name)
    Model = getattr(module, project["name"])
    torch.manual_seed(7)
    weights = os.path.join(tmp, name + "_start.pt")
    torch.save(Model().state_dict(), weights)
    theirs, ours = os.path.join(tmp, name + "_theirs.pt"), os.path.join(tmp, name + "_ours.pt")
    out = run([sys.executable, os.path.join(folder, "train.py"), "--weights", weights, "--save",
               theirs, *train_args])
    cli("train", path, "--weights", weights, "--quiet", "--save", ours, *train_args)
    data = torch.load(os.path.join(folder, "data.pt"))
    losses = []
    for ckpt in (theirs, ours):
        model = Model()
        model.load_state_dict(torch.load(ckpt)["model_state_dict"], strict=True)
        with torch.no_grad():
            losses.append(loss_fn(model(data["x_train"]), data["y_train"]).item())
    check(abs(losses[0] - losses[1]) <= 1e-4 * losses[1],
          f"{what}: train.py {losses[0]:.6f}, nnstudio-cli {losses[1]:.6f}")
    return out


def checks():
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "spirals")
        cli("export", SPIRALS, "--format", "pytorch", "--out", folder)
        train_py = os.path.join(folder, "train.py")

        # 1. One process.
        ckpt = os.path.join(tmp, "one.pt")
        out = run([sys.executable, train_py, "--steps", "5", "--save", ckpt])
        check(steps_run(out) == 5 and os.path.exists(ckpt), "one process trains 5 steps and saves")
        out = cli("train", SPIRALS, "--resume", ckpt, "--steps", "3", "--quiet")
        check(steps_run(out) == 8, "nnstudio-cli train --resume goes on from step 5 to step 8")

        # 2. Two processes, DDP over gloo.
        ckpt = os.path.join(tmp, "ddp.pt")
        procs, outputs = ddp_run(train_py, ["--steps", "5", "--save", ckpt])
        check(all(p.returncode == 0 for p in procs),
              "both DDP processes exit 0" + "".join(
                  f"\n--- rank {r} (exit {p.returncode}):\n{o}"
                  for r, (p, o) in enumerate(zip(procs, outputs)) if p.returncode))
        check("DDP: 2 processes, gloo, cpu" in outputs[0], "rank 0 says how it trains")
        check("DDP:" not in outputs[1] and "steps" not in outputs[1], "rank 1 prints nothing")
        out = cli("train", SPIRALS, "--resume", ckpt, "--steps", "3", "--quiet")
        check(steps_run(out) == 8, "the DDP checkpoint resumes in nnstudio-cli (step 5 to 8)")

        # The same checkpoint as torch 2.x writes its optimizer groups (its new keys, with
        # their defaults: fused=None, decoupled_weight_decay): it resumes too (torchrun under
        # torch 2.11 on the GPU machine found 'fused' None refused).
        newer = torch.load(ckpt)
        for group in newer["optimizer_state_dict"]["param_groups"]:
            group.update(fused=None, foreach=None, decoupled_weight_decay=False)
        ckpt2 = os.path.join(tmp, "ddp_torch2.pt")
        torch.save(newer, ckpt2)
        out = cli("train", SPIRALS, "--resume", ckpt2, "--steps", "3", "--quiet")
        check(steps_run(out) == 8, "a checkpoint with torch 2.x's optimizer keys resumes")

        # 3. Full batch, the same start: the same loss after 50 steps.
        project = json.load(open(SPIRALS))
        # Every batch is the whole training set.
        project["training"]["batch_size"] = project["dataset"]["options"]["samples"]
        same_training(tmp, "full", project, torch.nn.functional.cross_entropy,
                      ["--steps", "50"], "50 full-batch steps end at the same training loss")

        # 4. Regression with the other settings a project has: SGD with Nesterov momentum,
        # gradient clipping, a cosine schedule stepped per epoch, MSELoss. Full batch again:
        # 20 steps are 20 epochs, and the two end at the same loss.
        regression = {
            "format": "nnstudio-project", "version": 1, "name": "CurveNet",
            "graph": {"nodes": [
                {"id": 1, "type": "Input", "name": "x", "options": {"shape": [1]}},
                {"id": 2, "type": "Linear", "name": "fc1",
                 "options": {"in_features": 1, "out_features": 16}},
                {"id": 3, "type": "Tanh", "name": "act"},
                {"id": 4, "type": "Linear", "name": "fc2",
                 "options": {"in_features": 16, "out_features": 1}},
                {"id": 5, "type": "Output", "name": "y"}],
                "edges": [{"from": {"node": i, "port": "out"}, "to": {"node": i + 1, "port": "in"}}
                          for i in range(1, 5)]},
            "dataset": {"name": "curve", "options": {"samples": 200}, "test_fraction": 0.2,
                        "seed": 3},
            "training": {"loss": "MSELoss", "loss_options": {}, "optimizer": "SGD",
                         "optimizer_options": {"lr": 0.05, "momentum": 0.9, "nesterov": True},
                         "scheduler": "CosineAnnealingLR", "scheduler_options": {"T_max": 20},
                         "batch_size": 200, "epochs": 20, "seed": 0, "clip_grad_norm": 0.5}}
        out = same_training(tmp, "curve", regression, torch.nn.functional.mse_loss, [],
                            "SGD + Nesterov + clipping + cosine schedule, 20 epochs")
        check(re.search(r"^epoch  20/20  train loss [0-9.]+  test loss", out, re.M) is not None,
              "a regression project's train.py reports losses without accuracy")

        # 5. A class per position (reverse): train.py scores the N * T positions as the CLI
        # does, full batch, and the two end at the same loss.
        reverse = json.load(open(REVERSE))
        reverse["dataset"]["options"]["samples"] = 400
        reverse["training"]["batch_size"] = 320
        reverse["training"]["epochs"] = 12
        out = same_training(
            tmp, "reverse", reverse,
            lambda out, y: torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]),
                                                             y.reshape(-1)),
            [], "a class per position (reverse transformer), 12 full-batch epochs")
        check(re.search(r"^epoch  12/12  train loss [0-9.]+ accuracy [0-9.]+%  test loss [0-9.]+ "
                        r"accuracy [0-9.]+%", out, re.M) is not None,
              "a per-position project's train.py reports the accuracy over positions")


if __name__ == "__main__":
    main(checks, __doc__)

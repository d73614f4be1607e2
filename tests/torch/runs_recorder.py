#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A PyTorch training loop records into an NN Studio run store (ctest torch.runs_recorder):

  1. The exported spirals model trains 30 full-batch steps with nnstudio_runs.Recorder
     (resources/python/nnstudio_runs.py) probing its first layer.
  2. `nnstudio-cli runs STORE` lists the run with source "pytorch x1", its 30 steps.
  3. `--export 1:30` writes the last snapshot's weights; `nnstudio-cli forward` with them gives
     the trained PyTorch model's outputs; `--export 1:7` the snapshot nearest before (6).
  4. `--probes 1` writes the probe history: its step-1 activation row is the first layer's
     output with the initial weights, as PyTorch computes it; and the engine's own probe on
     the same weights and batch (`nnstudio-cli train --weights --steps 1`, 64 samples)
     records the same summaries and histograms.
  5. Two processes with DistributedDataParallel over gloo record one run (rank 0 writes):
     listed as "pytorch x2", its step losses the mean of the two processes' losses.
  6. A store of a newer schema is refused, by the CLI and by the recorder, with a message.
  7. The exported train.py records with the project's probes into runs/ beside it (the
     export carries nnstudio_runs.py); --no-record writes no store.
  8. The engine and the recorder write one store, each reading the other's rows by the one
     schema file (resources/python/nnstudio_runs_schema.json).

    /usr/bin/python3 tests/torch/runs_recorder.py path/to/nnstudio-cli
"""

import csv
import json
import math
import os
import re
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile

from torch_checks import ROOT, check, cli, engine_eval, load_module, main, run, torch

sys.path.insert(0, os.path.join(ROOT, "resources", "python"))
import nnstudio_runs  # noqa: E402

SPIRALS = os.path.join(ROOT, "resources", "examples", "spirals.nns")
STEPS = 30


def ddp_worker(folder, store, losses):
    """One process of the DDP job (RANK, WORLD_SIZE, MASTER_* in the environment): 5 steps on
    its half of the training set; writes its own losses to `losses`.RANK."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    name = json.load(open(SPIRALS))["name"]
    Model = getattr(load_module(os.path.join(folder, "model.py"), "spirals_model"), name)
    data = torch.load(os.path.join(folder, "data.pt"))
    x, y = data["x_train"][rank::2], data["y_train"][rank::2]
    torch.manual_seed(3)
    model = DistributedDataParallel(Model())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = nnstudio_runs.Recorder(store, model, probes=["fc1"] if hasattr(model.module, "fc1")
                                 else [], every=2)
    mine = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        mine.append(loss.item())
        rec.step(loss=loss, lr=0.1)
        rec.snapshot(optimizer)
    rec.epoch()
    rec.close(optimizer)
    json.dump(mine, open(f"{losses}.{rank}", "w"))
    dist.destroy_process_group()


def ddp_run(tmp, folder):
    store, losses = os.path.join(tmp, "ddp_runs"), os.path.join(tmp, "losses")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "--ddp-worker", folder, store, losses], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for p in procs:
        out = p.communicate(timeout=120)[0]
        check(p.returncode == 0, f"DDP process exits 0 ({p.returncode}): {out[-2000:]}")
    listing = cli("runs", store)
    rows = [line for line in listing.splitlines() if line.split()[:1] and
            line.split()[0].isdigit() and "snapshots'" not in line]
    check(len(rows) == 1 and " pytorch x2 " in rows[0] and " 5 " in rows[0],
          f"one run of the two processes, listed as pytorch x2 with 5 steps:\n{listing}")
    per_rank = [json.load(open(f"{losses}.{rank}")) for rank in range(2)]
    db = sqlite3.connect(os.path.join(store, "runs.db"))
    blob = b"".join(b for (b,) in db.execute(
        "SELECT steps FROM step_metrics ORDER BY first_step"))
    size = nnstudio_runs._STEP.size
    recorded = [nnstudio_runs._STEP.unpack_from(blob, at)[2] for at in range(0, len(blob), size)]
    db.close()
    mean = [(a + b) / 2 for a, b in zip(*per_rank)]
    check(len(recorded) == 5 and all(abs(r - m) <= 1e-12 for r, m in zip(recorded, mean)),
          f"the recorded losses {recorded} are the processes' means {mean}")


def one_store_both_writers(tmp, folder, Model):
    """The engine and the recorder write one store, each reading what the other wrote, by the
    one schema file (nnstudio_runs_schema.json): the engine's step records unpacked with the
    file's layout, its smoothed loss remade with the file's factor; the recorder's run added
    to the engine's store, and both listed by the CLI."""
    project = os.path.join(tmp, "both", "spirals.nns")
    os.makedirs(os.path.dirname(project))
    shutil.copy(SPIRALS, project)
    # The project's store beside it, not in the suite's NNSTUDIO_RUNS_DIR (shared by every
    # test of a project named spirals).
    os.environ["NNSTUDIO_RUNS_DIR"] = os.path.dirname(project)
    cli("train", project, "--steps", "20")
    store = os.path.join(tmp, "both", "spirals.runs")
    db = sqlite3.connect(os.path.join(store, "runs.db"))
    check(db.execute("PRAGMA user_version").fetchone()[0] == nnstudio_runs.SCHEMA_VERSION,
          "the engine's store has the schema file's version")
    blob = b"".join(b for (b,) in db.execute(
        "SELECT steps FROM step_metrics WHERE run = 1 ORDER BY first_step"))
    db.close()
    size = nnstudio_runs._STEP.size
    records = [nnstudio_runs._STEP.unpack_from(blob, at) for at in range(0, len(blob), size)]
    check([r[0] for r in records] == list(range(1, 21)),
          f"the engine's 20 step records read with the file's layout: {[r[0] for r in records]}")
    smoothed, ok = 0.0, True
    for n, (_, _, loss, recorded, _, _) in enumerate(records, start=1):
        smoothed = nnstudio_runs.SMOOTHING * smoothed + (1 - nnstudio_runs.SMOOTHING) * loss
        ok = ok and abs(smoothed / (1 - nnstudio_runs.SMOOTHING ** n) - recorded) <= 1e-12
    check(ok, "the engine's smoothed losses are the file's smoothing factor's")

    torch.manual_seed(4)
    model = Model()
    data = torch.load(os.path.join(folder, "data.pt"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = nnstudio_runs.Recorder(store, model, every=2)
    for _ in range(5):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(data["x_train"]), data["y_train"])
        loss.backward()
        optimizer.step()
        rec.step(loss=loss, lr=0.1)
    rec.close(optimizer)
    listing = cli("runs", project)
    rows = {line.split()[0]: line for line in listing.splitlines()
            if line.split()[:1] and line.split()[0].isdigit() and "snapshots'" not in line}
    check(set(rows) == {"1", "2"} and " nnstudio " in rows["1"] and " 20 " in rows["1"] and
          " pytorch x1 " in rows["2"] and " 5 " in rows["2"],
          f"the engine's run and the recorder's, one store:\n{listing}")


def train_py_records(tmp, folder):
    train_py = os.path.join(folder, "train.py")
    out = run([sys.executable, train_py, "--steps", "12"])
    store = os.path.join(folder, "runs")
    check(f"recorded run 1 in {store}" in out, f"train.py says where it recorded: {out.strip()}")
    listing = cli("runs", store)
    row = next((line for line in listing.splitlines() if line.split()[:1] == ["1"]), "")
    check(" pytorch x1 " in row and " 12 " in row,
          f"runs lists train.py's run as pytorch x1 with 12 steps:\n{listing}")
    probes = os.path.join(tmp, "train_py_probes.csv")
    cli("runs", store, "--probes", "1", "--out", probes)
    project = json.load(open(SPIRALS))
    names = {n["id"]: n["name"] for n in project["graph"]["nodes"]}
    wanted = {names[p["node"]] for p in project["probes"]}
    modules = {r["module"] for r in csv.DictReader(open(probes))}
    check(modules == wanted, f"train.py probes the project's probed modules {sorted(wanted)}: "
          f"{sorted(modules)}")
    # train --from STORE:RUN:STEP: NN Studio trains on from the PyTorch run's step 12 (with a
    # learning rate of 0, so the weights it saves are the snapshot's, bit for bit), and records
    # the branch in the project's own store as a run starting at step 12.
    # A name of its own: the suite's NNSTUDIO_RUNS_DIR gathers every project's store by name.
    project_copy = os.path.join(tmp, "branch", "branch_from_pytorch.nns")
    os.makedirs(os.path.dirname(project_copy))
    shutil.copy(SPIRALS, project_copy)
    saved = os.path.join(tmp, "branch.pt")
    said = cli("train", project_copy, "--from", f"{store}:1:12", "--steps", "2", "--lr", "0",
               "--save", saved)
    check(f"branch of run 1 of {store} from its snapshot at step 12: a pytorch run of 1 "
          "process on cpu" in said and re.search(r"^14 steps", said, re.M),
          f"train --from STORE:1:12 branches from the PyTorch run and goes on to step 14:\n{said}")
    snapshot = os.path.join(tmp, "pytorch_12.safetensors")
    cli("runs", store, "--export", "1:12", "--out", snapshot)
    cli("convert", snapshot, snapshot + ".pt")
    theirs = torch.load(snapshot + ".pt", weights_only=True)
    ours = torch.load(saved)["model_state_dict"]
    check(theirs.keys() == ours.keys() and all(torch.equal(theirs[k], ours[k]) for k in theirs),
          "the branch starts from the PyTorch run's weights (lr 0: it saves them unchanged)")
    listing = cli("runs", project_copy)
    row = next((line for line in listing.splitlines()
                if f"from PyTorch run 1 of {store} at step 12" in line), "")
    check(" 14 " in row and re.match(r"\s*[0-9]+\s+-\s", row) is not None,
          f"the project's store records the branch and where it came from:\n{listing}")
    none = os.path.join(tmp, "not_recorded")
    run([sys.executable, train_py, "--steps", "2", "--runs", none, "--no-record"])
    check(not os.path.exists(none), "train.py --no-record writes no store")


def probe_samples(store, run):
    """The probe samples of a run as both recorders write them (run_store.h's record: the
    header, the module and tensor names, the histogram's counts)."""
    db = sqlite3.connect(os.path.join(store, "runs.db"))
    out = []
    for (blob,) in db.execute(
            "SELECT samples FROM probe_samples WHERE run = ? ORDER BY first_step", (run,)):
        at = 0
        while at < len(blob):
            h = nnstudio_runs._PROBE.unpack_from(blob, at)
            at += nnstudio_runs._PROBE.size
            kind, module_len, tensor_len, bins = h[14:18]
            module = blob[at:at + module_len].decode()
            tensor = blob[at + module_len:at + module_len + tensor_len].decode()
            at += module_len + tensor_len
            counts = struct.unpack_from("<%dq" % bins, blob, at)
            at += 8 * bins
            out.append({"step": h[0], "kind": kind, "module": module, "tensor": tensor,
                        "numel": h[2], "stats": dict(zip(
                            ("mean", "std", "min", "max", "norm", "zeros"), h[4:10])),
                        "lo": h[12], "hi": h[13], "counts": counts})
    db.close()
    return out


def same_value(key, a, b):
    """Two summaries' figures for `key` agree: the same counts, else equal, both NaN, or within
    1e-12 of each other (relative)."""
    if key == "counts":
        return list(a) == list(b)
    return a == b or (a != a and b != b) or abs(a - b) <= 1e-12 * max(1.0, abs(a))


def summaries_of_a_step():
    """A sampled step's host tensors are summarized together (nnstudio_runs._summarize_host, one
    NumPy call per quantity over all of them): each summary is the one its tensor has alone,
    by the engine's definitions written out here value by value, whatever its neighbours hold
    (values not finite, none, all equal, saturated, spanning more than float64's range)."""
    bins = nnstudio_runs.HISTOGRAM_BINS
    torch.manual_seed(11)
    tensors = [torch.randn(32, 64), torch.relu(torch.randn(2048)), torch.tensor([]),
               torch.full((5,), 3.0), torch.tensor([1.0, float("nan"), -2.0, float("inf")]),
               torch.tensor([float("nan")] * 3), torch.tanh(3 * torch.randn(100)),
               torch.randn(7, dtype=torch.float64) * 1e200, torch.randn(3),
               torch.tensor([1e308, -1e308, 0.5], dtype=torch.float64)]
    saturations = [None, None, None, None, None, None, "tanh", None, None, None]
    got = nnstudio_runs._summarize_host(
        [t.reshape(-1).double().numpy().copy() for t in tensors], saturations)
    # A GPU's tensors are summarized with torch operations where they are; the same operations
    # run here on the host, and must give the same summaries.
    on_device = [nnstudio_runs._summarize_device(t.reshape(-1).double().clone(), saturation)
                 for t, saturation in zip(tensors, saturations)]
    for i, (s, d) in enumerate(zip(got, on_device)):
        differ = [k for k in s if k not in d or not same_value(k, s[k], d[k])]
        check(not differ and s.keys() == d.keys(),
              f"tensor {i}: the device path's summary is the host's (differ: {differ})")
    for i, (t, saturation, s) in enumerate(zip(tensors, saturations, got)):
        values = [v for v in t.reshape(-1).double().tolist() if math.isfinite(v)]
        n = len(values)
        check(s["numel"] == t.numel() and s["nonfinite"] == t.numel() - n,
              f"tensor {i}: {s['numel']} values, {s['nonfinite']} not finite")
        if n == 0:
            check(len(s["counts"]) == 0 and math.isnan(s["mean"]), f"tensor {i}: no summary")
            continue
        lo, hi = min(values), max(values)
        mean = sum(values) / n
        check(s["min"] == lo and s["max"] == hi and s["lo"] == lo and s["hi"] == hi and
              abs(s["mean"] - mean) <= 1e-12 * max(1.0, abs(mean)) and
              s["zero_fraction"] == sum(v == 0 for v in values) / n,
              f"tensor {i}: min {s['min']} max {s['max']} mean {s['mean']} (want {lo} {hi} "
              f"{mean})")
        if saturation == "tanh":
            check(s["saturated_fraction"] == sum(abs(v) > 0.97 for v in values) / n,
                  f"tensor {i}: saturated fraction {s['saturated_fraction']}")
        if lo == hi:
            want = [n]
        elif math.isfinite(hi - lo):
            want = [0] * bins
            for v in values:
                want[int(min((v - lo) * (bins / (hi - lo)), bins - 1))] += 1
        else:  # the extremes and 0.5, halfway
            want = [0] * bins
            want[0] = want[bins // 2] = want[bins - 1] = 1
        check(list(s["counts"]) == want, f"tensor {i}: counts {list(s['counts'])}, want {want}")


def engine_probes_agree(tmp, first):
    """The engine's probe on `first` and the PyTorch recorder's, one full-batch step from the
    same initial weights on the same 64 samples, record the same summaries and histograms of
    its output, its output's gradient and its parameters' gradients. 64 x 64 values: the
    engine summarizes a tensor of more than 4096 elements from a stratified sample (an
    estimate, engine/train/probes.h), the recorder always from every element."""
    folder = os.path.join(tmp, "probes")
    os.makedirs(folder)
    # A name of its own: the suite's NNSTUDIO_RUNS_DIR gathers every project's store by name.
    project = os.path.join(folder, "probes_vs_pytorch.nns")
    spirals = json.load(open(SPIRALS))
    spirals["dataset"]["options"]["samples"] = 80  # 64 to train on
    json.dump(spirals, open(project, "w"))
    code = os.path.join(folder, "code")
    cli("export", project, "--format", "pytorch", "--out", code)
    Model = getattr(load_module(os.path.join(code, "model.py"), "probes_model"), spirals["name"])
    data = torch.load(os.path.join(code, "data.pt"))
    x, y = data["x_train"], data["y_train"]
    torch.manual_seed(5)
    model = Model()
    weights = os.path.join(folder, "initial.safetensors")
    nnstudio_runs.save_safetensors(model.state_dict(), weights)
    store = os.path.join(folder, "pytorch_runs")
    rec = nnstudio_runs.Recorder(store, model, probes=[first], every=10, max_overhead=1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    rec.step(loss=loss)
    rec.close(optimizer)
    cli("train", project, "--weights", weights, "--steps", "1", "--batch-size", str(len(x)),
        "--probe", first, "--probe-budget", "0", "--quiet")
    elsewhere = os.environ.get("NNSTUDIO_RUNS_DIR")
    engine_store = os.path.join(elsewhere or folder, "probes_vs_pytorch.runs")
    db = sqlite3.connect(os.path.join(engine_store, "runs.db"))
    run_id = db.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    db.close()

    def at_step_1(samples):
        return {(p["kind"], p["tensor"]): p for p in samples
                if p["step"] == 1 and p["module"] == first}
    ours = at_step_1(probe_samples(engine_store, run_id))
    theirs = at_step_1(probe_samples(store, 1))
    wanted = {(0, "output"), (1, "output"), (3, "weight"), (3, "bias")}
    check(wanted <= set(ours) and wanted <= set(theirs),
          f"both recorders sampled {first} at step 1: {sorted(ours)} and {sorted(theirs)}")
    for key in sorted(wanted & set(ours) & set(theirs)):
        a, b = ours[key], theirs[key]
        scale = max(abs(b["stats"]["min"]), abs(b["stats"]["max"]), 1e-12)
        close = all(abs(a["stats"][k] - v) <= 1e-5 * max(scale, abs(v))
                    for k, v in b["stats"].items())
        check(close and a["numel"] == b["numel"],
              f"{first} {key}: the engine's summary {a['stats']} is the recorder's {b['stats']}")
        moved = sum(abs(p - q) for p, q in zip(a["counts"], b["counts"])) // 2
        check(len(a["counts"]) == len(b["counts"]) and
              abs(a["lo"] - b["lo"]) <= 1e-5 * scale and abs(a["hi"] - b["hi"]) <= 1e-5 * scale and
              sum(a["counts"]) == sum(b["counts"]) and moved <= 2,
              f"{first} {key}: the same histogram ({len(a['counts'])} bins over "
              f"[{a['lo']:.6g}, {a['hi']:.6g}] and [{b['lo']:.6g}, {b['hi']:.6g}]; {moved} of "
              f"{a['numel']} values in a neighbouring bin)")


def checks():
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "spirals")
        cli("export", SPIRALS, "--format", "pytorch", "--out", folder)
        name = json.load(open(SPIRALS))["name"]
        Model = getattr(load_module(os.path.join(folder, "model.py"), "spirals_model"), name)
        data = torch.load(os.path.join(folder, "data.pt"))
        x, y = data["x_train"], data["y_train"]
        torch.manual_seed(3)
        model = Model()
        first = next(n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear))
        with torch.no_grad():
            seen = {}
            handle = dict(model.named_modules())[first].register_forward_hook(
                lambda m, i, o: seen.setdefault("output", o.detach().clone()))
            model(x)
            handle.remove()

        store = os.path.join(tmp, "runs")
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        # The whole time for the probes: every 10th step is sampled, none skipped.
        rec = nnstudio_runs.Recorder(store, model, probes=[first], every=10, max_overhead=1)
        for step in range(STEPS):
            optimizer.zero_grad()
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
            loss.backward()
            optimizer.step()
            rec.step(loss=loss, accuracy=(out.argmax(1) == y).float().mean(), lr=0.01)
            rec.snapshot(optimizer)
            if (step + 1) % 10 == 0:
                with torch.no_grad():
                    rec.epoch(test_loss=torch.nn.functional.cross_entropy(
                        model(data["x_test"]), data["y_test"]))
        rec.close(optimizer)

        listing = cli("runs", store)
        row = next((line for line in listing.splitlines() if line.split()[:1] == ["1"]), "")
        check(" pytorch x1 " in row and f" {STEPS} " in row,
              f"runs STORE lists the run as pytorch x1 with {STEPS} steps:\n{listing}")

        weights = os.path.join(tmp, "w.safetensors")
        said = cli("runs", store, "--export", f"1:{STEPS}", "--out", weights)
        check(f"at step {STEPS}" in said, f"--export 1:{STEPS}: {said.strip()}")
        with torch.no_grad():
            expected = model(x[:16])
        got = engine_eval(tmp, SPIRALS, x[:16], weights)
        check(torch.allclose(got, expected, rtol=1e-5, atol=1e-6),
              "the exported snapshot in nnstudio-cli forward gives PyTorch's outputs "
              f"(max diff {(got - expected).abs().max().item():.3g})")
        said = cli("runs", store, "--export", "1:7", "--out", os.path.join(tmp, "w6.safetensors"))
        check("at step 6 (the snapshot nearest" in said,
              f"--export 1:7 takes the log-spaced schedule's step 6: {said.strip()}")

        probes = os.path.join(tmp, "p.csv")
        cli("runs", store, "--probes", "1", "--out", probes)
        rows = list(csv.DictReader(open(probes)))
        kinds = {(r["kind"], r["tensor"]) for r in rows if r["module"] == first}
        check({("activation", "output"), ("grad_output", "output"), ("param_grad", "weight"),
               ("param_grad", "bias")} <= kinds, f"the probe history has {sorted(kinds)}")
        check(sorted({int(r["step"]) for r in rows}) == [1, 10, 20, 30],
              "probes sampled at steps 1, 10, 20, 30: "
              f"{sorted({int(r['step']) for r in rows})}")
        first_act = next(r for r in rows if r["step"] == "1" and r["kind"] == "activation")
        o = seen["output"].double()
        for column, value in (("mean", o.mean()), ("std", o.std()), ("max", o.max()),
                              ("norm", o.norm()), ("zeros", (o == 0).double().mean())):
            check(abs(float(first_act[column]) - value.item()) <= 1e-6 * max(1, abs(value.item())),
                  f"step 1 activation {column} {first_act[column]} is PyTorch's {value.item():.9g}")

        summaries_of_a_step()
        engine_probes_agree(tmp, first)
        ddp_run(tmp, folder)
        runs_dir = os.environ.get("NNSTUDIO_RUNS_DIR")
        try:
            one_store_both_writers(tmp, folder, Model)
        finally:
            os.environ.pop("NNSTUDIO_RUNS_DIR", None)
            if runs_dir is not None:
                os.environ["NNSTUDIO_RUNS_DIR"] = runs_dir
        train_py_records(tmp, folder)

        # A store a newer NN Studio wrote: refused by both, with a message, and left as it was.
        db = sqlite3.connect(os.path.join(store, "runs.db"))
        db.execute("PRAGMA user_version=99")
        db.close()
        said = cli("runs", store, code=1)
        check("newer NN Studio (schema 99" in said and "damaged" not in said,
              f"runs refuses schema 99: {said.strip()}")
        try:
            nnstudio_runs.Recorder(store, model)
            check(False, "the recorder refuses schema 99")
        except nnstudio_runs.RunStoreError as e:
            check("newer NN Studio (schema 99" in str(e), f"the recorder refuses schema 99: {e}")
        db = sqlite3.connect(os.path.join(store, "runs.db"))
        check(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1 and
              db.execute("PRAGMA user_version").fetchone()[0] == 99,
              "the refused store is left as it was")
        db.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ddp-worker"]:
        ddp_worker(*sys.argv[2:5])
    else:
        main(checks, __doc__)

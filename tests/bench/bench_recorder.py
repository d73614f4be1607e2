#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""What recording costs a PyTorch training loop (issue 30's target: at most 3% of train.py's
step time on the spirals MLP with the example's probes), and what the probes record in a short
two-process run (issue 40's: at least 5 sampled steps in 60, within the 3% budget). Not part of
ctest.

The spirals example is exported as PyTorch code (`nnstudio-cli export --format pytorch`); its
train.py runs STEPS steps with the recorder (nnstudio_runs.py into a fresh runs/ folder) and
with --no-record, alternately, ROUNDS times each, in one process each; the loop's own time
(train.py prints it) is compared, the medians and their ratio printed. Then ROUNDS runs of
`train.py --steps 60` under DDP (two processes): the sampled steps each
run's probe history holds (`nnstudio-cli runs --probes`) and the probes' own measure of their
share of the training time (the recorder's overhead(), which train.py prints).

    /usr/bin/python3 tests/bench/bench_recorder.py path/to/nnstudio-cli [STEPS] [ROUNDS]
"""
import csv
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def loop_ms(folder, record, steps):
    """train.py's milliseconds a step for one run."""
    runs = os.path.join(folder, "runs")
    shutil.rmtree(runs, ignore_errors=True)
    args = [sys.executable, os.path.join(folder, "train.py"), "--steps", str(steps)]
    args += ["--runs", runs] if record else ["--no-record"]
    out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=folder).stdout
    return float(re.search(r"\(([0-9.]+) ms a step\)", out).group(1))


def ddp_probes(cli, folder, steps=60):
    """One two-process run of train.py, launched as torchrun would (RANK, WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT, and OMP_NUM_THREADS=1 unless set, so that the processes do not
    oversubscribe the cores; Debian's torch 1.13 torchrun fails on Python 3.11): (distinct
    sampled steps per probed module, the probes' measured share of the training time in %,
    train.py's ms a step)."""
    runs = os.path.join(folder, "runs")
    shutil.rmtree(runs, ignore_errors=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env.setdefault("OMP_NUM_THREADS", "1")
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(folder, "train.py"), "--steps", str(steps), "--runs",
             runs], env=env, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True))
    out = procs[0].communicate()[0]
    procs[1].communicate()
    if any(p.returncode for p in procs):
        raise SystemExit(f"train.py under DDP failed: {out}")
    share = float(re.search(r"sampled steps, ([0-9.]+)% of the training time", out).group(1))
    ms = float(re.search(r"\(([0-9.]+) ms a step\)", out).group(1))
    table = os.path.join(folder, "p.csv")
    subprocess.run([cli, "runs", runs, "--probes", "1", "--out", table], check=True,
                   capture_output=True)
    steps_of = {}
    for row in csv.DictReader(open(table)):
        steps_of.setdefault(row["module"], set()).add(int(row["step"]))
    return {m: len(s) for m, s in steps_of.items()}, share, ms


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    cli = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "spirals")
        subprocess.run([cli, "export", os.path.join(ROOT, "resources", "examples", "spirals.nns"),
                        "--format", "pytorch", "--out", folder], check=True, capture_output=True)
        times = {True: [], False: []}
        for _ in range(rounds):
            for record in (False, True):
                times[record].append(loop_ms(folder, record, steps))
        off, on = statistics.median(times[False]), statistics.median(times[True])
        print(f"spirals train.py, {steps} steps, median of {rounds} (ms a step)")
        print(f"  --no-record   {off:.4f}   {times[False]}")
        print(f"  recording     {on:.4f}   {times[True]}")
        print(f"  overhead      {100 * (on / off - 1):+.1f}%  (target at most +3%)")
        print("spirals train.py under DDP, 2 processes, 60 steps (target: at least 5 sampled "
              "steps, the probes within their 3% budget)")
        for _ in range(rounds):
            counts, share, ms = ddp_probes(cli, folder)
            print(f"  sampled steps per module {min(counts.values()) if counts else 0}"
                  f"  {counts}  probes {share:.1f}% of the training time  ({ms:.3f} ms a step)")


if __name__ == "__main__":
    main()

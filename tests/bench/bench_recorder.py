#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""What recording costs a PyTorch training loop (issue 30's target: at most 3% of train.py's
step time on the spirals MLP with the example's probes). Not part of ctest.

The spirals example is exported as PyTorch code (`nnstudio-cli export --format pytorch`); its
train.py runs STEPS steps with the recorder (nnstudio_runs.py into a fresh runs/ folder) and
with --no-record, alternately, ROUNDS times each, in one process each; the loop's own time
(train.py prints it) is compared, the medians and their ratio printed.

    /usr/bin/python3 tests/bench/bench_recorder.py path/to/nnstudio-cli [STEPS] [ROUNDS]
"""
import os
import re
import shutil
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


if __name__ == "__main__":
    main()

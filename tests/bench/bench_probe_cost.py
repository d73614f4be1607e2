#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a project's probes cost, measured from outside: the project trained with its own probes
against a copy without them, interleaved, N runs each, by the training time nnstudio-cli train
prints. Not a test (it times), a benchmark:

    tests/bench/bench_probe_cost.py build/release/app/nnstudio-cli \\
        resources/examples/spirals.nns --steps 3000 --runs 40

prints the median and best training time of each side and their ratios, and the probes' own
figure (what `train` prints as "probes: X% of the training time") from the last run.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile


def train(cli, project, steps):
    out = subprocess.run([cli, "train", project, "--steps", str(steps), "--no-record"],
                         capture_output=True, text=True, check=True).stdout
    rate = re.search(r"^%d steps, (\d+) steps/s$" % steps, out, re.M)
    if not rate:
        raise SystemExit("no 'N steps, R steps/s' line in train's output:\n" + out)
    own = re.search(r"^probes: ([0-9.]+%) of the training time", out, re.M)
    return steps / float(rate.group(1)), own.group(1) if own else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cli")
    ap.add_argument("project")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    with open(a.project) as f:
        project = json.load(f)
    if not project.get("probes"):
        raise SystemExit(a.project + " has no probes")
    with tempfile.TemporaryDirectory() as tmp:
        with_probes = os.path.join(tmp, "with.nns")
        without = os.path.join(tmp, "without.nns")
        with open(with_probes, "w") as f:
            json.dump(project, f)
        with open(without, "w") as f:
            json.dump(dict(project, probes=[]), f)
        times = {"without": [], "with": []}
        own = None
        for _ in range(a.runs):
            times["without"].append(train(a.cli, without, a.steps)[0])
            seconds, own = train(a.cli, with_probes, a.steps)
            times["with"].append(seconds)
    base_median = statistics.median(times["without"])
    base_best = min(times["without"])
    for side in ("without", "with"):
        median, best = statistics.median(times[side]), min(times[side])
        print("%-8s probes: median %7.1f ms, best %7.1f ms (%+.1f%%, %+.1f%%)"
              % (side, median * 1e3, best * 1e3, (median / base_median - 1) * 100,
                 (best / base_best - 1) * 100))
    print("the probes' own figure, last run: %s" % own)


if __name__ == "__main__":
    main()

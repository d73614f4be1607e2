#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""One shipped example trained as a user trains it (ctest product.cli.*, issue 40):

  1. `nnstudio-cli train PROJECT` on a copy of the project with nothing overridden (its own
     data, epochs, probes and budgets), the store beside the copy.
  2. The test figure it prints is the one the README promises, less an honest margin:
     --accuracy MIN (percent), --sequences MIN (percent of whole sequences right) or
     --loss MAX (the test loss).
  3. For a project with probes: `nnstudio-cli runs PROJECT --probes RUN --out probes.csv`
     holds at least 10 distinct sampled steps of every probed module, the last of them in the
     run's final tenth (the probes recorded all along, not only at the start).

    /usr/bin/python3 tests/cli/example_product.py CLI PROJECT WORK --accuracy 98

WORK is emptied first. Every failed check is reported, then the exit code is 1.
"""

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time

MIN_SAMPLED_STEPS = 10
LAST_SAMPLE_AFTER = 0.9  # of the run's steps


def run(cli, args):
    """Runs the CLI with the store beside the project (not in the suite's NNSTUDIO_RUNS_DIR)."""
    env = dict(os.environ)
    env.pop("NNSTUDIO_RUNS_DIR", None)
    p = subprocess.run([cli] + args, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"nnstudio-cli {' '.join(args)}: exit code {p.returncode}\n{p.stdout}{p.stderr}")
    return p.stdout


def probed_modules(project):
    """The qualified module name of each probed node, as named_modules() has it: a member of a
    Sequential or ModuleList by its index ("features.0"), of a ModuleDict by its name."""
    nodes = {n["id"]: n for n in project["graph"]["nodes"]}
    parent = {}
    for group in nodes.values():
        for index, member in enumerate(group.get("members") or []):
            key = nodes[member]["name"] if group["type"] == "ModuleDict" else str(index)
            parent[member] = (group["id"], key)

    def name(node):
        if node not in parent:
            return nodes[node]["name"]
        group, key = parent[node]
        return name(group) + "." + key

    return [name(p["node"]) for p in project["probes"]]


def check_result(out, args, problems):
    """The printed test figure against the promise."""
    test = re.search(r"^test: loss (\S+)(?: accuracy (\S+)%)?(?: sequences (\S+)%)?$", out, re.M)
    if not test:
        problems.append("no 'test: loss ...' line in the output")
        return
    loss, accuracy, sequences = test.groups()
    if args.loss is not None:
        shown, ok, bound = loss, float(loss) <= args.loss, f"<= {args.loss}"
    else:
        shown = accuracy if args.accuracy is not None else sequences
        least = args.accuracy if args.accuracy is not None else args.sequences
        ok, bound = shown is not None and float(shown) >= least, f">= {least}%"
    if args.sequences is not None and not re.search(r"^test accuracy per position: ", out, re.M):
        problems.append("no 'test accuracy per position: ...' line after the sequences'")
    print(f"{test.group(0)}  (promised {bound})")
    if not ok:
        problems.append(f"the test figure is {shown}, the README promises {bound}: {test.group(0)}")


def check_probes(cli, project_path, modules, run_id, steps, work, problems):
    """The probe history `runs --probes` exports: enough sampled steps of every probed module,
    spread to the run's end."""
    csv_path = os.path.join(work, "probes.csv")
    run(cli, ["runs", project_path, "--probes", str(run_id), "--out", csv_path])
    sampled = {m: set() for m in modules}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            if row["module"] in sampled:
                sampled[row["module"]].add(int(row["step"]))
    for module, taken in sampled.items():
        last = max(taken, default=0)
        print(f"probe {module}: {len(taken)} sampled steps of {steps}, the last at step {last}")
        if len(taken) < MIN_SAMPLED_STEPS:
            problems.append(f"probe {module}: {len(taken)} sampled steps of the run's {steps} "
                            f"(steps {sorted(taken)}), at least {MIN_SAMPLED_STEPS} expected")
        if last <= LAST_SAMPLE_AFTER * steps:
            problems.append(f"probe {module}: the last sampled step is {last} of {steps}, "
                            f"none in the run's final tenth")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cli")
    parser.add_argument("project")
    parser.add_argument("work")
    promise = parser.add_mutually_exclusive_group(required=True)
    promise.add_argument("--accuracy", type=float)
    promise.add_argument("--sequences", type=float)
    promise.add_argument("--loss", type=float)
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    project_path = os.path.join(args.work, os.path.basename(args.project))
    shutil.copyfile(args.project, project_path)
    with open(project_path) as f:
        project = json.load(f)

    began = time.monotonic()
    out = run(args.cli, ["train", project_path])
    print(f"trained in {time.monotonic() - began:.1f} s")
    problems = []
    check_result(out, args, problems)
    steps = re.search(r"^(\d+) steps, ", out, re.M)
    recorded = re.search(r"^recorded as run (\d+) in ", out, re.M)
    if not steps or not recorded:
        problems.append("no 'N steps, ...' or 'recorded as run N' line in the output")
    elif project["probes"]:
        check_probes(args.cli, project_path, probed_modules(project), int(recorded.group(1)),
                     int(steps.group(1)), args.work, problems)
    if problems:
        print("\n".join(["FAILED:"] + problems + ["", "nnstudio-cli train printed:", out]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

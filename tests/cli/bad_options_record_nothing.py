#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""nnstudio-cli train refuses a bad option before a run begins in the store: a copy of a
project trained with each bad option exits with the option's error, and `runs` then lists
none.

    bad_options_record_nothing.py NNSTUDIO_CLI PROJECT WORK_DIR
"""
import os
import shutil
import subprocess
import sys

cli, project, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
copy = os.path.join(work, os.path.basename(project))
shutil.copy(project, copy)
# The copy's store in WORK_DIR, whatever NNSTUDIO_RUNS_DIR the suite gives the other tests (a
# store there is shared by every test of a project of the same name).
env = dict(os.environ, NNSTUDIO_RUNS_DIR=work)

cases = [
    (["--probe-budget", "2"], 2, "--probe-budget"),
    (["--snapshot-every", "0"], 2, "--snapshot-every"),
    (["--cuda-graphs", "maybe"], 2, "--cuda-graphs expects one of on, off, got 'maybe'"),
    (["--probe", "fc9"], 1, "no module named 'fc9'"),
]
for options, code, message in cases:
    done = subprocess.run([cli, "train", copy, "--steps", "5", *options],
                          capture_output=True, text=True, env=env)
    if done.returncode != code or message not in done.stderr:
        sys.exit("train %s: expected exit %d naming %r, got %d:\n%s%s"
                 % (" ".join(options), code, message, done.returncode, done.stdout, done.stderr))

listed = subprocess.run([cli, "runs", copy], capture_output=True, text=True, check=True,
                        env=env).stdout
if not listed.lower().startswith("no runs recorded"):
    sys.exit("a refused train recorded a run:\n" + listed)
print("ok: %d bad options refused, no run recorded" % len(cases))

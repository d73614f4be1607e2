#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Writes this folder's seed for the run store's fuzz target (tests/fuzz/fuzz_run_store.cpp):
# the database of a store nnstudio-cli records for the spirals example, 3 steps with its first
# probe (every step sampled) and snapshots, and one hostile row whose file is outside the
# folder; small pages keep it under libFuzzer's 64 KiB input limit.
#
#   tests/fuzz/corpus/run_store/make_seeds.sh build/release/app/nnstudio-cli
set -euo pipefail
cli=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$root/resources/examples/spirals.nns" "$work/spirals.nns" <<'PY'
import json, sys
project = json.load(open(sys.argv[1]))
project["probes"] = project["probes"][:1]
project["probes"][0]["every"], project["probes"][0]["max_overhead"] = 1, 0
json.dump(project, open(sys.argv[2], "w"))
PY
"$cli" train "$work/spirals.nns" --steps 3 --quiet >/dev/null
python3 - "$work/spirals.runs/runs.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE snapshots SET weights = '../../../../etc/passwd' WHERE step = 1")
db.commit()
db.execute("PRAGMA journal_mode=DELETE")
db.execute("PRAGMA page_size=512")
db.execute("VACUUM")
db.close()
PY
cp "$work/spirals.runs/runs.db" "$here/spirals.db"

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The exported train.py under the real torchrun (the GPU machine's PyTorch 2.11): two processes
# with DistributedDataParallel, a few steps, both exit 0 and rank 0 names the two processes.
#   tests/gpu/torchrun_check.sh path/to/nnstudio-cli [cpu|cuda]
set -euo pipefail
cli=$1
device=${2:-cpu}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cli" export "$root/resources/examples/spirals.nns" --format pytorch --out "$tmp/spirals"
cd "$tmp/spirals"
log=$tmp/torchrun.log
if torchrun --standalone --nproc_per_node 2 train.py --steps 5 --device "$device" \
    --save "$tmp/ckpt.pt" >"$log" 2>&1; then
  cat "$log"
  if grep -q "DDP: 2 processes" "$log"; then
    echo "ok   torchrun --nproc_per_node 2 train.py ($device): two DDP processes, exit 0"
  else
    echo "FAIL torchrun: rank 0 did not report 2 DDP processes"
    exit 1
  fi
else
  cat "$log"
  echo "FAIL torchrun --nproc_per_node 2 train.py ($device) failed"
  exit 1
fi
# The checkpoint resumes in the CLI.
if resumed=$("$cli" train "$root/resources/examples/spirals.nns" --resume "$tmp/ckpt.pt" \
    --steps 2 --no-record --quiet 2>&1); then
  echo "ok   the DDP checkpoint resumes in nnstudio-cli"
else
  echo "$resumed"
  echo "FAIL the DDP checkpoint does not resume in nnstudio-cli: $(tail -1 <<<"$resumed")"
  # What the checkpoint holds, for the message above.
  python3 -c 'import sys, torch; c = torch.load(sys.argv[1], weights_only=False)
print({k: (type(v).__name__ if not isinstance(v, dict) else sorted(v)) for k, v in c.items()})
print(c["optimizer_state_dict"]["param_groups"])' "$tmp/ckpt.pt" || true
  exit 1
fi

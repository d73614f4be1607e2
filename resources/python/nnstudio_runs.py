# SPDX-License-Identifier: GPL-3.0-or-later
"""Record a PyTorch training run into an NN Studio run store.

    import nnstudio_runs
    rec = nnstudio_runs.Recorder("runs", model, probes=["fc1", "encoder.0"], every=10)
    for epoch in ...:
        for x, y in loader:
            ...; loss.backward(); optimizer.step()
            rec.step(loss=loss.item(), accuracy=acc, lr=optimizer.param_groups[0]["lr"])
            rec.snapshot(optimizer)          # writes only on NN Studio's schedule
        rec.epoch(test_loss=..., test_accuracy=...)
    rec.close()

`nnstudio-cli runs runs/` lists the run (source pytorch), `--export RUN:STEP --out w.safetensors`
writes a snapshot's weights, `--probes RUN --out p.csv` what the probes saw.

The store is the one NN Studio's engine keeps (engine/train/run_store.h): SQLite in WAL mode,
the schema of nnstudio_runs_schema.json (beside this file), step metrics and probe samples packed
into BLOBs, snapshots as .safetensors (the weights) and .pt (the optimizer's state) files written
atomically before their row. Only the standard library, torch and NumPy (which torch needs) are
used.

Under DDP (torch.distributed initialized) every process calls the same methods: the step
metrics are averaged over the processes (an all-reduce), and only rank 0 hooks the probes and
writes.
"""

import json
import math
import os
import socket
import sqlite3
import struct
import time

import numpy
import torch

# The store's schema, record layouts, snapshot schedule and the constants shared with the
# engine: one file both read (the engine has it compiled in), beside this one wherever it goes.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "nnstudio_runs_schema.json"), encoding="utf-8") as _f:
    _SPEC = json.load(_f)
SCHEMA_VERSION = _SPEC["version"]
_RECORDER = _SPEC["recorder"]
HISTOGRAM_BINS = _RECORDER["histogram_bins"]
SMOOTHING = _RECORDER["smoothing"]
WRITE_EVERY_SECONDS = _RECORDER["write_every_seconds"]  # a watcher sees the run grow
# The probes' floor under their budget and the cap on one sample's charge.
FLOOR_EARLY_STEPS = _RECORDER["floor_early_steps"]
FLOOR_GAP = _RECORDER["floor_gap"]
OUTLIER_FACTOR = _RECORDER["outlier_factor"]
BUDGET_AIM = _RECORDER["budget_aim"]
_STEP = struct.Struct(_SPEC["records"]["step"]["format"])
_PROBE = struct.Struct(_SPEC["records"]["probe"]["format"])
assert _STEP.size == _SPEC["records"]["step"]["size"]
assert _PROBE.size == _SPEC["records"]["probe"]["size"]
_KINDS = _SPEC["records"]["probe"]["kinds"]
_SAFETENSORS_DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}
NAN = float("nan")


class RunStoreError(RuntimeError):
    pass


def snapshot_due(step):
    """NN Studio's snapshot schedule (the schema file's): 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20,
    25, 30, 40, 50, 60, 80, 100, 120, ... (ten a decade, dense early)."""
    schedule = _SPEC["snapshot_schedule"]
    if step < 1:
        return False
    if step < 10:
        return step in schedule["below_ten"]
    while step >= 100 and step % 10 == 0:
        step //= 10
    return step in schedule["each_decade"]


def _distributed():
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def _saturation(module):
    nn = torch.nn
    if isinstance(module, (nn.Tanh, nn.Hardtanh)):
        return "tanh"
    if isinstance(module, (nn.Sigmoid, nn.Hardsigmoid)):
        return "sigmoid"
    return None


def summarize(tensor, saturation=None, bins=HISTOGRAM_BINS):
    """The engine's TensorStats of a tensor (engine/train/probes.h summarize). Non-finite
    values are counted and left out of the rest; std is the unbiased one, from the sums as the
    engine computes it; the bins are the engine's ((v - lo) * bins / (hi - lo), truncated, the
    last including hi). saturation: "tanh", "sigmoid" or None (see _saturation)."""
    values = _flat_float64(tensor)
    if isinstance(values, numpy.ndarray):
        return _summarize_host([values], [saturation], bins)[0]
    return _summarize_device(values, saturation, bins)


def _flat_float64(tensor):
    """A flat float64 copy of a tensor's values, taken now (what a sample summarizes at its
    step's end must not change with an in-place operation before it): a NumPy array for a
    tensor on the host (bfloat16, which NumPy lacks, through float32), a tensor on its device
    for one on a GPU."""
    t = tensor.detach().reshape(-1)
    if t.device.type != "cpu":
        return t.to(torch.float64, copy=True)
    if t.dtype == torch.bfloat16:
        t = t.to(torch.float32)
    return t.numpy().astype(numpy.float64)


def _stats(numel, n, total, total_sq, lo, hi, zeros, saturated, counts):
    """A summary from the sums of the n finite values of numel (saturated: None when the module
    does not saturate)."""
    if n == 0:
        return {"numel": numel, "nonfinite": numel, "mean": NAN, "std": NAN, "min": NAN,
                "max": NAN, "norm": 0.0, "zero_fraction": NAN, "saturated_fraction": NAN,
                "lo": 0.0, "hi": 0.0, "counts": numpy.zeros(0, numpy.int64)}
    mean = total / n
    std = math.sqrt(max(0.0, (total_sq - total * mean) / (n - 1))) if n > 1 else NAN
    return {"numel": numel, "nonfinite": numel - n, "mean": mean, "std": std, "min": lo,
            "max": hi, "norm": math.sqrt(total_sq), "zero_fraction": zeros / n,
            "saturated_fraction": NAN if saturated is None else saturated / n, "lo": lo,
            "hi": hi, "counts": counts}


def _saturated(values, saturation):
    """How many values (a NumPy array or a tensor) are near a saturating activation's limits
    (None: the module is not one)."""
    if saturation == "tanh":
        return int((abs(values) > 0.97).sum())
    if saturation == "sigmoid":
        return int(((values < 0.03) | (values > 0.97)).sum())
    return None


def _summarize_host(arrays, saturations, bins=HISTOGRAM_BINS):
    """The summaries of flat float64 NumPy arrays, all at once. A sampled step summarizes some
    twenty tensors, and on a small model a NumPy call's dispatch costs more than its
    arithmetic: the arrays are reduced together, one call per quantity over their
    concatenation (segment reductions), their histograms counted in one bincount."""
    out = [None] * len(arrays)
    batch = [i for i, a in enumerate(arrays) if a.shape[0]]
    for i, a in enumerate(arrays):
        if not a.shape[0]:
            out[i] = _stats(0, 0, 0.0, 0.0, 0.0, 0.0, 0, None, None)
    if not batch:
        return out
    k = len(batch)
    sizes = numpy.fromiter((arrays[i].shape[0] for i in batch), numpy.int64, k)
    values = numpy.concatenate([arrays[i] for i in batch]) if k > 1 else arrays[batch[0]]
    starts = numpy.zeros(k, numpy.int64)
    numpy.cumsum(sizes[:-1], out=starts[1:])
    segment = numpy.zeros(values.shape[0], numpy.int64)  # each value's array
    segment[starts[1:]] = 1
    numpy.cumsum(segment, out=segment)
    with numpy.errstate(over="ignore", invalid="ignore"):  # such arrays are redone below
        total = numpy.add.reduceat(values, starts)
        total_sq = numpy.add.reduceat(values * values, starts)
        lo = numpy.minimum.reduceat(values, starts)
        hi = numpy.maximum.reduceat(values, starts)
        nonzero = numpy.add.reduceat(values != 0, starts, dtype=numpy.int64)
        ok = numpy.isfinite(total_sq)
        # Each value's bin in its own array's histogram, offset by (bins + 1) per array,
        # counted in one bincount. A value's offset in its histogram is at most bins (hi's, or
        # one a rounding puts there): counted in a bin of its own, then moved into the last,
        # which includes hi. An array of equal values has one bin; one with a value not finite
        # (or whose sums overflow) is redone on its own (_summarize_rare).
        spread = numpy.where(ok & (hi > lo), hi - lo, 1.0)
        at = values - numpy.where(ok, lo, 0.0)[segment]
        at *= (bins / spread)[segment]
        if not ok.all():
            at[~ok[segment]] = 0.0
        at += (numpy.arange(k) * (bins + 1.0))[segment]
        counts = numpy.bincount(at.astype(numpy.int64), minlength=k * (bins + 1))
        counts = counts.reshape(k, bins + 1)
        counts[:, bins - 1] += counts[:, bins]
    for j, i in enumerate(batch):
        n = int(sizes[j])
        if not ok[j]:
            out[i] = _summarize_rare(arrays[i], saturations[i], bins)
            continue
        a_lo, a_hi = float(lo[j]), float(hi[j])
        out[i] = _stats(n, n, float(total[j]), float(total_sq[j]), a_lo, a_hi,
                        n - int(nonzero[j]), _saturated(arrays[i], saturations[i]),
                        numpy.array([n], numpy.int64) if a_lo == a_hi else counts[j, :bins])
    return out


def _summarize_rare(values, saturation, bins):
    """The summary of a float64 NumPy array with values that are not finite, or so large that
    their sums overflow: only the finite values count, and their offsets in the histogram are
    computed in halves (exactly the same bins, without overflowing)."""
    kept = values[numpy.isfinite(values)]
    n = kept.shape[0]
    if n == 0:
        return _stats(values.shape[0], 0, 0.0, 0.0, 0.0, 0.0, 0, None, None)
    lo, hi = float(kept.min()), float(kept.max())
    if lo == hi:
        counts = numpy.array([n], numpy.int64)
    else:
        at = (kept / 2 - lo / 2) * (bins / (hi / 2 - lo / 2))
        counts = numpy.bincount(numpy.minimum(at, bins - 1).astype(numpy.int64), minlength=bins)
    return _stats(values.shape[0], n, float(kept.sum()), float(numpy.dot(kept, kept)), lo, hi,
                  n - int(numpy.count_nonzero(kept != 0)), _saturated(kept, saturation), counts)


def _summarize_device(values, saturation=None, bins=HISTOGRAM_BINS, finite=False):
    """The summary of a flat float64 tensor on its device: its sums reduced where it is, in one
    copy to the host, its histogram counted there (see _summarize_host)."""
    total, total_sq, lo, hi, zeros = torch.stack([
        values.sum(), torch.dot(values, values), *torch.aminmax(values),
        (values == 0).sum().to(torch.float64)]).tolist() if values.shape[0] else [0.0] * 5
    numel = values.shape[0]
    if not finite and not math.isfinite(total_sq):
        kept = values[torch.isfinite(values)]
        return dict(_summarize_device(kept, saturation, bins, True), numel=numel,
                    nonfinite=numel - kept.shape[0])
    if numel == 0:
        return _stats(0, 0, 0.0, 0.0, 0.0, 0.0, 0, None, None)
    if lo == hi:
        counts = numpy.array([numel], numpy.int64)
    else:  # in halves, as _summarize_rare (a float64 model's values may span more than 1e308)
        at = (values / 2 - lo / 2) * (bins / (hi / 2 - lo / 2))
        counts = torch.bincount(at.clamp(max=bins - 1).to(torch.int64), minlength=bins)
        counts = counts.cpu().numpy()
    return _stats(numel, numel, total, total_sq, lo, hi, int(zeros),
                  _saturated(values, saturation), counts)


def _update_ratio(now, before):
    """How far the optimizer's step moved a parameter: |now - before| / |now| (NaN when it did
    not move or is zero), from two _flat_float64() copies of it."""
    delta = now - before
    if isinstance(now, numpy.ndarray):
        norm, moved = math.sqrt(numpy.dot(now, now)), math.sqrt(numpy.dot(delta, delta))
    else:
        norm, moved = torch.stack([now.norm(), delta.norm()]).tolist()
    return moved / norm if norm > 0 and moved > 0 else NAN


def _pack_probe(step, interval, kind, module, tensor, stats, update_ratio=NAN):
    module_b, tensor_b = module.encode(), tensor.encode()
    counts = stats["counts"]
    return (_PROBE.pack(step, interval, stats["numel"], stats["nonfinite"], stats["mean"],
                        stats["std"], stats["min"], stats["max"], stats["norm"],
                        stats["zero_fraction"], stats["saturated_fraction"], update_ratio,
                        stats["lo"], stats["hi"], _KINDS[kind], len(module_b), len(tensor_b),
                        len(counts))
            + module_b + tensor_b + counts.astype("<i8", copy=False).tobytes())


def _write_atomically(path, write):
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save_safetensors(state_dict, path):
    """A state dict as a .safetensors file (the format's header, then the tensors' bytes)."""
    header, blobs, offset = {}, [], 0
    for name, value in state_dict.items():
        t = value.detach().cpu().contiguous()
        if t.dtype not in _SAFETENSORS_DTYPES:
            raise RunStoreError("%s: dtype %s has no safetensors name" % (name, t.dtype))
        data = t.numpy().tobytes() if t.dtype != torch.bfloat16 else \
            t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": _SAFETENSORS_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)

    def write(f):
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    _write_atomically(path, write)


class _Store:
    """The SQLite side: opens (or makes) runs.db as the engine does."""

    def __init__(self, folder):
        os.makedirs(folder, exist_ok=True)
        self.folder = folder
        path = os.path.join(folder, "runs.db")
        try:
            self.db = sqlite3.connect(path, timeout=5.0, isolation_level=None)
            if self.db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise RunStoreError("quick_check failed")
        except sqlite3.DatabaseError as e:
            raise RunStoreError("run store '%s' is damaged or not a run store: %s; move the "
                                "folder '%s' aside to start a new one" % (path, e, folder))
        if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        found = self.db.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            raise RunStoreError(
                "run store '%s' was written by a newer NN Studio (schema %d, this recorder "
                "writes %d): record into another folder, or use the nnstudio_runs.py of that "
                "NN Studio" % (path, found, SCHEMA_VERSION))
        if found < SCHEMA_VERSION:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                # Read again under the write lock: another process may have made or migrated
                # the store since, and ALTER TABLE is not idempotent (as run_store.cpp does).
                found = self.db.execute("PRAGMA user_version").fetchone()[0]
                if found >= SCHEMA_VERSION:
                    self.db.execute("COMMIT")
                    return
                # Made or migrated as the schema file says (the engine's RunStore does the same).
                for statement in _SPEC["tables"]:
                    self.db.execute(statement)
                for upgrade in _SPEC["upgrades"]:
                    if found < upgrade["to"]:
                        for statement in upgrade["statements"]:
                            self.db.execute(statement)
                self.db.execute("PRAGMA user_version=%d" % SCHEMA_VERSION)
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def transaction(self, statements):
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for sql, args in statements:
                self.db.execute(sql, args)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise


def _nan_to_none(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


class _RunDelay:
    """The seconds the calling thread has waited, runnable, for a CPU: Linux's run delay, the
    second field of /proc/thread-self/schedstat, read by the thread that opens it (the first
    call's). Not its CPU time: a DDP process's training thread waits for the others in every
    step (gloo's collectives), and that wait is training time, not time the system took
    away. 0 where the system does not say (the recorder then counts every step whole)."""

    def __init__(self):
        self._fd = None  # None: not opened yet; -1: not available

    def seconds(self):
        if self._fd is None:
            try:
                self._fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            except (OSError, AttributeError):
                self._fd = -1
        if self._fd < 0:
            return 0.0
        try:
            return int(os.pread(self._fd, 128, 0).split()[1]) * 1e-9
        except (OSError, IndexError, ValueError):
            return 0.0

    def close(self):
        if self._fd is not None and self._fd >= 0:
            os.close(self._fd)
        self._fd = -1


class Recorder:
    """Records one run: its step and epoch metrics, probe samples every `every` steps of the
    modules named in `probes` (names as in model.named_modules()), snapshots on NN Studio's
    schedule. Every process of a DDP job makes one and calls the same methods."""

    def __init__(self, folder, model, probes=(), every=10, name="", settings=None,
                 max_overhead=0.03):
        if every < 1:
            raise ValueError("every must be at least 1 (a probe sample every that many steps)")
        if not 0 <= max_overhead <= 1:
            raise ValueError("max_overhead is a fraction of the training time, in [0, 1]")
        self.rank, self.processes = _distributed()
        # DistributedDataParallel's module is the model: its names have no "module." prefix.
        self.model = model.module if isinstance(
            model, torch.nn.parallel.DistributedDataParallel) else model
        self.every = every
        # As the engine's probes (engine/train/probes.h): a picked step is skipped while the
        # probes have cost more than this fraction of the training time so far, never below the
        # floor (a third of the picks over the first FLOOR_EARLY_STEPS steps, then no gap of
        # FLOOR_GAP picks), aiming at BUDGET_AIM of it; the first sample's one-off costs are
        # not charged.
        self.max_overhead = max_overhead
        self._spent = 0.0        # the probes' charged seconds in this run
        self._trained = 0.0      # the training seconds in this run (the loop's, less the probes')
        self._step_timer = 0.0   # the probes' timers in the step being computed
        self._last_end = None    # perf_counter() when the last step() returned
        self._run_delay = _RunDelay()  # opened by the thread that steps, at its first pick
        self._window = [0.0, 0.0, None]  # loop seconds, probe seconds, run delay at its start
        self._unsampled = 0.0    # running mean length of an unsampled step
        self._pending = None     # the sample in the step before: its excess, its timers
        self._cheapest = 0.0     # the cheapest recent sample's timers
        self._per_timed = 1.0    # what samples cost per second their timers saw
        self._sampled_ever = False
        self._first, self._early_picked, self._early_sampled = 1, 1, 1
        self.sampled = self.skipped = 0  # steps the probes sampled, picked steps skipped
        self._sample_now, self._skipped_now = True, False  # step 1 is sampled
        self.step_count = 0
        self.epoch_count = 0
        self.smoothed, self.smoothed_count = 0.0, 0
        self._pending_steps, self._pending_probes, self._pending_more = [], [], []
        self._last_write = time.monotonic()
        self._epoch_losses, self._epoch_accuracies = [], []
        self._epoch_started, self._epoch_first_step = time.monotonic(), 0
        self._last_sample = None
        self._hooks, self._handles, self._probed, self._weights_before = [], [], [], {}
        # The sampled step's samples (kind, module, tensor, summary or its place in the host
        # values, update ratio), its host tensors' values and saturations, its summaries by
        # tensor (see _add).
        self._samples, self._host_values, self._summaries = [], [], {}
        self._last_epoch = {}
        self.closed = False
        self.run = None
        self._reduce_buffer = None
        if self.rank != 0:
            return
        modules = dict(self.model.named_modules())
        for probe in probes:
            if probe not in modules:
                raise KeyError("no module '%s' in the model to probe (it has: %s)" % (
                    probe, ", ".join(n for n in modules if n)))
        try:
            param = next(self.model.parameters())
            device = str(param.device)
        except StopIteration:
            device = "cpu"
        self.store = _Store(folder)
        architecture = "%016x" % (_fnv1a(repr(self.model).encode()))
        settings = json.dumps(settings if settings is not None else {
            "pytorch": {"probes": list(probes), "every": every, "processes": self.processes}})
        cur = self.store.db.execute(
            "INSERT INTO runs(name, started, settings, architecture, project, source, processes,"
            " host, device) VALUES(?, ?, ?, ?, '', 'pytorch', ?, ?, ?)",
            (name, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), settings, architecture,
             self.processes, socket.gethostname(), device))
        self.run = cur.lastrowid
        for probe in probes:
            self._hook(probe, modules[probe])
        self._attach_hooks()

    # ---- Probes ---------------------------------------------------------------------------

    def _sampling(self):
        # Decided once for the step being computed now (step_count + 1) by _decide().
        return self._sample_now

    def _takes(self, s):
        """Whether the budget or the floor lets step s (one `every` picks) be sampled."""
        early = s - self._first < FLOOR_EARLY_STEPS
        if early:
            self._early_picked += 1
        if self.max_overhead == 0 or self._spent <= BUDGET_AIM * self.max_overhead * self._trained:
            return True
        last = self._last_sample if self._last_sample is not None else 0
        return ((early and 3 * self._early_sampled < self._early_picked)
                or s - last >= FLOOR_GAP * self.every)

    def _fold_window(self):
        """Adds the steps since the last pick to the run's cost and training time, less the
        time the thread waited for a CPU (steps the system descheduled bank nothing), training
        and probes alike (engine/train/sampling_budget.cpp fold)."""
        wall, cost, delay_begin = self._window
        delay = self._run_delay.seconds()
        if wall > 0:
            waited = delay - delay_begin if delay_begin is not None else 0.0
            scale = max(0.0, wall - waited) / wall
            self._spent += cost * scale
            self._trained += max(0.0, wall - cost) * scale
        self._window = [0.0, 0.0, delay]

    def _measure(self, sampled, ended):
        """Folds the step that ended at `ended` (when the loop called step()) into the window,
        charged as the engine charges it (engine/train/sampling_budget.h): a sampled step what
        the probes' timers saw (at most OUTLIER_FACTOR times the cheapest recent sample's)
        times what samples cost per second their timers saw, learned a tenth of the way from
        each sample's and its next step's excess over the unsampled steps, within
        [1, OUTLIER_FACTOR]; the first sample nothing. A step whose start is unknown (the
        first, the first after an epoch's evaluation) adds its probes' timers only."""
        seen, self._step_timer = self._step_timer, 0.0
        pending, self._pending = self._pending, None
        if self._last_end is None:
            self._window[1] += seen if self._sampled_ever else 0.0
            self._sampled_ever = self._sampled_ever or sampled
            return
        span = ended - self._last_end
        cost = seen
        if not sampled:
            if pending is not None:
                excess, timed = pending
                ratio = min(max((excess + span - self._unsampled) / timed, 1.0), OUTLIER_FACTOR)
                self._per_timed += 0.1 * (ratio - self._per_timed)
            else:
                self._unsampled = 0.9 * self._unsampled + 0.1 * span if self._unsampled else span
        else:
            if not self._sampled_ever:
                self._sampled_ever = True
                self._window[0] += max(0.0, span - seen)  # one-off costs: not charged
                return
            timed = min(seen, OUTLIER_FACTOR * self._cheapest) if self._cheapest else seen
            self._cheapest = min(seen, 1.05 * self._cheapest) if self._cheapest else seen
            if self._unsampled and seen > 0:
                self._pending = (span - self._unsampled, seen)
            cost = min(timed * self._per_timed, span)
        self._window[0] += span
        self._window[1] += cost

    def _decide(self):
        """Whether the next step is sampled: the first, then every `every`-th within the budget
        or the floor. The hooks are on the modules only for a sampled step: a module with hooks
        is called through Python on every step they are on, which on a small model costs more
        than the step's own work."""
        s = self.step_count + 1
        due = s == 1 or s % self.every == 0
        self._skipped_now = False
        if due:
            self._fold_window()
            due = self._takes(s)
            self._skipped_now = not due
            if due and s - self._first < FLOOR_EARLY_STEPS:
                self._early_sampled += 1
        if due != self._sample_now:
            t = time.perf_counter()
            self._sample_now = due
            self._attach_hooks()
            self._step_timer += time.perf_counter() - t

    def overhead(self):
        """The probes' measured share of the training time so far (the engine's
        ProbeOverhead.fraction)."""
        return self._spent / self._trained if self._trained > 0 else 0.0

    def _attach_hooks(self):
        want = self._sample_now and self.rank == 0
        if want and not self._handles:
            for module, pre, forward, backward in self._hooks:
                self._handles += [module.register_forward_pre_hook(pre),
                                  module.register_forward_hook(forward),
                                  module.register_full_backward_hook(backward)]
        elif not want and self._handles:
            for h in self._handles:
                h.remove()
            self._handles = []

    def _interval(self):
        s = self.step_count + 1
        return 0 if self._last_sample is None else s - self._last_sample

    def _add(self, kind, module, tensor, value, saturation=None, update_ratio=NAN):
        """A sample of the step being computed: a tensor on the host is copied now and
        summarized with the others at the step's end (_pack_samples), one on a GPU now."""
        if not (isinstance(value, torch.Tensor) and value.is_floating_point()):
            return
        # One tensor seen twice in a step (a module's input gradient is the one before it's
        # output gradient) is summarized once. The cache holds the tensor, so that its memory
        # is not another's while the key is kept.
        key = (value.data_ptr(), value._version, value.shape, value.stride(), value.dtype,
               value.device, saturation)
        cached = self._summaries.get(key)
        if cached is None:
            values = _flat_float64(value)
            if isinstance(values, numpy.ndarray):
                summary = len(self._host_values)  # its place in the step's host values
                self._host_values.append((values, saturation))
            else:
                summary = _summarize_device(values, saturation)
            cached = self._summaries[key] = (value, summary)
        self._samples.append((kind, module, tensor, cached[1], update_ratio))

    def _pack_samples(self):
        """The step's samples, their host tensors summarized together, into the pending rows."""
        host = _summarize_host([v for v, _ in self._host_values],
                               [s for _, s in self._host_values])
        step, interval = self.step_count + 1, self._interval()
        for kind, module, tensor, summary, ratio in self._samples:
            self._pending_probes.append(_pack_probe(
                step, interval, kind, module, tensor,
                host[summary] if isinstance(summary, int) else summary, ratio))
        self._samples, self._host_values, self._summaries = [], [], {}

    def _hook(self, name, module):
        saturation = _saturation(module)

        def named(values, base):
            values = values if isinstance(values, (tuple, list)) else (values,)
            return [(base if i == 0 else "%s.%d" % (base, i), v) for i, v in enumerate(values)]

        def pre(mod, inputs):
            if self.model.training and self._sampling():
                t = time.perf_counter()
                # The weights before the optimizer's step, for param_grad's update ratio.
                self._weights_before[name] = {
                    p_name: _flat_float64(p) for p_name, p in mod.named_parameters()}
                self._step_timer += time.perf_counter() - t

        def forward(mod, inputs, output):
            if self.model.training and self._sampling():
                t = time.perf_counter()
                for tensor, value in named(output, "output"):
                    self._add("activation", name, tensor, value, saturation)
                self._step_timer += time.perf_counter() - t

        def backward(mod, grad_input, grad_output):
            if self._sampling():
                t = time.perf_counter()
                for tensor, value in named(grad_output, "output"):
                    self._add("grad_output", name, tensor, value)
                for tensor, value in named(grad_input, "input"):
                    self._add("grad_input", name, tensor, value)
                self._step_timer += time.perf_counter() - t

        self._hooks.append((module, pre, forward, backward))
        self._probed.append((name, module))

    def _param_grads(self):
        for name, module in self._probed:
            before = self._weights_before.pop(name, {})
            for p_name, p in module.named_parameters():
                if p.grad is None:
                    continue
                ratio = NAN
                if p_name in before:
                    ratio = _update_ratio(_flat_float64(p), before[p_name])
                self._add("param_grad", name, p_name, p.grad, update_ratio=ratio)

    # ---- What the loop calls --------------------------------------------------------------

    def _reduce(self, values):
        """The mean over the processes (all of them call this with the same keys)."""
        keys = sorted(values)
        host = torch.tensor([NAN if values[k] is None else float(values[k]) for k in keys],
                            dtype=torch.float64)
        # One buffer for the recorder's life, not a new tensor a call: gloo's worker thread
        # lets go of a collective's tensors after the caller has resumed, and a tensor whose
        # Python object died first then needs the GIL to be freed. With torch 1.13 that
        # deadlocks a process whose main thread, holding the GIL, destroys the process group
        # at exit and waits for that worker (seen as a DDP rank hanging in ~ProcessGroupGloo).
        if self._reduce_buffer is None or self._reduce_buffer.numel() != len(keys):
            device = "cuda" if torch.distributed.get_backend() == "nccl" else "cpu"
            self._reduce_buffer = torch.empty(len(keys), dtype=torch.float64, device=device)
        self._reduce_buffer.copy_(host)
        torch.distributed.all_reduce(self._reduce_buffer)
        return dict(zip(keys, (self._reduce_buffer / self.processes).tolist()))

    def step(self, loss, accuracy=None, lr=None):
        """After a training step (its backward and optimizer.step()): its loss, its accuracy
        (a fraction), the learning rate. Losses and accuracies are averaged over processes."""
        loss = loss.item() if isinstance(loss, torch.Tensor) else loss
        accuracy = accuracy.item() if isinstance(accuracy, torch.Tensor) else accuracy
        m = {"loss": loss, "accuracy": NAN if accuracy is None else accuracy}
        if self.processes > 1:
            m = self._reduce(m)
        # The step's end: its loss is known (on a GPU, its work is done) and the processes have
        # met; a wait for them is the training's, as a wait in DDP's own all-reduce is.
        ended = time.perf_counter()
        sampled = self._sampling()
        self.sampled += sampled
        self.skipped += self._skipped_now
        if self.rank == 0 and sampled:
            t = time.perf_counter()
            self._param_grads()
            self._pack_samples()
            self._step_timer += time.perf_counter() - t
            self._last_sample = self.step_count + 1
        self.step_count += 1
        if self.rank == 0:
            self.smoothed = SMOOTHING * self.smoothed + (1 - SMOOTHING) * m["loss"]
            self.smoothed_count += 1
            smoothed = self.smoothed / (1 - SMOOTHING ** self.smoothed_count)
            self._pending_steps.append(_STEP.pack(
                self.step_count, self.epoch_count + 1, m["loss"], smoothed, m["accuracy"],
                NAN if lr is None else float(lr)))
            self._epoch_losses.append(m["loss"])
            if not math.isnan(m["accuracy"]):
                self._epoch_accuracies.append(m["accuracy"])
            if time.monotonic() - self._last_write >= WRITE_EVERY_SECONDS:
                self.flush()
        # What the recorder spent after the step's end (its writes) is the loop's, not the
        # probes': it is left out of the step's length like time between steps.
        self._measure(sampled and self.rank == 0, ended)
        self._last_end = time.perf_counter()
        self._decide()

    def epoch(self, test_loss=None, test_accuracy=None):
        """At an epoch's end: its test figures (None when not evaluated). Under DDP they are
        rank 0's (a test set is commonly evaluated there alone), not averaged."""
        m = {"test_loss": NAN if test_loss is None else float(test_loss),
             "test_accuracy": NAN if test_accuracy is None else float(test_accuracy)}
        # The evaluation before this call is not a step: the next step is measured from here
        # (the probes' budget counts time in steps, as the engine's).
        self._last_end = time.perf_counter()
        self.epoch_count += 1
        if self.rank != 0:
            return
        seconds = time.monotonic() - self._epoch_started
        steps = self.step_count - self._epoch_first_step
        e = {
            "train_loss": sum(self._epoch_losses) / len(self._epoch_losses)
            if self._epoch_losses else NAN,
            "train_accuracy": sum(self._epoch_accuracies) / len(self._epoch_accuracies)
            if self._epoch_accuracies else NAN,
            "test_loss": m["test_loss"], "test_accuracy": m["test_accuracy"]}
        self._last_epoch = e
        # With the steps, at the next write: short epochs (spirals has 19 steps) would otherwise
        # commit a transaction each.
        self._pending_more.append((
            "INSERT OR REPLACE INTO epoch_metrics(run, epoch, step, train_loss, train_accuracy,"
            " test_loss, test_accuracy, test_sequence_accuracy, seconds, steps_per_second)"
            " VALUES(?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
            (self.run, self.epoch_count, self.step_count, _nan_to_none(e["train_loss"]),
             _nan_to_none(e["train_accuracy"]), _nan_to_none(e["test_loss"]),
             _nan_to_none(e["test_accuracy"]), seconds,
             steps / seconds if seconds > 0 else None)))
        if time.monotonic() - self._last_write >= WRITE_EVERY_SECONDS:
            self.flush()
        self._epoch_losses, self._epoch_accuracies = [], []
        self._epoch_started, self._epoch_first_step = time.monotonic(), self.step_count

    def snapshot(self, optimizer=None, force=False):
        """Writes the weights (.safetensors) and the optimizer's state (.pt) at this step when
        NN Studio's schedule has it due (or `force`); True when it wrote. Call it every step."""
        if self.rank != 0 or not (force or snapshot_due(self.step_count)):
            return False
        self.flush()
        relative = "run-%d/step-%09d" % (self.run, self.step_count)
        base = os.path.join(self.store.folder, relative)
        os.makedirs(os.path.dirname(base), exist_ok=True)
        # The files first, each atomically, then the row: a reader never sees half a snapshot.
        save_safetensors(self.model.state_dict(), base + ".safetensors")
        state = {"model_state_dict": {},
                 "optimizer_state_dict": optimizer.state_dict() if optimizer else None,
                 "epoch": self.epoch_count, "step": self.step_count}
        _write_atomically(base + ".pt", lambda f: torch.save(state, f))
        size = os.path.getsize(base + ".safetensors") + os.path.getsize(base + ".pt")
        self.store.transaction([(
            "INSERT OR REPLACE INTO snapshots(run, step, epoch, weights, state, bytes)"
            " VALUES(?, ?, ?, ?, ?, ?)",
            (self.run, self.step_count, self.epoch_count, relative + ".safetensors",
             relative + ".pt", size))])
        self._last_snapshot_step = self.step_count
        # Not the probes' cost, nor the training's: the next step is measured from here.
        self._last_end = time.perf_counter()
        return True

    def flush(self, more=()):
        """Writes what is pending (steps, probe samples, `more`) in one transaction."""
        if self.rank != 0:
            return
        statements = []
        if self._pending_steps:
            first = _STEP.unpack_from(self._pending_steps[0])[0]
            last = _STEP.unpack_from(self._pending_steps[-1])[0]
            statements += [
                ("INSERT OR REPLACE INTO step_metrics(run, first_step, last_step, steps)"
                 " VALUES(?, ?, ?, ?)", (self.run, first, last, b"".join(self._pending_steps))),
                ("UPDATE runs SET steps = MAX(steps, ?), finished = 0 WHERE id = ?",
                 (last, self.run))]
        if self._pending_probes:
            steps = [_PROBE.unpack_from(p)[0] for p in self._pending_probes]
            statements.append((
                "INSERT INTO probe_samples(run, first_step, last_step, samples)"
                " VALUES(?, ?, ?, ?)",
                (self.run, min(steps), max(steps), b"".join(self._pending_probes))))
        statements += self._pending_more + list(more)
        if statements:
            self.store.transaction(statements)
        self._pending_steps, self._pending_probes, self._pending_more = [], [], []
        self._last_write = time.monotonic()

    def close(self, optimizer=None):
        """Ends the run: what is pending, a last snapshot (with `optimizer`, when the last step
        has none), the run's final figures."""
        if self.closed:
            return
        self.closed = True
        self._run_delay.close()
        for h in self._handles:
            h.remove()
        self._handles = []
        if self.rank != 0:
            return
        if self.step_count > 0 and getattr(self, "_last_snapshot_step", None) != self.step_count:
            self.snapshot(optimizer, force=True)
        e = self._last_epoch
        self.flush([(
            "UPDATE runs SET steps = ?, finished = 1, train_loss = ?, train_accuracy = ?,"
            " test_loss = ?, test_accuracy = ? WHERE id = ?",
            (self.step_count, _nan_to_none(e.get("train_loss")),
             _nan_to_none(e.get("train_accuracy")), _nan_to_none(e.get("test_loss")),
             _nan_to_none(e.get("test_accuracy")), self.run))])
        self.store.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _fnv1a(data):
    h = 14695981039346656037
    for c in data:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h

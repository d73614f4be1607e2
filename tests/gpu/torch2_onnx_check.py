#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""ONNX files of torch 2.x's default exporter, opened by NN Studio (issue 44, part 3): run by
tests/gpu/device_check.sh's compatibility step on the GPU machine (PyTorch 2.11, torchvision,
transformers 5.17, onnx, onnxscript, onnxruntime 1.30; the CPU is enough), not in CI, whose
torch is 1.13.

Each model below is exported by `torch.onnx.export(model, (x,), path, dynamo=True,
external_data=False)` (the exporter writes the weights to a .data file by default, which NN
Studio refuses) with a dynamic batch (a static one where torch.export refuses it, said so): at
the exporter's default opset, then at opset 20 where the default differs, then at 18; the
later opsets export the program torch.export captured for the default one (its ONNXProgram's
exported_program; the module again where that fails), which saves the capture's time.
Then `nnstudio-cli import` makes a project of the file and `nnstudio-cli forward --eval` runs it
on the same input; its output is compared with torch's own (rtol 1e-4, atol 1e-5 times the
output's largest magnitude where that is above 1, as tests/torch/onnx_import.py compares its
real models). onnxruntime runs each file too, to tell the exporter's differences from NN
Studio's. The models: an MLP; LayerNorm and GELU (erf and tanh); F.scaled_dot_product_attention
between separate, fused (qkv split, or reshaped and permuted as timm does) and fused kv
projections, in self- and cross-attention, causal and not; nn.TransformerEncoder (batch_first, 2
layers); torchvision's resnet18, mobilenet_v2 and a small VisionTransformer in eval mode; and
transformers' BertModel, GPT2LMHeadModel and ViTForImageClassification built from small
configs (nothing downloaded), wrapped to return one tensor (last_hidden_state, logits).

One line per model and opset: its status (equal, REFUSED, DIFFER, EXPORT-FAILED, skip where
torchvision or transformers is missing, ERROR for a fault of this script), the name, the
opset, the export, the import (the CLI's message), the max abs diff (onnxruntime's beside it)
and whether the attention became MultiheadAttention (the .nns file's node types). Then the
count line

    torch2 onnx: N imported and equal, M refused, K differ

A refusal or a difference is a finding, not a failure: the exit status is 0 unless this script
itself broke (1), and 77 (skipped, one line saying why) where torch is older than 2.1 or has no
dynamo exporter, or onnx, onnxscript or onnxruntime is missing.

Time cap: device_check.sh's whole run has 8 minutes, so no model is started once 150 s have
passed (NNS_TORCH2_SECONDS); those left are listed as not run. The models go at the default
opset first, then the other opsets, so that the cap cuts the explicit opsets first.

Writes $NNS_TORCH2_OUT/torch2_onnx.json (else $OUT, else ./gpu-logs): every model's record
(export, ONNX operators, import message, node types, diffs, seconds), rewritten after each
model so that a killed run keeps what it did. Files that were refused or differ are kept under
torch2_onnx/ beside it, to become fixtures: NAME_opsetN.onnx with NAME_opsetN.io.safetensors
(the input and torch's output); a file over 8 MiB (NNS_TORCH2_KEEP_MIB), or past 40 MiB kept
in all, is kept as NAME_opsetN.noweights.onnx, its large initializers emptied (its graph only).

    python3 tests/gpu/torch2_onnx_check.py path/to/nnstudio-cli
"""

import collections
import contextlib
import inspect
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
START = time.monotonic()
CAP = float(os.environ.get("NNS_TORCH2_SECONDS", "150"))
KEEP_MIB = float(os.environ.get("NNS_TORCH2_KEEP_MIB", "8"))
KEEP_TOTAL_MIB = 40
CLI_TIMEOUT = 120


def skip(reason):
    print(f"skip torch2_onnx_check: {reason}")
    sys.exit(77)


if len(sys.argv) != 2:
    print(__doc__)
    sys.exit(2)
CLI = sys.argv[1]

try:
    import torch
except ImportError:
    skip(f"torch is not installed for {sys.executable}")
_version = re.match(r"(\d+)\.(\d+)", torch.__version__)
if not _version or (int(_version.group(1)), int(_version.group(2))) < (2, 1):
    skip(f"torch {torch.__version__} at {sys.executable} is older than 2.1 "
         "(no torch.export, no dynamo ONNX exporter)")
if "dynamo" not in inspect.signature(torch.onnx.export).parameters:
    skip(f"torch {torch.__version__}'s torch.onnx.export has no dynamo=True (torch 2.5 and later)")
for _module, _why in (("onnx", "reading the files"), ("onnxscript", "torch's dynamo exporter"),
                      ("onnxruntime", "the cross-check")):
    try:
        __import__(_module)
    except ImportError:
        skip(f"{_module} is not installed for {sys.executable} (needed for {_why})")

import onnx  # noqa: E402
import onnxruntime  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "state_dict"))
from make_state_dict_fixtures import safetensors_bytes  # noqa: E402

nn = torch.nn
F = torch.nn.functional

OUT_DIR = os.environ.get("NNS_TORCH2_OUT") or os.environ.get("OUT") or os.path.join(
    os.getcwd(), "gpu-logs")
KEEP_DIR = os.path.join(OUT_DIR, "torch2_onnx")
SUMMARY = os.path.join(OUT_DIR, "torch2_onnx.json")


# ---- the models ---------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class NormGELU(nn.Module):
    """tests/fixtures/onnx/make_opset_fixtures.py's: LayerNorm, GELU (erf), GELU (tanh)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.norm, self.act = nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU()
        self.fc2, self.act2 = nn.Linear(8, 5), nn.GELU(approximate="tanh")

    def forward(self, x):
        return self.act2(self.fc2(self.act(self.norm(self.fc1(x)))))


class SDPA(nn.Module):
    """A model's own attention on F.scaled_dot_product_attention, E 16, 2 heads, x [N, 8, 16].
    proj: "separate" (q, k, v), "fused" (qkv(x).split(E, -1); in cross-attention q and a fused
    kv), "permute" (qkv(x).reshape(N, L, 3, H, hd).permute(2, 0, 3, 1, 4).unbind(0), as timm
    writes it). Cross-attention: the query reads x[:, :4], the key and value x (x[:, 4:] when
    causal, so that both have 4 positions)."""

    def __init__(self, proj="separate", cross=False, causal=False, e=16, heads=2):
        super().__init__()
        self.proj, self.cross, self.causal, self.e, self.h = proj, cross, causal, e, heads
        if proj == "separate" or (proj == "fused" and cross):
            self.q = nn.Linear(e, e)
        if proj == "separate":
            self.k, self.v = nn.Linear(e, e), nn.Linear(e, e)
        elif proj == "fused" and cross:
            self.kv = nn.Linear(e, 2 * e)
        else:
            self.qkv = nn.Linear(e, 3 * e)
        self.out = nn.Linear(e, e)

    def heads(self, t):
        return t.reshape(t.shape[0], t.shape[1], self.h, self.e // self.h).transpose(1, 2)

    def forward(self, x):
        if self.cross:
            query, memory = (x[:, :4], x[:, 4:]) if self.causal else (x[:, :4], x)
        else:
            query = memory = x
        if self.proj == "permute":
            n, length, _ = x.shape
            q, k, v = self.qkv(x).reshape(n, length, 3, self.h, self.e // self.h).permute(
                2, 0, 3, 1, 4).unbind(0)
        else:
            if self.proj == "separate":
                q, k, v = self.q(query), self.k(memory), self.v(memory)
            elif self.cross:
                q, (k, v) = self.q(query), self.kv(memory).split(self.e, -1)
            else:
                q, k, v = self.qkv(x).split(self.e, -1)
            q, k, v = self.heads(q), self.heads(k), self.heads(v)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        n, h, length, d = y.shape
        return self.out(y.transpose(1, 2).reshape(n, length, h * d))


class Encoder(nn.Module):
    """tests/torch/onnx_import.py's: nn.TransformerEncoder, batch_first, 2 layers."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        return self.head(self.encoder(x)[:, 0])


class HFOutput(nn.Module):
    """A transformers model returning one tensor of its ModelOutput (last_hidden_state,
    logits): one graph output, one `forward` output to compare."""

    def __init__(self, model, field):
        super().__init__()
        self.model, self.field = model, field

    def forward(self, x):
        return getattr(self.model(x), self.field)


def randomize_batchnorm(model):
    """Running statistics that are not 0 and 1, so that they matter (onnx_import.py's)."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)


def tv_model(name):
    def make():
        import torchvision
        m = torchvision.models
        if name == "vit":
            model = m.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                        hidden_dim=32, mlp_dim=64, num_classes=10)
            # torchvision zeroes the head: every output would be 0 and any comparison pass.
            nn.init.normal_(model.heads.head.weight)
            nn.init.normal_(model.heads.head.bias)
            return model
        return getattr(m, name)(num_classes=10)
    return make


def hf_model(kind):
    def make():
        import transformers
        transformers.logging.set_verbosity_error()
        if kind == "bert":
            model = transformers.BertModel(transformers.BertConfig(
                num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                intermediate_size=128, vocab_size=1000))
            return HFOutput(model, "last_hidden_state")
        if kind == "gpt2":
            model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
                n_layer=2, n_embd=64, n_head=4, vocab_size=1000, use_cache=False))
            return HFOutput(model, "logits")
        model = transformers.ViTForImageClassification(transformers.ViTConfig(
            image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, num_labels=10))
        return HFOutput(model, "logits")
    return make


def randn(*shape):
    return lambda: torch.randn(*shape)


def tokens(n, length):
    return lambda: torch.randint(0, 1000, (n, length))


# name, model, input, attention layers the model has (0: none)
MODELS = [
    ("mlp", MLP, randn(5, 8), 0),
    ("layernorm_gelu", NormGELU, randn(5, 6), 0),
    ("sdpa_self_separate", lambda: SDPA("separate"), randn(3, 8, 16), 1),
    ("sdpa_self_separate_causal", lambda: SDPA("separate", causal=True), randn(3, 8, 16), 1),
    ("sdpa_self_fused", lambda: SDPA("fused"), randn(3, 8, 16), 1),
    ("sdpa_self_fused_causal", lambda: SDPA("fused", causal=True), randn(3, 8, 16), 1),
    ("sdpa_self_fused_permute", lambda: SDPA("permute"), randn(3, 8, 16), 1),
    ("sdpa_cross_separate", lambda: SDPA("separate", cross=True), randn(3, 8, 16), 1),
    ("sdpa_cross_fused_kv", lambda: SDPA("fused", cross=True), randn(3, 8, 16), 1),
    ("sdpa_cross_separate_causal", lambda: SDPA("separate", cross=True, causal=True),
     randn(3, 8, 16), 1),
    ("transformer_encoder", Encoder, randn(3, 12, 32), 2),
    ("resnet18", tv_model("resnet18"), randn(2, 3, 64, 64), 0),
    ("mobilenet_v2", tv_model("mobilenet_v2"), randn(2, 3, 64, 64), 0),
    ("vit", tv_model("vit"), randn(2, 3, 32, 32), 2),
    ("hf_bert", hf_model("bert"), tokens(2, 16), 2),
    ("hf_gpt2", hf_model("gpt2"), tokens(2, 16), 2),
    ("hf_vit", hf_model("vit"), randn(2, 3, 32, 32), 2),
]


# ---- helpers ------------------------------------------------------------------------------------

def first_line(text, limit=240):
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[:limit] + "..."


def reason_of(e):
    """The exception and its causes, each by its type and first line."""
    parts, seen = [], set()
    while e is not None and id(e) not in seen and len(parts) < 3:
        seen.add(id(e))
        part = f"{type(e).__name__}: {first_line(e, 200)}"
        if part not in parts:
            parts.append(part)
        e = e.__cause__ or e.__context__
    return "; caused by ".join(parts)


def cli_message(output, path):
    """The CLI's message less 'nnstudio-cli: error: PATH: ': its first line, and the lines of a
    list where the first line ends with a colon (the operators without a node)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    head = re.sub(r"^nnstudio-cli: error: ", "", lines[0])
    head = head.replace(path + ": ", "")
    if head.endswith(":") and len(lines) > 1:
        head += " " + "; ".join(lines[1:6]) + ("; ..." if len(lines) > 6 else "")
    return head if len(head) <= 400 else head[:400] + "..."


def read_safetensors(path):
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    dtypes = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
              "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32}
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[8 + size + begin:8 + size + end])
        t = torch.frombuffer(raw, dtype=dtypes[entry["dtype"]]) if raw else torch.empty(
            0, dtype=dtypes[entry["dtype"]])
        out[name] = t.reshape(entry["shape"])
    return out


def run_cli(*args):
    try:
        p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=CLI_TIMEOUT)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return None, f"timed out after {CLI_TIMEOUT} s"


def onnx_opset(path):
    m = onnx.load(path, load_external_data=False)
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), None)
    ops = collections.Counter((f"{n.domain}::" if n.domain not in ("", "ai.onnx") else "")
                              + n.op_type for n in m.graph.node)
    external = [t.name for t in m.graph.initializer
                if t.data_location == onnx.TensorProto.EXTERNAL]
    batch = None
    if m.graph.input:
        dims = m.graph.input[0].type.tensor_type.shape.dim
        if dims:
            batch = dims[0].dim_param or dims[0].dim_value
    return opset, dict(sorted(ops.items())), {
        "domains": sorted({o.domain or "ai.onnx" for o in m.opset_import}),
        "functions": len(m.functions), "external_initializers": external[:5],
        "input_batch": batch, "inputs": [i.name for i in m.graph.input],
        "outputs": [o.name for o in m.graph.output]}


def node_types(project):
    nodes = json.load(open(project))["graph"]["nodes"]
    return collections.Counter(n["type"] for n in nodes)


def tolerance(want):
    return 1e-5 * max(1.0, want.abs().max().item() if want.numel() else 1.0)


def max_diff(got, want):
    if tuple(got.shape) != tuple(want.shape):
        return None
    return (got.double() - want.double()).abs().max().item() if want.numel() else 0.0


def fmt(d):
    return "-" if d is None else f"{d:.2e}"


# ---- export -------------------------------------------------------------------------------------

EXPORT_PARAMS = set(inspect.signature(torch.onnx.export).parameters)


def torch_onnx_export(model, x, path, opset, dynamic):
    """torch.onnx.export with dynamo=True; the exporter's own prints kept for the record."""
    kwargs = {"dynamo": True, "external_data": False, "verbose": False}
    if opset is not None:
        kwargs["opset_version"] = opset
    if dynamic:
        kwargs["dynamic_shapes"] = ({0: torch.export.Dim("N")},)
    kwargs = {k: v for k, v in kwargs.items() if k in EXPORT_PARAMS}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        program = torch.onnx.export(model, (x,), path, **kwargs)
    return program, printed.getvalue()


def export(case, opset, path, rec):
    """Exports case's model (pass 1) or its captured program (later passes) to path; fills
    rec["export"]. Returns whether a file was written."""
    e = rec["export"] = {}
    t0 = time.monotonic()
    model, x = case["model"], case["x"]
    printed = ""
    try:
        if case.get("program") is not None:
            # The graph torch.export captured at the default opset, exported again at this one
            # (the same capture; only the ONNX translation depends on the opset).
            e["via"] = "exported program of the default opset's capture"
            e["batch"] = case["batch"]
            try:
                _, printed = torch_onnx_export(case["program"], x, path, opset, False)
            except Exception as err:  # noqa: BLE001  (retried from the module)
                e["via_error"] = reason_of(err)
                e["via"] = "module (the exported program failed)"
                _, printed = torch_onnx_export(model, x, path, opset, case["batch"] == "dynamic")
        elif case.get("capture_failed"):
            e.update(ok=False, error="not retried: torch.export could not capture the model at "
                     "the default opset", seconds=0.0)
            return False
        else:
            e["via"] = "module"
            try:
                program, printed = torch_onnx_export(model, x, path, opset, True)
                e["batch"] = "dynamic"
            except Exception as err:  # noqa: BLE001  (a static batch, then the finding)
                e["dynamic_error"] = reason_of(err)
                e["dynamic_traceback"] = traceback.format_exc()[-3000:]
                program, printed = torch_onnx_export(model, x, path, opset, False)
                e["batch"] = "static"
            case["batch"] = e["batch"]
            case["program"] = getattr(program, "exported_program", None)
    except Exception as err:  # noqa: BLE001  (a finding)
        e.update(ok=False, error=reason_of(err), traceback=traceback.format_exc()[-4000:],
                 printed=printed[-2000:], seconds=round(time.monotonic() - t0, 2))
        if "program" not in case and opset is None:
            # Whether torch.export captures it at all: if not, the other opsets fail the same.
            try:
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()):
                    case["program"] = torch.export.export(model, (x,), strict=False)
                case["batch"] = "static"
                e["capture"] = "torch.export.export(strict=False) captures it (static batch)"
            except Exception as cerr:  # noqa: BLE001
                case["capture_failed"] = True
                e["capture"] = f"torch.export.export(strict=False) fails: {reason_of(cerr)}"
        return False
    e.update(ok=True, seconds=round(time.monotonic() - t0, 2))
    if printed.strip():
        e["printed"] = printed[-1500:]
    if os.path.exists(path + ".data"):
        e["external_data_file"] = True
    return True


# ---- one model at one opset ---------------------------------------------------------------------

def run_one(case, opset, tmp):
    name = case["name"]
    tag = f"{name}_{'default' if opset is None else opset}"
    rec = {"model": name, "opset_asked": "default" if opset is None else opset}
    t0 = time.monotonic()
    path = os.path.join(tmp, tag + ".onnx")
    if not export(case, opset, path, rec):
        rec["status"] = "export failed"
        rec["seconds"] = round(time.monotonic() - t0, 2)
        return rec
    file_opset, ops, info = onnx_opset(path)
    rec.update(opset=file_opset, onnx_ops=ops, onnx=info)
    want, x = case["want"], case["x"]
    rec["tolerance"] = {"rtol": 1e-4, "atol": tolerance(want)}
    # onnxruntime on the same file: the exporter's own difference, if any.
    try:
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
        rec["onnxruntime"] = {"ok": True, "max_abs_diff": max_diff(torch.from_numpy(got), want)}
    except Exception as err:  # noqa: BLE001
        rec["onnxruntime"] = {"ok": False, "error": reason_of(err)}
    project = os.path.join(tmp, tag + ".nns")
    weights = os.path.join(tmp, tag + ".safetensors")
    rc, out = run_cli("import", path, project)
    rec["import"] = {"ok": rc == 0, "exit": rc, "message": cli_message(out, path),
                     "output": out[-3000:]}
    if rc != 0:
        rec["status"] = "refused"
        keep(case, tag, path, rec)
        rec["seconds"] = round(time.monotonic() - t0, 2)
        return rec
    types = node_types(project)
    rec["node_types"] = dict(sorted(types.items()))
    rec["multihead_attention"] = types.get("MultiheadAttention", 0)
    inp, outp = os.path.join(tmp, tag + ".x.safetensors"), os.path.join(tmp, tag + ".y.safetensors")
    with open(inp, "wb") as f:
        f.write(safetensors_bytes({"input": x}))
    rc, out = run_cli("forward", project, "--input", inp, "--output", outp, "--eval",
                      "--weights", weights)
    if rc != 0:
        rec["forward"] = {"ok": False, "exit": rc, "message": cli_message(out, project),
                          "output": out[-3000:]}
        rec["status"] = "differ"
        keep(case, tag, path, rec)
        rec["seconds"] = round(time.monotonic() - t0, 2)
        return rec
    got = read_safetensors(outp)["output"]
    rec["output_shapes"] = {"nnstudio": list(got.shape), "torch": list(want.shape)}
    d = max_diff(got, want)
    rec["max_abs_diff"] = d
    equal = d is not None and torch.allclose(got.double(), want.double(), rtol=1e-4,
                                             atol=tolerance(want))
    rec["status"] = "equal" if equal else "differ"
    if not equal:
        keep(case, tag, path, rec)
    rec["seconds"] = round(time.monotonic() - t0, 2)
    return rec


KEPT_BYTES = [0]


def keep(case, tag, path, rec):
    """The file (or its graph without the large initializers' data) and its input and torch's
    output under torch2_onnx/, for a fixture."""
    try:
        os.makedirs(KEEP_DIR, exist_ok=True)
        stem = f"{case['name']}_opset{rec.get('opset', tag)}"
        size = os.path.getsize(path)
        if size <= KEEP_MIB * 2**20 and KEPT_BYTES[0] + size <= KEEP_TOTAL_MIB * 2**20:
            target = os.path.join(KEEP_DIR, stem + ".onnx")
            shutil.copyfile(path, target)
        else:
            m = onnx.load(path)
            for t in m.graph.initializer:
                if int(torch.tensor(list(t.dims) or [1]).prod()) > 256:
                    for field in ("raw_data", "float_data", "int64_data", "int32_data",
                                  "double_data"):
                        t.ClearField(field)
            m.doc_string = (f"{case['name']}: the graph of torch.onnx.export's file, the data of "
                            "initializers over 256 values removed (tests/gpu/torch2_onnx_check.py)")
            target = os.path.join(KEEP_DIR, stem + ".noweights.onnx")
            onnx.save(m, target)
        io_path = os.path.join(KEEP_DIR, stem + ".io.safetensors")
        with open(io_path, "wb") as f:
            f.write(safetensors_bytes({"input": case["x"], "output": case["want"].contiguous()}))
        KEPT_BYTES[0] += os.path.getsize(target) + os.path.getsize(io_path)
        rec["kept"] = [os.path.relpath(target, OUT_DIR), os.path.relpath(io_path, OUT_DIR)]
    except Exception as err:  # noqa: BLE001
        rec["kept_error"] = reason_of(err)


def line_of(rec):
    status = {"equal": "equal", "refused": "REFUSED", "differ": "DIFFER",
              "export failed": "EXPORT-FAILED", "not run": "not-run", "skipped": "skip",
              "error": "ERROR"}[rec["status"]]
    opset = rec.get("opset") or rec["opset_asked"]
    where = f"{rec['model']} opset {opset}"
    if rec["opset_asked"] == "default" and rec.get("opset"):
        where += " (default)"
    if rec["status"] in ("not run", "skipped", "error"):
        return f"{status:13} {where}: {rec.get('reason', '')}"
    e = rec["export"]
    if not e.get("ok"):
        return f"{status:13} {where}: export failed ({e.get('error')})"
    parts = [f"export ok ({e.get('batch', '?')} batch, {e.get('seconds')} s)"]
    imp = rec["import"]
    parts.append("import ok" if imp["ok"] else f"import refused ({imp['message']})")
    ort = rec.get("onnxruntime", {})
    ort_text = (f"onnxruntime {fmt(ort.get('max_abs_diff'))}" if ort.get("ok")
                else f"onnxruntime failed: {ort.get('error', '?')[:120]}")
    if "forward" in rec and not rec["forward"]["ok"]:
        parts.append(f"forward failed ({rec['forward']['message']})")
    if imp["ok"] and "forward" not in rec:
        shapes = rec.get("output_shapes", {})
        shape_note = "" if rec.get("max_abs_diff") is not None else (
            f" (shapes {shapes.get('nnstudio')} vs torch {shapes.get('torch')})")
        parts.append(f"max abs diff {fmt(rec.get('max_abs_diff'))}{shape_note} ({ort_text})")
    else:
        parts.append(f"max abs diff - ({ort_text})")
    expected = rec.get("attention_layers", 0)
    if expected:
        if imp["ok"]:
            got = rec.get("multihead_attention", 0)
            parts.append(f"attention: MultiheadAttention {got} of {expected}")
        else:
            parts.append("attention: -")
    return f"{status:13} {where}: " + ", ".join(parts)


# ---- main ---------------------------------------------------------------------------------------

class Interrupted(BaseException):
    """SIGTERM (device_check.sh's timeout): past every `except Exception` to the count line."""


def on_term(signum, frame):
    raise Interrupted()


def main():
    signal.signal(signal.SIGTERM, on_term)
    os.makedirs(OUT_DIR, exist_ok=True)
    versions = {"python": sys.version.split()[0], "torch": torch.__version__,
                "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__}
    for mod in ("onnxscript", "torchvision", "transformers"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            versions[mod] = None
    print("torch2 onnx: " + ", ".join(f"{k} {v}" for k, v in versions.items()) +
          f"; cap {CAP:.0f} s; nnstudio-cli {CLI}", flush=True)
    summary = {"versions": versions, "cap_seconds": CAP, "default_opset": None, "results": [],
               "counts": None, "interrupted": False}
    records = summary["results"]
    broke = []

    def write():
        tmp_path = SUMMARY + ".tmp"
        with open(tmp_path, "w") as f:
            json.dump(summary, f, indent=1, default=str)
        os.replace(tmp_path, SUMMARY)

    def report(rec, quiet=False):
        records.append(rec)
        if not quiet:
            print(line_of(rec), flush=True)
        write()

    cases = [{"name": n, "make": m, "make_input": i, "attention": a} for n, m, i, a in MODELS]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            passes = [None]
            p = 0
            while p < len(passes):
                opset = passes[p]
                capped = []
                for case in cases:
                    base = {"model": case["name"], "opset_asked": opset or "default",
                            "attention_layers": case["attention"]}
                    if case.get("skip"):
                        if opset is None:
                            report(dict(base, status="skipped", reason=case["skip"]))
                        continue
                    if time.monotonic() - START > CAP:
                        capped.append(case["name"])
                        report(dict(base, status="not run",
                                    reason=f"past the {CAP:.0f} s cap of this script"), True)
                        continue
                    try:
                        if "model" not in case:
                            torch.manual_seed(0)
                            try:
                                model = case["make"]()
                            except ImportError as err:
                                case["skip"] = f"cannot build it: {reason_of(err)}"
                                report(dict(base, status="skipped", reason=case["skip"]))
                                continue
                            randomize_batchnorm(model)
                            case["model"] = model.eval()
                            config = getattr(getattr(model, "model", None), "config", None)
                            if config is not None:  # transformers': its attention's code path
                                case["attn_implementation"] = getattr(
                                    config, "_attn_implementation", None)
                            torch.manual_seed(1)
                            case["x"] = case["make_input"]()
                            with torch.no_grad():
                                case["want"] = case["model"](case["x"]).detach()
                        rec = run_one(case, opset, tmp)
                        rec["attention_layers"] = case["attention"]
                        if "attn_implementation" in case:
                            rec["attn_implementation"] = case["attn_implementation"]
                        if opset is None and rec.get("opset") and not summary["default_opset"]:
                            summary["default_opset"] = rec["opset"]
                    except Interrupted:
                        raise
                    except Exception as err:  # noqa: BLE001  (this script's fault)
                        rec = dict(base, status="error", reason=reason_of(err),
                                   traceback=traceback.format_exc()[-4000:])
                        broke.append(case["name"])
                    report(rec)
                if capped:
                    print(f"{'not-run':13} opset {opset or 'default'}, past the {CAP:.0f} s "
                          f"cap of this script: {', '.join(capped)}", flush=True)
                if opset is None:
                    passes += [o for o in (20, 18) if o != summary["default_opset"]]
                p += 1
    except Interrupted:
        summary["interrupted"] = True
        print("torch2 onnx: interrupted (SIGTERM): the counts below are of the models done")
    counts = collections.Counter(r["status"] for r in records)
    summary["counts"] = dict(counts)
    summary["seconds"] = round(time.monotonic() - START, 1)
    write()
    print(f"torch2 onnx: default opset {summary['default_opset']}, {counts['export failed']} "
          f"export failed, {counts['not run']} not run (cap), {counts['skipped']} skipped, "
          f"{counts['error']} script errors, {summary['seconds']} s; {SUMMARY}")
    print(f"torch2 onnx: {counts['equal']} imported and equal, {counts['refused']} refused, "
          f"{counts['differ']} differ", flush=True)
    if broke:
        print(f"torch2_onnx_check.py broke on {sorted(set(broke))}", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every example's ONNX export run by the real onnxruntime (the GPU machine has 1.30; the build
machines have none): for each project of resources/examples with an ONNX form, `nnstudio-cli
export --format onnx` of its initial weights, run by onnxruntime's CPU provider on a batch of 5,
equals `nnstudio-cli forward --eval` (rtol 1e-4, atol 1e-5). Prints ok/FAIL per example.

    python3 tests/gpu/onnxruntime_check.py path/to/nnstudio-cli
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch"))
from torch_checks import ROOT, check, cli, engine_eval, input_for, main, torch, without_onnx_form  # noqa: E402

try:
    import onnxruntime
except ImportError:
    print("onnxruntime is not installed", file=sys.stderr)
    sys.exit(1 if os.environ.get("CI") else 77)


def run_checks():
    examples = os.path.join(ROOT, "resources", "examples")
    print(f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}")
    for name in sorted(os.listdir(examples)):
        if not name.endswith(".nns"):
            continue
        project = os.path.join(examples, name)
        missing = without_onnx_form(project)
        if missing:
            print(f"skip {name}: {missing[1]} has no ONNX form")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "model.onnx")
            cli("export", project, "--format", "onnx", "--out", model)
            x = input_for(project)
            expected = engine_eval(tmp, project, x)
            session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
            feed = {session.get_inputs()[0].name: x.numpy()}
            got = torch.from_numpy(session.run(None, feed)[0])
            ok = got.shape == expected.shape and torch.allclose(
                got.to(expected.dtype), expected, rtol=1e-4, atol=1e-5)
            diff = ((got.to(expected.dtype) - expected).abs().max().item()
                    if got.shape == expected.shape else float("nan"))
            check(ok, f"{name}: onnxruntime equals nnstudio-cli forward --eval "
                      f"(shapes {list(got.shape)} {list(expected.shape)}, max diff {diff:.2e})")


if __name__ == "__main__":
    main(run_checks, __doc__)

# SPDX-License-Identifier: GPL-3.0-or-later
"""NN Studio's PyTorch tracer: `nnstudio-cli import model.py:Net out.nns` runs it.

It builds the module that SOURCE names (FILE.py:EXPR or package.module:EXPR, as uvicorn and
gunicorn take them), traces it with torch.fx and writes what the C++ side
(engine/torch_import) turns into a project:

  OUT/trace.json        the module tree, one traced graph per module whose forward is code
  OUT/state_dict.pt     model.state_dict(), PyTorch's keys
  OUT/io.pt             the inputs it ran and the outputs the module gave (eval mode), so the
                        C++ side checks the project it builds against PyTorch's numbers

Every module is traced on its own, with all of its submodules kept as leaves: a submodule
whose type NN Studio has (the --leaves list the C++ side passes, from its node registry) is a
node, a Sequential/ModuleList/ModuleDict a group, and any other module is traced in its turn
(a custom block). So each traced node belongs to exactly one module, whose path it records
(torch 1.13 puts no module path in node.meta). Shapes come from running the traced graphs on
the given inputs, at two batch sizes, so the C++ side can tell a batch-sized number (x.size(0))
from a constant. The tracer knows no node types beyond the leaf list.

Exit status: 0 written; 3 this Python has no torch; 2 anything else (the message on stderr).
"""
import argparse
import importlib
import inspect
import json
import os
import sys
import traceback

BATCHES = (2, 3)


def fail(message, code=2):
    sys.stderr.write(message.rstrip() + "\n")
    sys.exit(code)


def progress(text):
    print("progress: " + text, flush=True)


try:
    import torch
    import torch.fx as fx
    import torch.nn as nn
    import torch.nn.functional as F
except Exception as e:  # noqa: BLE001  (any failure to import is the same answer)
    fail("%s cannot import torch (%s: %s)" % (sys.executable, type(e).__name__, e), 3)


def torch_major():
    try:
        return int(torch.__version__.split(".")[0])
    except ValueError:
        return 2


if torch_major() < 2 and sys.version_info >= (3, 11):
    # torch 1.13 finds `b, c, h, w = x.size()` by reading the caller's bytecode at f_lasti // 2,
    # which Python 3.11's inline caches broke; torch 2.0's fix, carried here (only where the
    # running torch and Python need it).
    import dis
    from bisect import bisect_left

    def _proxy_iter(self):
        frame = inspect.currentframe()
        calling_frame = frame.f_back
        insts = list(dis.get_instructions(calling_frame.f_code))
        if sys.version_info >= (3, 11):
            offsets = [i.offset for i in insts]
            inst = insts[bisect_left(offsets, calling_frame.f_lasti)]
        else:
            inst = insts[calling_frame.f_lasti // 2]
        if inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    fx.Proxy.__iter__ = _proxy_iter


# ---- Building the module ------------------------------------------------------------------------


def build_module(source):
    if ":" not in source:
        fail("SOURCE '%s' must be FILE.py:EXPR or package.module:EXPR "
             "(e.g. model.py:Net, torchvision.models:resnet18(num_classes=10))" % source)
    where, expr = source.split(":", 1)
    if where.endswith(".py"):
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            fail("%s: no such file (a file SOURCE is read relative to the working folder %s)"
                 % (where, os.getcwd()))
        folder = os.path.dirname(path)
        sys.path.insert(0, folder)
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except SyntaxError as e:
            fail("%s, line %s: syntax error: %s\n    %s" % (where, e.lineno, e.msg,
                                                           (e.text or "").strip()))
        except Exception as e:  # noqa: BLE001
            fail("%s could not be run: %s" % (where, describe_exception(e)))
    else:
        try:
            module = importlib.import_module(where)
        except Exception as e:  # noqa: BLE001
            fail("cannot import the module '%s': %s" % (where, describe_exception(e)))
    try:
        value = eval(expr, vars(module))  # noqa: S307  (the user's own expression)
    except SyntaxError as e:
        fail("EXPR '%s': syntax error: %s" % (expr, e.msg))
    except Exception as e:  # noqa: BLE001
        fail("EXPR '%s' failed: %s" % (expr, describe_exception(e)))
    if isinstance(value, type) or (callable(value) and not isinstance(value, nn.Module)):
        try:
            value = value()
        except Exception as e:  # noqa: BLE001
            fail("%s() failed (a class or function is called with no arguments): %s"
                 % (expr, describe_exception(e)))
    if not isinstance(value, nn.Module):
        fail("%s is a %s, not an nn.Module" % (expr, type(value).__name__))
    return value


def user_code(frames):
    """'file, line N: code' of the innermost of `frames` (outermost first, each (file, line,
    code)) outside torch and this file: where in the user's code something happened. Both
    tracebacks and fx's stack-trace text come here."""
    here = os.path.abspath(__file__)
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    found = None
    for file, line, code in frames:
        f = os.path.abspath(file)
        if f == here or f.startswith(torch_dir):
            continue
        found = (file, line, code)
    if found is None:
        return ""
    return "%s, line %s: %s" % (found[0], found[1], (found[2] or "").strip())


def user_frame(tb):
    """user_code of a traceback."""
    return user_code((f.filename, f.lineno, f.line) for f in traceback.extract_tb(tb))


def describe_exception(e):
    """The exception's first line and where in the user's code it happened (fx appends the
    whole traceback to errors raised while running a traced graph)."""
    where = user_frame(e.__traceback__)
    text = str(e).strip().splitlines()
    return "%s: %s%s" % (type(e).__name__, text[0] if text else "",
                         (" (at %s)" % where) if where else "")


# ---- Module tree --------------------------------------------------------------------------------


def is_plain(module, cls):
    """A Sequential/ModuleList/ModuleDict (or a subclass that keeps its forward)."""
    return isinstance(module, cls) and type(module).forward is cls.forward


def leaf_class(module, leaves):
    """The name of NN Studio's type for the module, or None. A class named in `leaves` that
    torch.nn has counts by type: that class, or a subclass that keeps its forward (a user's own
    LayerNorm with other math is a custom block, not NN Studio's LayerNorm). One torch.nn lacks
    (a plugin's type) counts by its class name."""
    for cls in type(module).__mro__:
        if cls.__name__ not in leaves:
            continue
        torch_cls = getattr(nn, cls.__name__, None)
        if not isinstance(torch_cls, type):
            return cls.__name__ if cls is type(module) else None
        if cls is torch_cls and type(module).forward is torch_cls.forward:
            return cls.__name__
        return None
    return None


def kind_of(module, leaves, root):
    if module is root:
        return "root"
    if leaf_class(module, leaves):
        return "leaf"
    if is_plain(module, nn.Sequential):
        return "sequential"
    if is_plain(module, nn.ModuleList):
        return "modulelist"
    if is_plain(module, nn.ModuleDict):
        return "moduledict"
    return "custom"


def jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (tuple, list)):
        return all(isinstance(v, (bool, int, float)) for v in value)
    return False


def attributes(module, prefix=""):
    """A leaf's plain settings (in_features, kernel_size, eps, ...) and those of its own
    submodules under dotted names (self_attn.num_heads), functions by name (activation: gelu)."""
    out = {}
    for name, value in vars(module).items():
        if name.startswith("_") or name == "training":
            continue
        if jsonable(value):
            out[prefix + name] = list(value) if isinstance(value, tuple) else value
        elif callable(value) and hasattr(value, "__name__") and not isinstance(value, nn.Module):
            out[prefix + name] = value.__name__
    for name, child in module.named_children():
        out[prefix + name + ".__class__"] = type(child).__name__
        out.update(attributes(child, prefix + name + "."))
    return out


def tensor_info(t):
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}


def describe_modules(root, leaves):
    modules = {}
    for path, module in root.named_modules(remove_duplicate=False):
        if path in modules:
            continue
        kind = kind_of(module, leaves, root)
        entry = {"class": leaf_class(module, leaves) or type(module).__name__, "kind": kind,
                 "children": [name for name, _ in module.named_children()]}
        if kind == "leaf":
            entry["attributes"] = attributes(module)
        params = {}
        for name, p in module.named_parameters(recurse=kind == "leaf"):
            params[name] = dict(tensor_info(p), requires_grad=p.requires_grad)
        buffers = {}
        non_persistent = getattr(module, "_non_persistent_buffers_set", set())
        for name, b in module.named_buffers(recurse=kind == "leaf"):
            buffers[name] = dict(tensor_info(b), persistent=name not in non_persistent)
        entry["parameters"] = params
        entry["buffers"] = buffers
        modules[path] = entry
    return modules


# ---- Tracing ------------------------------------------------------------------------------------


class ModuleTracer(fx.Tracer):
    """Traces one module's own forward: every submodule is a leaf (traced on its own)."""

    def __init__(self):
        super().__init__()
        self.record_stack_traces = True

    def is_leaf_module(self, m, module_qualified_name):
        return True


def source_line(node):
    """user_code of the node's op (fx's stack trace: '  File "f.py", line 12, in forward' then
    the code line, the innermost frame first)."""
    lines = (getattr(node, "stack_trace", None) or "").splitlines()
    frames = []
    for i, line in enumerate(lines):
        text = line.strip()
        if not text.startswith("File "):
            continue
        parts = text.split(",")
        file = parts[0][len("File "):].strip().strip('"')
        number = parts[1].strip()[len("line "):] if len(parts) > 1 else "?"
        frames.append((file, number, lines[i + 1] if i + 1 < len(lines) else ""))
    return user_code(reversed(frames))


def target_name(node):
    t = node.target
    if node.op in ("call_module", "get_attr", "call_method"):
        return str(t)
    if node.op == "call_function":
        import operator
        name = getattr(t, "__name__", str(t))
        if getattr(operator, name, None) is t:
            return "operator." + name
        if getattr(torch, name, None) is t:
            return "torch." + name
        if getattr(F, name, None) is t:
            return "F." + name
        if getattr(torch.Tensor, name, None) is t:
            return "Tensor." + name
        return "%s.%s" % (getattr(t, "__module__", None) or "?", name)
    return str(t)


def encode_arg(a):
    if isinstance(a, fx.Node):
        return {"node": a.name}
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    if isinstance(a, (tuple, list)):
        return [encode_arg(x) for x in a]
    if isinstance(a, dict):
        return {"dict": {str(k): encode_arg(v) for k, v in a.items()}}
    if isinstance(a, slice):
        return {"slice": [encode_arg(a.start), encode_arg(a.stop), encode_arg(a.step)]}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, torch.dtype):
        return {"dtype": str(a).replace("torch.", "")}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.Tensor):
        return {"tensor_constant": tensor_info(a)}
    return {"repr": repr(a), "type": type(a).__name__}


def forward_parameters(module):
    try:
        sig = inspect.signature(module.forward)
    except (TypeError, ValueError):
        return []
    return list(sig.parameters.values())


def _encoder_forward(self, src):
    output = src
    for layer in self.layers:
        output = layer(output)
    if self.norm is not None:
        output = self.norm(output)
    return output


def _decoder_forward(self, tgt, memory):
    output = tgt
    for layer in self.layers:
        output = layer(output, memory)
    if self.norm is not None:
        output = self.norm(output)
    return output


# nn.TransformerEncoder/Decoder branch on their input (the fast path, masks), so fx cannot
# trace their forward; without masks it is this loop over the layers, traced in its place.
KNOWN_FORWARDS = {nn.TransformerEncoder: _encoder_forward, nn.TransformerDecoder: _decoder_forward}
# ... and the arguments that loop takes: a call that gives any other (a mask) is refused.
KNOWN_INPUTS = {nn.TransformerEncoder: ("src",), nn.TransformerDecoder: ("tgt", "memory")}


def check_known_call(module, path, params, args, kwargs):
    """Refuses a call of a module traced through KNOWN_FORWARDS with an argument its loop
    would drop (a mask, is_causal=True): the import would attend where PyTorch does not."""
    cls = type(module)
    if cls not in KNOWN_INPUTS:
        return
    given = dict(zip(params, args))
    given.update(kwargs)
    dropped = sorted(name for name, value in given.items()
                     if name not in KNOWN_INPUTS[cls] and value is not None and value is not False)
    if dropped:
        fail("'%s' (nn.%s) is called with %s: the import traces it as the loop over its layers, "
             "which takes no masks, so its attention would differ from PyTorch's; give the "
             "masks to the layers themselves (or is_causal=True to each layer), or leave them out"
             % (path, cls.__name__, ", ".join(dropped)))


def trace_module(module, path, passed):
    """Traces one module's forward. `passed`: the forward's parameter names its caller gives;
    the others keep their defaults (concrete, as a caller that leaves them out sees them)."""
    concrete = {}
    for p in forward_parameters(module):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in passed and p.default is not p.empty:
            concrete[p.name] = p.default
    tracer = ModuleTracer()
    cls = type(module)
    try:
        if cls in KNOWN_FORWARDS:
            module.__class__ = type(cls.__name__, (cls,), {"forward": KNOWN_FORWARDS[cls]})
        graph = tracer.trace(module, concrete_args=concrete or None)
    except Exception as e:  # noqa: BLE001
        where = ("the model (%s)" % type(module).__name__ if not path
                 else "'%s' (%s)" % (path, type(module).__name__))
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        line = user_frame(e.__traceback__)
        if "symbolically traced variables cannot be used as inputs to control flow" in str(e):
            message = ("data-dependent control flow: a Python `if`/`while` on a tensor's value "
                       "(NN Studio's graphs run every step on every input)")
        fail("cannot trace the forward of %s: %s%s" % (where, message,
                                                        (" at " + line) if line else ""))
    finally:
        module.__class__ = cls
    return fx.GraphModule(module, graph, class_name=cls.__name__)


def summarize(value):
    if isinstance(value, torch.Tensor):
        return dict(tensor_info(value), t="tensor")
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": value}
    if isinstance(value, float):
        return {"t": "float", "v": value}
    if isinstance(value, (tuple, list)):
        return {"t": "tuple", "items": [summarize(v) for v in value]}
    if value is None:
        return {"t": "none"}
    return {"t": "other", "type": type(value).__name__}


class Runner:
    """Runs the model through the traced graphs, tracing each custom module when it is first
    called and recording every node's value summary per batch size."""

    def __init__(self, root, modules):
        self.root = root
        self.modules = modules  # path -> description
        self.by_path = dict(root.named_modules(remove_duplicate=False))
        self.traced = {}  # path -> fx.GraphModule
        self.values = {}  # (path, node name) -> [summary per run]
        self.calls = {}  # path -> how it was called first: parameter names given
        self.run_index = 0

    def graph_of(self, path, passed):
        if path not in self.traced:
            progress("tracing %s" % (path or "the model"))
            self.traced[path] = trace_module(self.by_path[path], path, passed)
        return self.traced[path]

    def call(self, path, args, kwargs):
        module = self.by_path[path]
        kind = self.modules[path]["kind"]
        if kind == "sequential":
            (x,) = args
            for name in self.modules[path]["children"]:
                x = self.call(path + "." + name if path else name, (x,), {})
            return x
        if kind in ("leaf", "modulelist", "moduledict"):
            return module(*args, **kwargs)
        params = [p.name for p in forward_parameters(module)]
        check_known_call(module, path, params, args, kwargs)
        passed = set(params[: len(args)]) | set(kwargs)
        return self.interpret(path, self.graph_of(path, passed), args, kwargs)

    def interpret(self, path, gm, args, kwargs):
        runner = self

        class Interp(fx.Interpreter):
            def run_node(self, n):
                value = super().run_node(n)
                key = (path, n.name)
                seen = runner.values.setdefault(key, [])
                if len(seen) == runner.run_index:
                    seen.append(summarize(value))
                return value

            def call_module(self, target, a, k):
                return runner.call(path + "." + target if path else target, a, k)

        params = [p.name for p in forward_parameters(self.by_path[path])]
        positional = list(args)
        for name in params[len(args):]:
            if name in kwargs:
                positional.append(kwargs[name])
        # Placeholders for concrete arguments are gone: feed only those the graph has.
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        return Interp(gm).run(*positional[: len(placeholders)])

    def run(self, inputs):
        with torch.no_grad():
            out = self.call("", tuple(inputs), {})
        self.run_index += 1
        return out


def parse_input(text):
    shape, _, dtype = text.partition(":")
    dtype = dtype or "float32"
    try:
        dims = [int(s) for s in shape.split(",") if s.strip()]
    except ValueError:
        fail("--input '%s': expected a shape like 3,224,224 (without the batch), "
             "optionally :int64" % text)
    if dtype not in ("float32", "int64"):
        fail("--input '%s': the dtype must be float32 or int64" % text)
    return dims, dtype


def make_inputs(specs, batch, model, seed):
    g = torch.Generator().manual_seed(seed)
    vocab = min((m.num_embeddings for m in model.modules() if isinstance(m, nn.Embedding)),
                default=2)
    out = []
    for dims, dtype in specs:
        if dtype == "int64":
            out.append(torch.randint(0, vocab, [batch] + dims, generator=g))
        else:
            out.append(torch.randn([batch] + dims, generator=g))
    return out


def flatten_outputs(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flatten_outputs(v)]
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--leaves", default="", help="comma-separated module class names")
    ap.add_argument("--out", required=True, help="the folder to write")
    a = ap.parse_args()
    leaves = set(x for x in a.leaves.split(",") if x)
    specs = [parse_input(t) for t in a.input]

    progress("building %s" % a.source)
    torch.manual_seed(0)
    model = build_module(a.source)
    model.eval()
    modules = describe_modules(model, leaves)
    if modules[""]["kind"] == "leaf":
        modules[""]["kind"] = "root"
    root_params = forward_parameters(model)
    required = [p for p in root_params if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if not specs:
        fail("give the shape of each input of %s.forward(%s) without the batch, one --input "
             "each (e.g. --input 3,224,224, or --input 12:int64 for tokens)"
             % (type(model).__name__, ", ".join(p.name for p in root_params)))
    if len(specs) < len(required):
        fail("%s.forward takes %d inputs (%s); %d --input given" % (
            type(model).__name__, len(required), ", ".join(p.name for p in required),
            len(specs)))

    runner = Runner(model, modules)
    outputs = None
    io = {}
    for i, batch in enumerate(BATCHES):
        inputs = make_inputs(specs, batch, model, seed=i)
        try:
            out = runner.run(inputs)
        except SystemExit:
            raise
        except Exception as e:  # noqa: BLE001
            fail("running the traced model on inputs of shape %s failed: %s" % (
                ", ".join(str(list(t.shape)) for t in inputs), describe_exception(e)))
        if i == 0:
            outputs = flatten_outputs(out)
            for k, t in enumerate(inputs):
                io["input.%d" % k] = t
            for k, t in enumerate(outputs):
                io["output.%d" % k] = t.detach().contiguous()
            with torch.no_grad():
                direct = flatten_outputs(model(*inputs))
            for k, (t, d) in enumerate(zip(outputs, direct)):
                if not torch.allclose(t, d, rtol=1e-4, atol=1e-5):
                    fail("the traced graph's output %d differs from the module's own forward "
                         "(largest difference %g): its forward does something tracing does not "
                         "see" % (k, float((t - d).abs().max())))

    graphs = {}
    for path, gm in runner.traced.items():
        nodes = []
        for n in gm.graph.nodes:
            nodes.append({
                "name": n.name, "op": n.op, "target": target_name(n),
                "args": encode_arg(list(n.args)), "kwargs": encode_arg(dict(n.kwargs))["dict"],
                "values": runner.values.get((path, n.name), []),
                "source": source_line(n),
            })
        graphs[path] = nodes
    uncalled = [p for p, m in modules.items() if m["kind"] in ("custom",) and p not in graphs]
    for p in uncalled:
        modules[p]["uncalled"] = True

    os.makedirs(a.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(a.out, "state_dict.pt"))
    torch.save(io, os.path.join(a.out, "io.pt"))
    trace = {"format": 1, "torch": torch.__version__, "python": sys.version.split()[0],
             "source": a.source, "class": type(model).__name__, "batches": list(BATCHES),
             "inputs": [{"shape": d, "dtype": t} for d, t in specs],
             "modules": modules, "graphs": graphs}
    with open(os.path.join(a.out, "trace.json"), "w") as f:
        json.dump(trace, f)
    progress("traced %d modules" % len(graphs))


if __name__ == "__main__":
    main()

// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <typeinfo>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"

namespace nns::nn {

namespace {

// The process-wide hook tables of register_module_*.
struct GlobalHooks {
  std::shared_ptr<HookTable<ForwardPreHook>> forward_pre =
      std::make_shared<HookTable<ForwardPreHook>>();
  std::shared_ptr<HookTable<ForwardHookEntry>> forward =
      std::make_shared<HookTable<ForwardHookEntry>>();
  std::shared_ptr<HookTable<BackwardPreHook>> backward_pre =
      std::make_shared<HookTable<BackwardPreHook>>();
  std::shared_ptr<HookTable<BackwardHook>> backward = std::make_shared<HookTable<BackwardHook>>();
  bool empty() const {
    return forward_pre->empty() && forward->empty() && backward_pre->empty() && backward->empty();
  }
};

GlobalHooks& global_hooks() {
  static GlobalHooks hooks;
  return hooks;
}

// "nns::nn::Linear" -> "Linear"; "Foo<a::B>" stays whole apart from its own namespace.
std::string class_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string full = status == 0 && demangled ? demangled : type.name();
  std::free(demangled);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < full.size(); ++i) {
    if (full[i] == '<') ++depth;
    if (full[i] == '>') --depth;
    if (depth == 0 && full[i] == ':' && full[i + 1] == ':') start = i + 2;
  }
  return full.substr(start);
}

// Points dst at src's data (PyTorch's `param.data = src`): the handle, its autograd state and
// everyone holding it stay; storage, layout and dtype become src's.
void set_data(const Tensor& dst, const Tensor& src) {
  TensorImpl* d = dst.impl();
  const TensorImpl* s = src.impl();
  d->storage = s->storage;
  d->sizes = s->sizes;
  d->strides = s->strides;
  d->storage_offset = s->storage_offset;
  d->dtype = s->dtype;
}

std::string join_quoted(const std::vector<std::string>& keys, const char* quote) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ", ";
    out += quote + keys[i] + quote;
  }
  return out;
}

std::string torch_size(const Shape& shape) {
  return "torch.Size(" + shape_str(shape) + ")";
}

// PyTorch's _addindent: indents every line but the first.
std::string add_indent(const std::string& text, int spaces) {
  std::string out;
  const std::string pad(static_cast<size_t>(spaces), ' ');
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

ModulePtr self_ptr(Module& m) {
  if (ModulePtr owned = m.weak_from_this().lock()) return owned;
  return ModulePtr(ModulePtr(), &m);  // non-owning: the caller keeps the module alive
}

// ---- Full backward hooks (torch/utils/hooks.py BackwardHook) ----------------------------------
// The inputs and the outputs of a module call each pass through an identity node. The output
// node sees the gradients w.r.t. the outputs first (and runs the backward pre hooks); the input
// node sees the gradients w.r.t. the inputs and runs the backward hooks, which may replace them.
struct BackwardHookState {
  ModulePtr module;
  std::vector<BackwardHook> hooks;
  std::vector<BackwardPreHook> pre_hooks;
  size_t n_inputs = 0;
  bool inputs_wrapped = false;
  std::optional<std::vector<Tensor>> grad_outputs;

  std::vector<Tensor> on_grad_outputs(std::vector<Tensor> grads) {
    for (BackwardPreHook& hook : pre_hooks) {
      std::optional<std::vector<Tensor>> out = hook(*module, grads);
      if (!out) continue;
      check_count(*out, grads.size(), "Backward pre hook", "grad_output", "output");
      check_shapes(*out, grads, "backward pre hook", "grad_output");
      grads = std::move(*out);
    }
    if (!inputs_wrapped) {
      // No input requires grad: the hooks see no input gradients and may return none.
      std::vector<Tensor> none(n_inputs);
      for (BackwardHook& hook : hooks) {
        std::optional<std::vector<Tensor>> out = hook(*module, none, grads);
        if (!out) continue;
        for (const Tensor& g : *out) {
          if (g.defined()) {
            throw AutogradError(
                "Backward hook for Modules where no input requires gradient should always "
                "return None or None for all gradients (module " +
                module->name() + ")");
          }
        }
      }
      return grads;
    }
    grad_outputs = grads;
    return grads;
  }

  std::vector<Tensor> on_grad_inputs(std::vector<Tensor> grads) {
    // Gradient that reached the inputs without passing through the outputs: nothing to report.
    if (!grad_outputs) return grads;
    for (BackwardHook& hook : hooks) {
      std::optional<std::vector<Tensor>> out = hook(*module, grads, *grad_outputs);
      if (!out) continue;
      check_count(*out, grads.size(), "Backward hook", "grad_input", "input");
      check_shapes(*out, grads, "backward hook", "grad_input");
      grads = std::move(*out);
    }
    grad_outputs.reset();
    return grads;
  }

  void check_count(const std::vector<Tensor>& got, size_t expected, const char* what,
                   const char* kind, const char* per) const {
    if (got.size() != expected) {
      throw AutogradError(
          std::string(what) + " of " + module->name() + " returned an invalid number of " + kind +
          ", got " + std::to_string(got.size()) + ", but expected " + std::to_string(expected) +
          "; return one gradient (or an undefined tensor) per " + per + " of the module");
    }
  }
  void check_shapes(const std::vector<Tensor>& got, const std::vector<Tensor>& before,
                    const char* what, const char* kind) const {
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].defined() && before[i].defined() && got[i].sizes() != before[i].sizes()) {
        throw ShapeError(std::string(what) + " of " + module->name() + " changed the shape of " +
                         kind + "[" + std::to_string(i) + "] from " + shape_str(before[i].sizes()) +
                         " to " + shape_str(got[i].sizes()));
      }
    }
  }
};

struct BackwardHookFunctionBackward : Node {
  std::shared_ptr<BackwardHookState> state;
  bool output_side = false;
  std::vector<bool> differentiable;

  std::string name() const override { return "BackwardHookFunctionBackward"; }
  variable_list apply(variable_list&& grads) override {
    grads.resize(differentiable.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!differentiable[i]) grads[i] = Tensor();
    }
    return output_side ? state->on_grad_outputs(std::move(grads))
                       : state->on_grad_inputs(std::move(grads));
  }
};

// Passes the tensors that require grad through one identity node; the results are views, so
// modifying them in place is an error (as PyTorch's BackwardHookFunction outputs are).
std::vector<Tensor> wrap(const std::vector<Tensor>& tensors,
                         const std::shared_ptr<BackwardHookState>& state, bool output_side) {
  auto node = make_node<BackwardHookFunctionBackward>(tensors);
  if (!node) return tensors;
  node->state = state;
  node->output_side = output_side;
  std::vector<Tensor> out = tensors;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const bool diff = tensors[i].defined() && tensors[i].requires_grad();
    node->differentiable.push_back(diff);
    if (!diff) continue;
    const TensorImpl& t = *tensors[i].impl();
    auto impl =
        std::make_shared<TensorImpl>(t.storage, t.sizes, t.strides, t.storage_offset, t.dtype);
    impl->is_view = true;
    out[i] = Tensor(std::move(impl));
    set_history(out[i], node, static_cast<uint32_t>(i));
  }
  return out;
}

}  // namespace

Tensor Parameter(const Tensor& data, bool requires_grad) {
  if (!data.defined()) {
    throw ValueError(
        "Parameter: data is an undefined tensor; pass a tensor (or register an "
        "undefined tensor directly to reserve the name)");
  }
  Tensor p = data.detach();
  p.impl()->is_view = false;
  p.requires_grad_(requires_grad);
  return p;
}

std::string IncompatibleKeys::str() const {
  if (missing_keys.empty() && unexpected_keys.empty()) return "<All keys matched successfully>";
  return "_IncompatibleKeys(missing_keys=[" + join_quoted(missing_keys, "'") +
         "], unexpected_keys=[" + join_quoted(unexpected_keys, "'") + "])";
}

RemovableHandle register_module_forward_pre_hook(ForwardPreHook hook) {
  return global_hooks().forward_pre->add(std::move(hook));
}
RemovableHandle register_module_forward_hook(ForwardHook hook, bool always_call) {
  return global_hooks().forward->add({std::move(hook), always_call});
}
RemovableHandle register_module_full_backward_pre_hook(BackwardPreHook hook) {
  return global_hooks().backward_pre->add(std::move(hook));
}
RemovableHandle register_module_full_backward_hook(BackwardHook hook) {
  return global_hooks().backward->add(std::move(hook));
}

// ---- Module -----------------------------------------------------------------------------------

Module::Module(std::string name) : name_(std::move(name)) {}

std::string Module::name() const {
  return name_.empty() ? class_name(typeid(*this)) : name_;
}

std::vector<Tensor> Module::forward(const std::vector<Tensor>& inputs) {
  if (inputs.size() != 1) {
    throw ValueError(name() + ".forward: got " + std::to_string(inputs.size()) +
                     " inputs, but this module takes one tensor; override "
                     "forward(const std::vector<Tensor>&) to take several");
  }
  return {forward(inputs[0])};
}

Tensor Module::forward(const Tensor&) {
  throw ValueError("Module [" + name() +
                   "] is missing the required \"forward\" function; "
                   "override forward(const Tensor&) or forward(const std::vector<Tensor>&)");
}

std::vector<Tensor> Module::operator()(const std::vector<Tensor>& inputs) {
  if (forward_pre_hooks_->empty() && forward_hooks_->empty() && backward_pre_hooks_->empty() &&
      backward_hooks_->empty() && global_hooks().empty()) {
    return forward(inputs);
  }
  return call_with_hooks(inputs);
}

Tensor Module::operator()(const Tensor& input) {
  std::vector<Tensor> out = (*this)(std::vector<Tensor>{input});
  if (out.size() != 1) {
    throw ValueError(name() + ": forward returned " + std::to_string(out.size()) +
                     " tensors; call the module with a std::vector<Tensor> to get them all");
  }
  return out[0];
}

// PyTorch's _call_impl order: global then own pre hooks, input wrapping for backward hooks,
// forward, global then own forward hooks, output wrapping.
std::vector<Tensor> Module::call_with_hooks(const std::vector<Tensor>& inputs) {
  GlobalHooks& global = global_hooks();
  // The caller's inputs are read in place until a pre-hook or the backward wrapping replaces
  // them: a module with forward hooks only (a probe's) pays no copy per call.
  std::vector<Tensor> replaced;
  const std::vector<Tensor>* args = &inputs;
  for (auto* table : {global.forward_pre.get(), forward_pre_hooks_.get()}) {
    if (table->empty()) continue;
    for (const auto& [id, hook] : *table->snapshot()) {
      if (std::optional<std::vector<Tensor>> r = hook(*this, *args)) {
        replaced = std::move(*r);
        args = &replaced;
      }
    }
  }

  std::shared_ptr<BackwardHookState> bw;
  if (!backward_hooks_->empty() || !backward_pre_hooks_->empty() || !global.backward->empty() ||
      !global.backward_pre->empty()) {
    bw = std::make_shared<BackwardHookState>();
    bw->module = self_ptr(*this);
    for (auto* table : {global.backward.get(), backward_hooks_.get()}) {
      for (const auto& [id, hook] : *table->snapshot()) bw->hooks.push_back(hook);
    }
    for (auto* table : {global.backward_pre.get(), backward_pre_hooks_.get()}) {
      for (const auto& [id, hook] : *table->snapshot()) bw->pre_hooks.push_back(hook);
    }
    bw->n_inputs = args->size();
    std::vector<Tensor> wrapped = wrap(*args, bw, /*output_side=*/false);
    for (size_t i = 0; i < args->size(); ++i) {
      bw->inputs_wrapped = bw->inputs_wrapped || !wrapped[i].is_same((*args)[i]);
    }
    replaced = std::move(wrapped);
    args = &replaced;
  }

  // The global forward hooks run before the module's own.
  const std::shared_ptr<const HookTable<ForwardHookEntry>::Entries> tables[] = {
      global.forward->snapshot(), forward_hooks_->snapshot()};
  std::vector<Tensor> result;
  size_t table = 0;
  size_t next_hook = 0;
  try {
    result = forward(*args);
    for (; table < 2; ++table, next_hook = 0) {
      const auto& hooks = *tables[table];
      for (; next_hook < hooks.size(); ++next_hook) {
        if (auto r = hooks[next_hook].second.fn(*this, *args, result)) result = std::move(*r);
      }
    }
  } catch (...) {
    // always_call hooks that have not run yet still run (with no outputs); their own errors
    // are dropped so that the original one reaches the caller.
    for (; table < 2; ++table, next_hook = 0) {
      const auto& hooks = *tables[table];
      for (; next_hook < hooks.size(); ++next_hook) {
        if (!hooks[next_hook].second.always_call) continue;
        try {
          hooks[next_hook].second.fn(*this, *args, {});
        } catch (...) {
        }
      }
    }
    throw;
  }
  if (bw) result = wrap(result, bw, /*output_side=*/true);
  return result;
}

// ---- Registration -----------------------------------------------------------------------------

void Module::check_name(const std::string& name, const char* kind, const char* what,
                        const OrderedDict<Tensor>* own_tensors, const char* caller) const {
  if (name.empty()) {
    throw KeyError(std::string(caller) + ": " + kind + " name can't be empty string \"\"");
  }
  if (name.find('.') != std::string::npos) {
    throw KeyError(std::string(caller) + ": " + kind + " name can't contain \".\", got: \"" + name +
                   "\"; nest a submodule to make a dotted path");
  }
  auto clash = [&](const char* other) {
    throw KeyError(std::string(caller) + ": attribute '" + name + "' already exists as a " + other +
                   " of " + this->name() + "; pick another name for the " + what);
  };
  if (own_tensors != &parameters_ && parameters_.contains(name)) clash("Parameter");
  if (own_tensors != &buffers_ && buffers_.contains(name)) clash("Buffer");
  if (own_tensors != nullptr && children_.contains(name)) clash("Submodule");
}

Tensor Module::register_parameter(const std::string& name, const Tensor& param) {
  check_name(name, "parameter", "Parameter", &parameters_, "register_parameter");
  if (param.defined() && !param.is_leaf()) {
    throw ValueError("register_parameter: Cannot assign non-leaf Tensor to parameter '" + name +
                     "'. Model parameters must be created explicitly. To express '" + name +
                     "' as a function of another Tensor, compute the value in the forward() "
                     "method.");
  }
  parameters_.insert_or_assign(name, param);
  return param;
}

Tensor Module::register_buffer(const std::string& name, const Tensor& tensor, bool persistent) {
  check_name(name, "buffer", "Buffer", &buffers_, "register_buffer");
  buffers_.insert_or_assign(name, tensor);
  if (persistent) {
    non_persistent_buffers_.erase(name);
  } else {
    non_persistent_buffers_.insert(name);
  }
  return tensor;
}

ModulePtr Module::register_module(const std::string& name, ModulePtr module) {
  check_name(name, "module", "Submodule", nullptr, "register_module");
  if (module.get() == this) {
    throw ValueError("register_module: a module cannot be its own child ('" + name + "')");
  }
  children_.insert_or_assign(name, module);
  return module;
}

void Module::replace_children(OrderedDict<ModulePtr> children) {
  for (const auto& item : children)
    check_name(item.key(), "module", "Submodule", nullptr, "register_module");
  children_ = std::move(children);
}

void Module::replace_parameters(OrderedDict<Tensor> parameters) {
  for (const auto& item : parameters) {
    check_name(item.key(), "parameter", "Parameter", &parameters_, "register_parameter");
  }
  parameters_ = std::move(parameters);
}

bool Module::is_persistent_buffer(const std::string& name) const {
  return buffers_.contains(name) && !non_persistent_buffers_.count(name);
}

ModulePtr Module::get_submodule(const std::string& target) {
  ModulePtr mod = self_ptr(*this);
  if (target.empty()) return mod;
  size_t start = 0;
  while (true) {
    const size_t dot = target.find('.', start);
    const std::string item = target.substr(start, dot == std::string::npos ? dot : dot - start);
    const ModulePtr* child = mod->children_.find(item);
    if (!child) {
      if (mod->parameters_.contains(item) || mod->buffers_.contains(item)) {
        throw KeyError("get_submodule: `" + item + "` is not an nn.Module (in \"" + target + "\")");
      }
      throw KeyError("get_submodule: " + mod->name() + " has no attribute `" + item + "` (in \"" +
                     target + "\")");
    }
    if (!*child) {
      throw KeyError("get_submodule: `" + item +
                     "` is not an nn.Module (it is a null "
                     "reservation, in \"" +
                     target + "\")");
    }
    mod = *child;
    if (dot == std::string::npos) return mod;
    start = dot + 1;
  }
}

namespace {
std::pair<std::string, std::string> rpartition(const std::string& target) {
  const size_t dot = target.rfind('.');
  if (dot == std::string::npos) return {"", target};
  return {target.substr(0, dot), target.substr(dot + 1)};
}
}  // namespace

Tensor Module::get_parameter(const std::string& target) {
  auto [path, leaf] = rpartition(target);
  ModulePtr mod = get_submodule(path);
  const Tensor* p = mod->parameters_.find(leaf);
  if (!p) {
    if (mod->buffers_.contains(leaf) || mod->children_.contains(leaf)) {
      throw KeyError("get_parameter: `" + leaf + "` is not an nn.Parameter (in \"" + target +
                     "\")");
    }
    throw KeyError("get_parameter: " + mod->name() + " has no attribute `" + leaf + "` (in \"" +
                   target + "\")");
  }
  return *p;
}

Tensor Module::get_buffer(const std::string& target) {
  auto [path, leaf] = rpartition(target);
  ModulePtr mod = get_submodule(path);
  const Tensor* b = mod->buffers_.find(leaf);
  if (!b) {
    if (mod->parameters_.contains(leaf) || mod->children_.contains(leaf)) {
      throw KeyError("get_buffer: `" + leaf + "` is not a buffer (in \"" + target + "\")");
    }
    throw KeyError("get_buffer: " + mod->name() + " has no attribute `" + leaf + "` (in \"" +
                   target + "\")");
  }
  return *b;
}

// ---- Iteration --------------------------------------------------------------------------------

NamedList<ModulePtr> Module::named_children() const {
  NamedList<ModulePtr> out;
  std::unordered_set<const Module*> memo;
  for (const auto& item : children_) {
    if (item.value() && memo.insert(item.value().get()).second) {
      out.emplace_back(item.key(), item.value());
    }
  }
  return out;
}

std::vector<ModulePtr> Module::children() const {
  std::vector<ModulePtr> out;
  for (auto& [name, m] : named_children()) out.push_back(m);
  return out;
}

void Module::named_modules_into(NamedList<ModulePtr>& out, std::unordered_set<const Module*>& memo,
                                const std::string& prefix, bool remove_duplicate, ModulePtr self) {
  if (memo.count(this)) return;
  if (remove_duplicate) memo.insert(this);
  out.emplace_back(prefix, std::move(self));
  for (const auto& item : children_) {
    if (!item.value()) continue;
    const std::string child_prefix = prefix.empty() ? item.key() : prefix + "." + item.key();
    item.value()->named_modules_into(out, memo, child_prefix, remove_duplicate, item.value());
  }
}

NamedList<ModulePtr> Module::named_modules(const std::string& prefix, bool remove_duplicate) {
  NamedList<ModulePtr> out;
  std::unordered_set<const Module*> memo;
  named_modules_into(out, memo, prefix, remove_duplicate, self_ptr(*this));
  return out;
}

std::vector<ModulePtr> Module::modules() {
  std::vector<ModulePtr> out;
  for (auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}

namespace {
// PyTorch's _named_members over the modules' own dicts.
template <class Get>
NamedList<Tensor> named_members(const Module& root, const std::string& prefix, bool recurse,
                                bool remove_duplicate, Get get) {
  NamedList<ModulePtr> mods;
  if (recurse) {
    mods = const_cast<Module&>(root).named_modules(prefix, remove_duplicate);
  } else {
    mods.emplace_back(prefix, ModulePtr(ModulePtr(), const_cast<Module*>(&root)));
  }
  NamedList<Tensor> out;
  std::unordered_set<const TensorImpl*> memo;
  for (auto& [module_prefix, module] : mods) {
    for (const auto& item : get(*module)) {
      const Tensor& v = item.value();
      if (!v.defined() || memo.count(v.impl())) continue;
      if (remove_duplicate) memo.insert(v.impl());
      out.emplace_back(module_prefix.empty() ? item.key() : module_prefix + "." + item.key(), v);
    }
  }
  return out;
}
}  // namespace

NamedList<Tensor> Module::named_parameters(const std::string& prefix, bool recurse,
                                           bool remove_duplicate) const {
  return named_members(
      *this, prefix, recurse, remove_duplicate,
      [](const Module& m) -> const OrderedDict<Tensor>& { return m.parameters_dict(); });
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, p] : named_parameters("", recurse)) out.push_back(p);
  return out;
}

NamedList<Tensor> Module::named_buffers(const std::string& prefix, bool recurse,
                                        bool remove_duplicate) const {
  return named_members(
      *this, prefix, recurse, remove_duplicate,
      [](const Module& m) -> const OrderedDict<Tensor>& { return m.buffers_dict(); });
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, b] : named_buffers("", recurse)) out.push_back(b);
  return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (const ModulePtr& child : children()) child->apply(fn);
  fn(*this);
  return *this;
}

// ---- Modes, gradients, conversion -------------------------------------------------------------

Module& Module::train(bool mode) {
  training_ = mode;
  for (const ModulePtr& child : children()) child->train(mode);
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  for (const Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      NoGradGuard no_grad;
      g.zero_();
    }
  }
}

Module& Module::requires_grad_(bool requires_grad) {
  for (Tensor p : parameters()) p.requires_grad_(requires_grad);
  return *this;
}

void Module::convert(const std::function<Tensor(const Tensor&)>& fn) {
  // Every tensor is converted before any is changed, so a failure (a device that is not
  // there) leaves the module as it was.
  std::vector<std::pair<Tensor, Tensor>> converted;
  std::unordered_set<const TensorImpl*> seen;
  NoGradGuard no_grad;
  auto add = [&](const Tensor& t) {
    if (!t.defined() || !seen.insert(t.impl()).second) return;
    Tensor c = fn(t);
    if (!c.is_same(t)) converted.emplace_back(t, std::move(c));
  };
  // Parameters (and their grads) keep their handles, as PyTorch's `param.data = ...` does.
  // Buffers change in place too, where PyTorch replaces them: a C++ module keeps handles to
  // its buffers in members, which must keep naming the module's buffers.
  for (const auto& [name, p] : named_parameters("", true, false)) {
    add(p);
    add(p.grad());
  }
  for (const auto& [name, b] : named_buffers("", true, false)) add(b);
  for (auto& [target, value] : converted) set_data(target, value);
}

namespace {
void check_module_dtype(Dtype dtype) {
  if (!is_floating_point(dtype)) {
    throw DtypeError(
        "nn.Module.to only accepts floating point or complex dtypes, but got "
        "desired dtype=" +
        dtype_name(dtype) + "; convert single tensors with Tensor::to instead");
  }
}
}  // namespace

Module& Module::to(Device device) {
  convert([device](const Tensor& t) { return t.to(device); });
  return *this;
}

Module& Module::to(Dtype dtype) {
  check_module_dtype(dtype);
  convert([dtype](const Tensor& t) { return t.is_floating_point() ? t.to(dtype) : t; });
  return *this;
}

Module& Module::to(Device device, Dtype dtype) {
  check_module_dtype(dtype);
  convert([device, dtype](const Tensor& t) {
    Tensor moved = t.to(device);
    return moved.is_floating_point() ? moved.to(dtype) : moved;
  });
  return *this;
}

// ---- State dict -------------------------------------------------------------------------------

void Module::collect_state(StateDict& out, const std::string& prefix, bool keep_vars) {
  for (const auto& item : parameters_) {
    if (item.value().defined()) {
      out.insert_or_assign(prefix + item.key(), keep_vars ? item.value() : item.value().detach());
    }
  }
  for (const auto& item : buffers_) {
    if (item.value().defined() && !non_persistent_buffers_.count(item.key())) {
      out.insert_or_assign(prefix + item.key(), keep_vars ? item.value() : item.value().detach());
    }
  }
  for (const auto& item : children_) {
    if (item.value()) item.value()->collect_state(out, prefix + item.key() + ".", keep_vars);
  }
  for (const auto& [id, hook] : *state_dict_hooks_->snapshot()) hook(*this, out, prefix);
}

StateDict Module::state_dict(const std::string& prefix, bool keep_vars) {
  StateDict out("Key");
  collect_state(out, prefix, keep_vars);
  return out;
}

namespace {
struct PendingLoad {
  Tensor target;
  Tensor source;
  bool is_parameter = false;
};

struct LoadContext {
  StateDict state;
  IncompatibleKeys keys;
  std::vector<std::string> error_msgs;
  std::vector<PendingLoad> pending;
};
}  // namespace

IncompatibleKeys Module::load_state_dict(const StateDict& state_dict, bool strict, bool assign) {
  LoadContext ctx{state_dict, {}, {}, {}};
  // PyTorch's load(): every module (a shared one under each of its names) checks its own
  // entries, then its children's; nothing is written until everything has been checked.
  std::function<void(Module&, const std::string&)> load = [&](Module& m,
                                                              const std::string& prefix) {
    for (const auto& [id, hook] : *m.load_pre_hooks_->snapshot()) hook(m, ctx.state, prefix);
    std::unordered_set<std::string> local;
    auto check = [&](const std::string& name, const Tensor& current, bool is_parameter) {
      if (!current.defined()) return;
      local.insert(name);
      const std::string key = prefix + name;
      const Tensor* found = ctx.state.find(key);
      if (!found) {
        ctx.keys.missing_keys.push_back(key);
        return;
      }
      Tensor input = *found;
      if (!input.defined()) {
        ctx.error_msgs.push_back("While copying the parameter named \"" + key +
                                 "\", expected torch.Tensor or Tensor-like object from "
                                 "checkpoint but received None");
        return;
      }
      // Checkpoints from PyTorch 0.3 stored scalars as 1-element vectors.
      if (current.dim() == 0 && input.dim() == 1) input = input[0];
      if (input.sizes() != current.sizes()) {
        ctx.error_msgs.push_back("size mismatch for " + key + ": copying a param with shape " +
                                 torch_size(input.sizes()) +
                                 " from checkpoint, the shape in current model is " +
                                 torch_size(current.sizes()) + ".");
        return;
      }
      ctx.pending.push_back({current, input, is_parameter});
    };
    for (const auto& item : m.parameters_) check(item.key(), item.value(), true);
    for (const auto& item : m.buffers_) {
      if (!m.non_persistent_buffers_.count(item.key())) check(item.key(), item.value(), false);
    }
    for (const auto& item : ctx.state) {
      const std::string& key = item.key();
      if (key.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string rest = key.substr(prefix.size());
      const std::string first = rest.substr(0, rest.find('.'));
      if (!m.children_.contains(first) && !local.count(first)) {
        ctx.keys.unexpected_keys.push_back(key);
      }
    }
    for (const auto& item : m.children_) {
      if (item.value()) load(*item.value(), prefix + item.key() + ".");
    }
    for (const auto& [id, hook] : *m.load_post_hooks_->snapshot()) hook(m, ctx.keys);
  };
  load(*this, "");

  std::vector<std::string> errors;
  if (strict && !ctx.keys.missing_keys.empty()) {
    errors.push_back("Missing key(s) in state_dict: " + join_quoted(ctx.keys.missing_keys, "\"") +
                     ". ");
  }
  if (strict && !ctx.keys.unexpected_keys.empty()) {
    errors.push_back(
        "Unexpected key(s) in state_dict: " + join_quoted(ctx.keys.unexpected_keys, "\"") + ". ");
  }
  errors.insert(errors.end(), ctx.error_msgs.begin(), ctx.error_msgs.end());
  if (!errors.empty()) {
    std::string message = "Error(s) in loading state_dict for " + name() + ":";
    for (const std::string& e : errors) message += "\n\t" + e;
    throw StateDictError(message, ctx.keys, errors);
  }

  NoGradGuard no_grad;
  for (PendingLoad& p : ctx.pending) {
    if (assign) {
      // The module's tensor takes the loaded one's storage, dtype and device; parameters keep
      // their requires_grad (the handle, and so its autograd state, stays).
      set_data(p.target, p.source);
    } else {
      p.target.copy_(p.source.device() == p.target.device() ? p.source
                                                            : p.source.to(p.target.device()));
    }
  }
  return ctx.keys;
}

// ---- Hooks ------------------------------------------------------------------------------------

RemovableHandle Module::register_forward_pre_hook(ForwardPreHook hook, bool prepend) {
  return forward_pre_hooks_->add(std::move(hook), prepend);
}
RemovableHandle Module::register_forward_hook(ForwardHook hook, bool prepend, bool always_call) {
  return forward_hooks_->add({std::move(hook), always_call}, prepend);
}
RemovableHandle Module::register_full_backward_pre_hook(BackwardPreHook hook, bool prepend) {
  return backward_pre_hooks_->add(std::move(hook), prepend);
}
RemovableHandle Module::register_full_backward_hook(BackwardHook hook, bool prepend) {
  return backward_hooks_->add(std::move(hook), prepend);
}
size_t Module::hook_count() const {
  return forward_pre_hooks_->size() + forward_hooks_->size() + backward_pre_hooks_->size() +
         backward_hooks_->size();
}
RemovableHandle Module::register_state_dict_hook(StateDictHook hook) {
  return state_dict_hooks_->add(std::move(hook));
}
RemovableHandle Module::register_load_state_dict_pre_hook(LoadStateDictPreHook hook) {
  return load_pre_hooks_->add(std::move(hook));
}
RemovableHandle Module::register_load_state_dict_post_hook(LoadStateDictPostHook hook) {
  return load_post_hooks_->add(std::move(hook));
}

// ---- Printing ---------------------------------------------------------------------------------

std::string Module::repr() const {
  std::vector<std::string> extra_lines;
  const std::string extra = extra_repr();
  if (!extra.empty()) {
    std::stringstream ss(extra);
    std::string line;
    while (std::getline(ss, line)) extra_lines.push_back(line);
  }
  std::vector<std::string> child_lines;
  for (const auto& item : children_) {
    const std::string child = item.value() ? item.value()->repr() : "None";
    child_lines.push_back("(" + item.key() + "): " + add_indent(child, 2));
  }
  std::string out = name() + "(";
  if (extra_lines.size() == 1 && child_lines.empty()) {
    out += extra_lines[0];
  } else if (!extra_lines.empty() || !child_lines.empty()) {
    out += "\n";
    for (const auto* lines : {&extra_lines, &child_lines}) {
      for (const std::string& line : *lines) out += "  " + line + "\n";
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& module) {
  return os << module.repr();
}

}  // namespace nns::nn

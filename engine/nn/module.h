// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Module: the base of every layer and model (torch.nn.Module). A module owns ordered
// parameters, buffers and child modules, each kept in an OrderedDict that knows what it holds
// ("Parameter", "Buffer", "Submodule"); it has a training flag, hook tables and a state dict.
// A custom module is a plain subclass that registers its members and overrides forward:
//
//   struct MyLinear : nns::nn::Module {
//     nns::Tensor weight, bias;
//     MyLinear(int64_t in, int64_t out) {
//       weight = register_parameter("weight", nns::nn::Parameter(nns::randn({in, out})));
//       bias = register_parameter("bias", nns::nn::Parameter(nns::randn({out})));
//     }
//     nns::Tensor forward(const nns::Tensor& input) override { return input.matmul(weight) + bias;
//     }
//   };
//   auto m = std::make_shared<MyLinear>(4, 3);
//   nns::Tensor y = (*m)(nns::randn({4}));   // runs the hooks, then forward
//
// Modules live in std::shared_ptr (the tree shares children); a module's repr names it by its
// C++ class, as PyTorch names it by its Python class.
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/autograd/hooks.h"
#include "engine/nn/ordered_dict.h"
#include "engine/tensor/tensor.h"

namespace nns::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;
// name -> tensor, in order: what state_dict() returns and load_state_dict() takes.
using StateDict = OrderedDict<Tensor>;
template <class T>
using NamedList = std::vector<std::pair<std::string, T>>;

// torch.nn.Parameter: a leaf over the same storage as data that requires grad (by default).
// Register it with Module::register_parameter to make it part of a module.
Tensor Parameter(const Tensor& data, bool requires_grad = true);

// ---- Hooks ----------------------------------------------------------------------------------
// Each returns replacement values, or std::nullopt to leave them as they are.
// fn(module, inputs) -> new inputs
using ForwardPreHook =
    std::function<std::optional<std::vector<Tensor>>(Module&, const std::vector<Tensor>& inputs)>;
// fn(module, inputs, outputs) -> new outputs
using ForwardHook = std::function<std::optional<std::vector<Tensor>>(
    Module&, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs)>;
// fn(module, grad_output) -> new grad_output (gradients w.r.t. the module's outputs)
using BackwardPreHook = std::function<std::optional<std::vector<Tensor>>(
    Module&, const std::vector<Tensor>& grad_output)>;
// fn(module, grad_input, grad_output) -> new grad_input (gradients w.r.t. the inputs)
using BackwardHook = std::function<std::optional<std::vector<Tensor>>(
    Module&, const std::vector<Tensor>& grad_input, const std::vector<Tensor>& grad_output)>;
// Runs after a module (and its children) added their entries; may edit them.
using StateDictHook =
    std::function<void(Module&, StateDict& state_dict, const std::string& prefix)>;
// Runs before a module's entries are read from the (mutable copy of the) incoming dict.
using LoadStateDictPreHook =
    std::function<void(Module&, StateDict& state_dict, const std::string& prefix)>;

// What load_state_dict found: keys the module has that the dict lacks, and the reverse.
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  // "<All keys matched successfully>" or
  // "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])", as PyTorch prints it.
  std::string str() const;
};
// Runs after the keys are matched, before strict mode decides; may edit the key lists.
using LoadStateDictPostHook = std::function<void(Module&, IncompatibleKeys& keys)>;

// A failed load_state_dict: the message lists every problem, in PyTorch's words.
class StateDictError : public Error {
 public:
  StateDictError(const std::string& message, IncompatibleKeys keys,
                 std::vector<std::string> error_msgs)
      : Error(message), keys(std::move(keys)), error_msgs(std::move(error_msgs)) {}
  IncompatibleKeys keys;
  std::vector<std::string> error_msgs;
};

struct ForwardHookEntry {
  ForwardHook fn;
  bool always_call = false;
};

// Hooks for every module (torch.nn.modules.module.register_module_*); they run before each
// module's own hooks of the same kind.
RemovableHandle register_module_forward_pre_hook(ForwardPreHook hook);
RemovableHandle register_module_forward_hook(ForwardHook hook, bool always_call = false);
RemovableHandle register_module_full_backward_pre_hook(BackwardPreHook hook);
RemovableHandle register_module_full_backward_hook(BackwardHook hook);

class Module : public std::enable_shared_from_this<Module> {
 public:
  // name: what repr prints; empty means the C++ class name (without namespaces).
  explicit Module(std::string name = "");
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  std::string name() const;
  bool is_training() const { return training_; }

  // ---- Forward ------------------------------------------------------------------------------
  // The computation. Override one: the single-tensor form suits most layers; the list form is
  // the type-erased one (any number of inputs and outputs). The default list form hands one
  // input to the single-tensor form.
  virtual std::vector<Tensor> forward(const std::vector<Tensor>& inputs);
  virtual Tensor forward(const Tensor& input);
  // Calling a module runs forward with its hooks (PyTorch's _call_impl).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  Tensor operator()(const Tensor& input);

  // ---- Registration -------------------------------------------------------------------------
  // An undefined tensor / null module reserves the name: it appears in no iterator and not in
  // the state dict. Registering a name again replaces the member of the same kind; a name
  // that is empty, contains '.', or is taken by another kind of member is a KeyError.
  Tensor register_parameter(const std::string& name, const Tensor& param);
  // A non-persistent buffer is left out of the state dict.
  Tensor register_buffer(const std::string& name, const Tensor& tensor, bool persistent = true);
  ModulePtr register_module(const std::string& name, ModulePtr module);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module(name, ModulePtr(module));
    return module;
  }
  ModulePtr add_module(const std::string& name, ModulePtr module) {
    return register_module(name, std::move(module));
  }

  // This module's own members (PyTorch's _parameters, _buffers, _modules), nulls included.
  const OrderedDict<Tensor>& parameters_dict() const { return parameters_; }
  const OrderedDict<Tensor>& buffers_dict() const { return buffers_; }
  const OrderedDict<ModulePtr>& children_dict() const { return children_; }
  bool is_persistent_buffer(const std::string& name) const;

  // "a.b.c" -> the submodule, parameter or buffer; a KeyError names the missing part.
  ModulePtr get_submodule(const std::string& target);
  Tensor get_parameter(const std::string& target);
  Tensor get_buffer(const std::string& target);

  // ---- Iteration (registration order) ---------------------------------------------------------
  std::vector<ModulePtr> children() const;
  NamedList<ModulePtr> named_children() const;
  // Pre-order, this module first under prefix; a shared instance once unless !remove_duplicate.
  // (A module not owned by a shared_ptr lists itself through a non-owning pointer.)
  std::vector<ModulePtr> modules();
  NamedList<ModulePtr> named_modules(const std::string& prefix = "", bool remove_duplicate = true);
  // A tied parameter once, under its first name (unless !remove_duplicate).
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedList<Tensor> named_parameters(const std::string& prefix = "", bool recurse = true,
                                     bool remove_duplicate = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedList<Tensor> named_buffers(const std::string& prefix = "", bool recurse = true,
                                  bool remove_duplicate = true) const;

  // fn on every submodule (children first), then on this module.
  Module& apply(const std::function<void(Module&)>& fn);

  // ---- Modes and gradients --------------------------------------------------------------------
  virtual Module& train(bool mode = true);
  Module& eval() { return train(false); }
  void zero_grad(bool set_to_none = true);
  Module& requires_grad_(bool requires_grad = true);

  // ---- Device and dtype -----------------------------------------------------------------------
  // Parameters (and their grads) change in place, so they stay the same tensors (an
  // optimizer made before holds them still); buffers are replaced. Dtype changes touch
  // floating-point tensors only; the target dtype must be floating (DtypeError otherwise).
  Module& to(Device device);
  Module& to(Dtype dtype);
  Module& to(Device device, Dtype dtype);
  Module& cpu() { return to(kCPU); }
  Module& cuda(int index = 0) { return to(Device(DeviceType::CUDA, index)); }
  // PyTorch's float() and double(): the C++ keywords need the underscore.
  Module& float_() { return to(kFloat32); }
  Module& double_() { return to(kFloat64); }
  Module& half() { return to(kFloat16); }
  Module& bfloat16() { return to(kBFloat16); }

  // ---- State dict -----------------------------------------------------------------------------
  // Own parameters, own persistent buffers, then each child under "child.", nulls left out.
  // Values are detached (same storage) unless keep_vars.
  StateDict state_dict(const std::string& prefix = "", bool keep_vars = false);
  // Checks every entry first and changes nothing when anything is wrong: a size mismatch
  // always, missing or unexpected keys when strict, raise one StateDictError listing them all.
  // assign=false copies into the existing tensors (their dtype and device stay);
  // assign=true takes the given tensors (parameters keep their requires_grad).
  IncompatibleKeys load_state_dict(const StateDict& state_dict, bool strict = true,
                                   bool assign = false);

  // ---- Hooks ----------------------------------------------------------------------------------
  RemovableHandle register_forward_pre_hook(ForwardPreHook hook, bool prepend = false);
  // always_call: the hook runs even when forward throws (with no outputs; the error goes on).
  RemovableHandle register_forward_hook(ForwardHook hook, bool prepend = false,
                                        bool always_call = false);
  RemovableHandle register_full_backward_pre_hook(BackwardPreHook hook, bool prepend = false);
  RemovableHandle register_full_backward_hook(BackwardHook hook, bool prepend = false);
  RemovableHandle register_state_dict_hook(StateDictHook hook);
  RemovableHandle register_load_state_dict_pre_hook(LoadStateDictPreHook hook);
  RemovableHandle register_load_state_dict_post_hook(LoadStateDictPostHook hook);
  // The forward pre, forward, backward pre and backward hooks on this module (process-wide
  // ones not counted): a tool that placed hooks checks with it that it removed them all.
  size_t hook_count() const;

  // ---- Printing -------------------------------------------------------------------------------
  // PyTorch's repr: Name(extra) or Name(\n  (child): ...\n).
  std::string repr() const;
  // The text inside the parentheses, e.g. "in_features=4, out_features=3, bias=True".
  virtual std::string extra_repr() const { return ""; }

 protected:
  // Reorders or renames children for containers (Sequential renumbering): the new children
  // replace the old ones; names are checked as in register_module.
  void replace_children(OrderedDict<ModulePtr> children);
  // Same for parameters (ParameterList renumbering).
  void replace_parameters(OrderedDict<Tensor> parameters);
  bool training_ = true;

 private:
  template <class Fn>
  using Table = std::shared_ptr<HookTable<Fn>>;

  void check_name(const std::string& name, const char* kind, const char* what,
                  const OrderedDict<Tensor>* own_tensors, const char* caller) const;
  std::vector<Tensor> call_with_hooks(const std::vector<Tensor>& inputs);
  void collect_state(StateDict& out, const std::string& prefix, bool keep_vars);
  void convert(const std::function<Tensor(const Tensor&)>& fn);
  void named_modules_into(NamedList<ModulePtr>& out, std::unordered_set<const Module*>& memo,
                          const std::string& prefix, bool remove_duplicate, ModulePtr self);

  std::string name_;
  OrderedDict<Tensor> parameters_{"Parameter"};
  OrderedDict<Tensor> buffers_{"Buffer"};
  std::unordered_set<std::string> non_persistent_buffers_;
  OrderedDict<ModulePtr> children_{"Submodule"};

  Table<ForwardPreHook> forward_pre_hooks_ = std::make_shared<HookTable<ForwardPreHook>>();
  Table<ForwardHookEntry> forward_hooks_ = std::make_shared<HookTable<ForwardHookEntry>>();
  Table<BackwardPreHook> backward_pre_hooks_ = std::make_shared<HookTable<BackwardPreHook>>();
  Table<BackwardHook> backward_hooks_ = std::make_shared<HookTable<BackwardHook>>();
  Table<StateDictHook> state_dict_hooks_ = std::make_shared<HookTable<StateDictHook>>();
  Table<LoadStateDictPreHook> load_pre_hooks_ = std::make_shared<HookTable<LoadStateDictPreHook>>();
  Table<LoadStateDictPostHook> load_post_hooks_ =
      std::make_shared<HookTable<LoadStateDictPostHook>>();
};

std::ostream& operator<<(std::ostream& os, const Module& module);

}  // namespace nns::nn

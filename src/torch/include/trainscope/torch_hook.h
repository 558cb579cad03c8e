// TorchHook: trainscope for LibTorch (C++) training programs, on top of trainscope::Hook.
//
// It names tensors as trainscope.pytorch (and smdebug.pytorch) do, so a trial written by a C++
// trainer reads like one written from Python: parameters "<ModuleClass>_<parameter path>"
// ("Net_fc1.weight"), gradients "gradient/Net_fc1.weight", losses "<name>_output_<i>"
// ("loss_output_0"), scalars "scalar/<name>". Collections, save configs, reductions, modes,
// workers and smdebug's JSON configuration are the C++ hook's (trainscope/hook.h).
//
// Usage:
//   TS_ASSIGN_OR_RETURN(auto hook, trainscope::TorchHook::Create(config));
//   TS_RETURN_IF_ERROR(hook->RegisterModule(*net));  // parameters and gradients of net, children
//   for (...) {
//     trainscope::TorchHook::StepScope step(*hook);   // step boundary (or hook->Step())
//     if (hook->StopRequested()) break;        // a rule asked to stop (Hook's stop requests)
//     auto loss = torch::nn::functional::cross_entropy(net->forward(x), y);
//     (void)hook->SaveLoss(loss);              // "loss_output_0", collection "losses"; fails
//                                              // open (the first error: printed, and Close's)
//     optimizer.zero_grad();
//     loss.backward();                         // gradients saved by tensor hooks
//     optimizer.step();
//   }
//   TS_RETURN_IF_ERROR(hook->Close());         // the first error seen, if any
//
// Steps: LibTorch modules have no forward hooks, so steps are explicit: Step() (or StepScope)
// ends the previous step and begins the next. On a saving step it saves every registered
// parameter at once, so a parameter's value at step s is its value when step s began (before that
// step's optimizer update), as in trainscope.pytorch. Gradients are saved when backward computes
// them, into the step in progress.
//
// Names: a module registered as `name` (default: its class name without namespaces and without a
// TORCH_MODULE "Impl" suffix, e.g. "Net" for NetImpl) gives "<name>_<path>" for each parameter,
// path as named_parameters() says ("fc1.weight", "layers.0.bias"). A parameter shared by several
// paths is saved once (its first path), as Python's named_parameters() does. Parameters with
// requires_grad() == false when registered (frozen) get no gradient hook and no gradient; the
// trial records which parameters are trainable and which frozen (_meta.parameters,
// docs/formats/trial.md), as the Python hook's does, so rules skip the frozen ones.
//
// Copies: a gradient on the CPU is handed to the writer without a copy (the hook keeps a reference
// to the tensor autograd passed it; autograd never writes into that tensor afterwards). Parameters
// are copied once (the optimizer changes them in place before the writer may have run); so are
// tensors given to SaveTensor/RecordTensorValue. A tensor on another device (CUDA) is copied to
// the host (.cpu()) when a raw value, a histogram or a TensorBoard scalar is due; when only
// reductions or the shape are due they are computed on the device (TorchTensorStats,
// trainscope/torch_stats.h) and one small vector crosses to the host.
//
// Fail open: nothing here throws into the training. Registration errors are returned. Any error
// while saving (a c10::Error from a conversion, a write error) is printed once to stderr with the
// tensor and step (unless config.quiet), then only counted (stats().errors); the Status returned
// says what happened.
//
// Thread safety: calls are serialised by an internal mutex, because autograd may run gradient
// hooks on its own threads (CUDA backward). Use one TorchHook per training process (per rank).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/hook.h"
#include "trainscope/hook_config.h"
#include "trainscope/modes.h"
#include "trainscope/reductions.h"
#include "trainscope/status.h"
#include "trainscope/tensor.h"
#include "trainscope/tensor_names.h"
#include "trainscope/torch_stats.h"

namespace trainscope {

// The name trainscope.pytorch gives a module: its class name ("torch::nn::LinearImpl" ->
// "Linear", "(anonymous namespace)::Net" -> "Net", "NetImpl" -> "Net"): module.name() through
// tensor_names::ModuleClassName (trainscope/tensor_names.h, where every tensor name is made).
std::string TorchModuleName(const ::torch::nn::Module& module);

// trainscope's DType for a torch dtype; kInvalid for dtypes trainscope cannot store (float8,
// quantized types...), which the hook converts to float32 first.
DType TorchDType(c10::ScalarType t);

// A view of a CPU tensor's elements (strided, no copy); valid while `t` lives and is unchanged.
// InvalidArgument for a tensor not on the CPU, an undefined tensor, or an unsupported dtype.
Result<TensorView> TorchTensorView(const at::Tensor& t);

// TorchTensorStats and TorchStatsOnDevice: trainscope/torch_stats.h.

class TorchHook {
 public:
  // Hook::Create(config) wrapped; the same configuration errors.
  static Result<std::unique_ptr<TorchHook>> Create(HookConfig config);
  // Hook::CreateFromJsonFile(path) wrapped (smdebug's JSON hook configuration).
  static Result<std::unique_ptr<TorchHook>> CreateFromJsonFile(const std::string& path = "");
  // Wraps a hook made elsewhere. REQUIRES: hook != nullptr.
  explicit TorchHook(std::unique_ptr<Hook> hook);
  // Removes the gradient hooks it added and Close()s.
  ~TorchHook();

  TorchHook(const TorchHook&) = delete;
  TorchHook& operator=(const TorchHook&) = delete;

  // The wrapped hook: collections(), config(), Prepare(), saved_collections(), worker()...
  // Calls made on it directly are not serialised with gradient hooks; make them between steps.
  Hook& hook();

  // Saves the parameters of `module` (and its submodules) at every saving step, and their
  // gradients when backward computes them. `name` replaces the class name in tensor names.
  // InvalidArgument if the module (or one of its parameters) is registered already.
  // The module's parameters are referenced, not the module: it may be destroyed first.
  Status RegisterModule(const ::torch::nn::Module& module, std::string name = "");
  template <typename M>
  Status RegisterModule(const ::torch::nn::ModuleHolder<M>& module, std::string name = "") {
    return RegisterModule(*module, std::move(name));
  }

  void SetMode(Mode m);
  Mode mode() const;
  int64_t step() const;       // global step; -1 before the first Step()
  int64_t mode_step() const;  // step of the current mode
  // Ends the current step and begins the next; on a saving step saves the registered parameters.
  // Returns is_saving_step(). When a stop was requested (trainscope/hook.h) it closes the hook
  // instead, as Close() does, and returns false.
  bool Step();
  // Ends the current step (its files are queued for writing); idempotent.
  void EndStep();
  bool is_saving_step() const;

  // Saves a loss as "<name>_output_<i>" (i counts the losses of that name in the step, from 0),
  // in collection "losses" whatever the name (smdebug's name for a registered loss module is its
  // class: SaveLoss(loss, "CrossEntropyLoss") gives "CrossEntropyLoss_output_0").
  Status SaveLoss(const at::Tensor& loss, std::string_view name = tensor_names::kDefaultLossName);
  // smdebug's record_tensor_value: "<name>_output_<i>", saved as the collections say.
  Status RecordTensorValue(std::string_view name, const at::Tensor& value);
  // Saves `value` under `name`, as the collections say (nothing on a step that saves nothing).
  Status SaveTensor(std::string_view name, const at::Tensor& value);
  // "scalar/<name>" at the current step, whatever the collections (Hook::SaveScalar).
  Status SaveScalar(std::string_view name, double value);
  // As above for a one-element tensor (synchronises with its device).
  Status SaveScalar(std::string_view name, const at::Tensor& value);

  // Hook::Flush(): every ended step is on disk. Returns the first error seen.
  Status Flush();
  // Ends the step, writes the collections, drains the writer, writes the end marker.
  // Idempotent; gradient hooks do nothing afterwards. Returns the first error seen.
  Status Close();

  // Hook::StopRequested() and Hook::stop_reason(): a Step() saw the trial's stop file.
  bool StopRequested() const;
  StopRequest stop_reason() const;

  HookStats stats() const;
  // Names of the registered parameters ("Net_fc1.weight"), in registration order, and of those
  // with a gradient hook ("gradient/Net_fc1.weight").
  std::vector<std::string> parameter_names() const;
  std::vector<std::string> gradient_names() const;

  // Step boundary for a scope: Step() on entry, EndStep() on exit.
  class StepScope {
   public:
    explicit StepScope(TorchHook& hook) : hook_(hook) { saving_ = hook_.Step(); }
    ~StepScope() { hook_.EndStep(); }
    StepScope(const StepScope&) = delete;
    StepScope& operator=(const StepScope&) = delete;
    bool saving() const { return saving_; }

   private:
    TorchHook& hook_;
    bool saving_;
  };

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;  // shared with the gradient hooks, which may outlive this object
};

}  // namespace trainscope

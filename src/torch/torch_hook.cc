// TorchHook (trainscope/torch_hook.h): LibTorch tensors and modules on top of trainscope::Hook.
// The statistics of a tensor on a device are torch_stats.cc's (trainscope/torch_stats.h).
#include "trainscope/torch_hook.h"

#include <ATen/ATen.h>

#include <atomic>
#include <exception>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "torch/torch_error.h"
#include "trainscope/tensor_names.h"
#include "trainscope/thread_annotations.h"

namespace trainscope {

using torch_internal::TorchError;

std::string TorchModuleName(const ::torch::nn::Module& module) {
  return tensor_names::ModuleClassName(module.name());
}

DType TorchDType(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Half:
      return DType::kF16;
    case c10::ScalarType::BFloat16:
      return DType::kBF16;
    case c10::ScalarType::Float:
      return DType::kF32;
    case c10::ScalarType::Double:
      return DType::kF64;
    case c10::ScalarType::Char:
      return DType::kI8;
    case c10::ScalarType::Short:
      return DType::kI16;
    case c10::ScalarType::Int:
      return DType::kI32;
    case c10::ScalarType::Long:
      return DType::kI64;
    case c10::ScalarType::Byte:
      return DType::kU8;
    case c10::ScalarType::UInt16:
      return DType::kU16;
    case c10::ScalarType::UInt32:
      return DType::kU32;
    case c10::ScalarType::UInt64:
      return DType::kU64;
    case c10::ScalarType::Bool:
      return DType::kBool;
    case c10::ScalarType::ComplexFloat:
      return DType::kComplex64;
    case c10::ScalarType::ComplexDouble:
      return DType::kComplex128;
    default:
      return DType::kInvalid;
  }
}

Result<TensorView> TorchTensorView(const at::Tensor& t) {
  if (!t.defined()) return Status::InvalidArgument("the tensor is undefined (no value)");
  if (!t.device().is_cpu()) {
    return Status::InvalidArgument("the tensor is on " + t.device().str() +
                                   ": copy it to the host with .cpu() first");
  }
  if (t.layout() != at::kStrided) {
    return Status::InvalidArgument("the tensor is not dense: convert it with .to_dense() first");
  }
  if (t.is_conj() || t.is_neg()) {
    return Status::InvalidArgument(
        "the tensor is a lazy conjugate or negation: call .resolve_conj().resolve_neg() first");
  }
  const DType dtype = TorchDType(t.scalar_type());
  if (dtype == DType::kInvalid) {
    return Status::InvalidArgument("trainscope cannot store dtype " +
                                   std::string(c10::toString(t.scalar_type())) +
                                   ": convert the tensor, e.g. with .to(torch::kFloat)");
  }
  TensorView v;
  v.dtype = dtype;
  v.data = t.data_ptr();  // includes the storage offset
  v.shape = t.sizes().vec();
  if (!t.is_contiguous()) v.strides = t.strides().vec();
  return v;
}

class TorchHook::Impl {
 public:
  explicit Impl(std::unique_ptr<Hook> h) : hook(std::move(h)) {}

  Mutex mu;  // guards everything below (but `saving`) and every call into `hook`
  const std::unique_ptr<Hook> hook TS_PT_GUARDED_BY(mu);
  // Mirrors hook->is_saving_step() for gradient hooks, which test it before taking the lock.
  std::atomic<bool> saving{false};
  bool closed TS_GUARDED_BY(mu) = false;

  struct Param {
    std::string name;
    at::Tensor tensor;
  };
  std::vector<Param> params TS_GUARDED_BY(mu);
  std::vector<std::string> gradient_names TS_GUARDED_BY(mu);
  struct GradientHook {
    at::Tensor tensor;
    unsigned handle;
  };
  std::vector<GradientHook> gradient_hooks TS_GUARDED_BY(mu);
  std::unordered_set<const ::torch::nn::Module*> modules TS_GUARDED_BY(mu);
  std::unordered_set<const c10::TensorImpl*> param_impls TS_GUARDED_BY(mu);
  // name -> next output index, per step
  std::unordered_map<std::string, int64_t> output_counts TS_GUARDED_BY(mu);

  // Saves `value` under `name` as the plan says. `fresh`: nobody writes into the tensor's bytes
  // after this call (a gradient autograd handed over, a copy made here), so the writer may
  // borrow them.
  Status Save(std::string_view name, const at::Tensor& value, bool fresh) TS_REQUIRES(mu) {
    if (closed || !hook->is_saving_step() || !value.defined()) return Status::OK();
    if (!hook->Plan(name).save) return Status::OK();  // no conversion for what is not saved
    at::Tensor t;
    try {
      t = value.detach();
      if (t.layout() != at::kStrided) {
        t = t.to_dense();
        fresh = true;
      }
      if (t.is_conj() || t.is_neg()) {
        t = t.resolve_conj().resolve_neg();
        fresh = true;
      }
      if (TorchDType(t.scalar_type()) == DType::kInvalid) {
        t = t.to(at::kFloat);  // float8 and other dtypes a trial cannot hold
        fresh = true;
      }
      if (!t.device().is_cpu()) {
        const TensorPlan& plan = hook->Plan(name);
        if (!plan.save_raw && plan.histogram_tag.empty() && !plan.tensorboard_scalar) {
          // Reductions and the shape only: computed on the device, 16 numbers cross. (Python's
          // hook decides the same: pytorch/_device.py.)
          auto stats = TorchTensorStats(t, FieldsRead(plan.reductions));
          if (!stats.ok()) return hook->ReportError(stats.status(), name);
          return hook->SaveStats(name, *stats, t.sizes().vec());
        }
        t = t.cpu();
        fresh = true;
      }
    } catch (const std::exception& e) {
      return hook->ReportError(TorchError("converting the tensor", e), name);
    }
    auto view = TorchTensorView(t);
    if (!view.ok()) return hook->ReportError(view.status(), name);
    if (fresh && view->is_contiguous()) {
      return hook->SaveTensorNoCopy(name, *view, std::make_shared<at::Tensor>(std::move(t)));
    }
    return hook->SaveTensor(name, *view);  // the writer copies before returning
  }

  // "<name>_output_<i>": the next index of `name` in this step.
  std::string NextOutputName(std::string_view name) TS_REQUIRES(mu) {
    int64_t& next = output_counts[std::string(name)];
    return tensor_names::OutputName(name, next++);
  }

  void OnGradient(const std::string& name, const at::Tensor& grad) TS_EXCLUDES(mu) {
    if (!saving.load(std::memory_order_acquire)) return;
    try {
      MutexLock lock(&mu);
      (void)Save(name, grad, /*fresh=*/true);  // reported by the hook; never into autograd
    } catch (const std::exception& e) {        // never into autograd
      try {
        MutexLock lock(&mu);
        (void)hook->ReportError(TorchError("saving a gradient", e), name);  // recorded (fail open)
      } catch (...) {
      }
    }
  }

  // Removes the gradient hooks.
  void RemoveGradientHooks() TS_REQUIRES(mu) {
    for (auto& g : gradient_hooks) {
      try {
        g.tensor.remove_hook(g.handle);
      } catch (const std::exception&) {
        // The gradient hook checks `closed` (through `saving`) and does nothing.
      }
    }
    gradient_hooks.clear();
  }

  Status CloseLocked() TS_REQUIRES(mu) {
    if (closed) return hook->first_error();
    saving.store(false, std::memory_order_release);
    closed = true;
    RemoveGradientHooks();
    return hook->Close();
  }
};

Result<std::unique_ptr<TorchHook>> TorchHook::Create(HookConfig config) {
  TS_ASSIGN_OR_RETURN(auto hook, Hook::Create(std::move(config)));
  return std::make_unique<TorchHook>(std::move(hook));
}

Result<std::unique_ptr<TorchHook>> TorchHook::CreateFromJsonFile(const std::string& path) {
  TS_ASSIGN_OR_RETURN(auto hook, Hook::CreateFromJsonFile(path));
  return std::make_unique<TorchHook>(std::move(hook));
}

TorchHook::TorchHook(std::unique_ptr<Hook> hook) : impl_(std::make_shared<Impl>(std::move(hook))) {}

TorchHook::~TorchHook() { (void)Close(); }  // reported on stderr; owners Close() first to see it

// Unlocked by contract (torch_hook.h): calls made on the wrapped hook are the caller's to order
// with the steps, so the analysis is not asked to see `mu` here.
Hook& TorchHook::hook() TS_NO_THREAD_SAFETY_ANALYSIS { return *impl_->hook; }

Status TorchHook::RegisterModule(const ::torch::nn::Module& module, std::string name) {
  Impl& d = *impl_;
  MutexLock lock(&d.mu);
  if (d.closed) {
    return Status::InvalidArgument("the hook is closed: register modules before Close()");
  }
  try {
    if (name.empty()) name = TorchModuleName(module);
    if (d.modules.count(&module) > 0) {
      return Status::InvalidArgument("module " + name +
                                     " is registered already: register each module once");
    }
    std::vector<std::pair<std::string, at::Tensor>> fresh;
    std::unordered_set<const c10::TensorImpl*> seen;
    for (const auto& item : module.named_parameters(/*recurse=*/true)) {
      const at::Tensor& p = item.value();
      const c10::TensorImpl* impl = p.unsafeGetTensorImpl();
      if (!seen.insert(impl).second) continue;  // shared: saved under its first path
      if (d.param_impls.count(impl) > 0) {
        return Status::InvalidArgument(
            "parameter " + item.key() + " of module " + name +
            " is registered already (through another module): register the outermost module "
            "only");
      }
      fresh.emplace_back(tensor_names::ParameterName(name, item.key()), p);
    }
    std::weak_ptr<Impl> weak = impl_;
    for (auto& [pname, p] : fresh) {
      d.param_impls.insert(p.unsafeGetTensorImpl());
      // _meta.parameters (docs/formats/trial.md): the rules tell frozen from trainable by it.
      d.hook->collections().SetParameterTrainable(pname, p.requires_grad());
      if (p.requires_grad()) {  // frozen parameters get no gradient hook
        std::string gname = tensor_names::GradientName(pname);
        const unsigned handle = p.register_hook([weak, gname](const at::Tensor& grad) {
          if (auto impl = weak.lock()) impl->OnGradient(gname, grad);
        });
        d.gradient_hooks.push_back({p, handle});
        d.gradient_names.push_back(std::move(gname));
      }
      d.params.push_back({std::move(pname), std::move(p)});
    }
    d.modules.insert(&module);
  } catch (const std::exception& e) {
    return TorchError("registering module " + name, e);
  }
  return Status::OK();
}

void TorchHook::SetMode(Mode m) {
  MutexLock lock(&impl_->mu);
  impl_->hook->SetMode(m);
}

Mode TorchHook::mode() const {
  MutexLock lock(&impl_->mu);
  return impl_->hook->mode();
}

int64_t TorchHook::step() const {
  MutexLock lock(&impl_->mu);
  return impl_->hook->step();
}

int64_t TorchHook::mode_step() const {
  MutexLock lock(&impl_->mu);
  return impl_->hook->mode_step();
}

bool TorchHook::Step() {
  Impl& d = *impl_;
  MutexLock lock(&d.mu);
  if (d.closed) return false;
  d.output_counts.clear();
  const bool saving = d.hook->Step();
  if (d.hook->StopRequested()) {
    (void)d.CloseLocked();  // the gradient hooks go too; Close() returns its error later
    return false;
  }
  d.saving.store(saving, std::memory_order_release);
  if (saving) {
    // Each failure is reported by the hook (fail open); Step() saves the others all the same.
    for (const auto& p : d.params) (void)d.Save(p.name, p.tensor, /*fresh=*/false);
  }
  return saving;
}

void TorchHook::EndStep() {
  Impl& d = *impl_;
  MutexLock lock(&d.mu);
  d.saving.store(false, std::memory_order_release);
  d.hook->EndStep();
}

bool TorchHook::is_saving_step() const {
  MutexLock lock(&impl_->mu);
  return !impl_->closed && impl_->hook->is_saving_step();
}

Status TorchHook::SaveLoss(const at::Tensor& loss, std::string_view name) {
  Impl& d = *impl_;
  MutexLock lock(&d.mu);
  if (d.closed || !d.hook->is_saving_step()) return Status::OK();
  const std::string full = d.NextOutputName(name);
  auto losses = d.hook->collections().GetOrCreate(collection_keys::kLosses);
  if (!losses->Matches(full)) {
    // A name outside the collection's regex ("[Ll]oss_..."): name the tensor in it, and plan
    // again so that it counts at this step already.
    losses->AddTensorName(full);
    Status s = d.hook->Prepare();
    if (!s.ok()) return d.hook->ReportError(s, full);
  }
  return d.Save(full, loss, /*fresh=*/false);
}

Status TorchHook::RecordTensorValue(std::string_view name, const at::Tensor& value) {
  Impl& d = *impl_;
  MutexLock lock(&d.mu);
  if (d.closed || !d.hook->is_saving_step()) return Status::OK();
  return d.Save(d.NextOutputName(name), value, /*fresh=*/false);
}

Status TorchHook::SaveTensor(std::string_view name, const at::Tensor& value) {
  Impl& d = *impl_;
  MutexLock lock(&d.mu);
  return d.Save(name, value, /*fresh=*/false);
}

Status TorchHook::SaveScalar(std::string_view name, double value) {
  Impl& d = *impl_;
  MutexLock lock(&d.mu);
  if (d.closed) return Status::OK();
  return d.hook->SaveScalar(name, value);
}

Status TorchHook::SaveScalar(std::string_view name, const at::Tensor& value) {
  Impl& d = *impl_;
  MutexLock lock(&d.mu);
  if (d.closed) return Status::OK();
  const std::string full = tensor_names::ScalarName(name);
  double v = 0;
  try {
    if (!value.defined() || value.numel() != 1) {
      return d.hook->ReportError(
          Status::InvalidArgument("a scalar needs a tensor of one element, not " +
                                  (value.defined() ? ShapeToString(value.sizes().vec())
                                                   : std::string("an undefined tensor"))),
          full);
    }
    v = value.detach().to(at::kDouble).item<double>();
  } catch (const std::exception& e) {
    return d.hook->ReportError(TorchError("reading a scalar", e), full);
  }
  return d.hook->SaveScalar(name, v);
}

Status TorchHook::Flush() {
  MutexLock lock(&impl_->mu);
  return impl_->hook->Flush();
}

Status TorchHook::Close() {
  MutexLock lock(&impl_->mu);
  return impl_->CloseLocked();
}

bool TorchHook::StopRequested() const {
  MutexLock lock(&impl_->mu);
  return impl_->hook->StopRequested();
}

StopRequest TorchHook::stop_reason() const {
  MutexLock lock(&impl_->mu);
  return impl_->hook->stop_reason();
}

HookStats TorchHook::stats() const {
  MutexLock lock(&impl_->mu);
  return impl_->hook->stats();
}

std::vector<std::string> TorchHook::parameter_names() const {
  MutexLock lock(&impl_->mu);
  std::vector<std::string> out;
  out.reserve(impl_->params.size());
  for (const auto& p : impl_->params) out.push_back(p.name);
  return out;
}

std::vector<std::string> TorchHook::gradient_names() const {
  MutexLock lock(&impl_->mu);
  return impl_->gradient_names;
}

}  // namespace trainscope

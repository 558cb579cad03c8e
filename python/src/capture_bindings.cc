// trainscope._core capture classes: the C++ Hook, its collections and config checks, for
// trainscope.pytorch (python/trainscope/pytorch). The Python package keeps module registration
// and naming; every configuration decision (which collection, which step, what to save) is made
// here, in C++.
//
// Configs cross as plain values: a save config is smdebug's to_json_dict form
// {"TRAIN": {"save_interval", "start_step", "end_step", "save_steps"} | None, ...}; a reduction
// config is {"reductions": [...], "abs_reductions": [...], "norms": [...], "abs_norms": [...],
// "save_raw_tensor": bool, "save_shape": bool}. Bad values raise ValueError
// (_core.InvalidArgumentError) with the C++ message.
//
// Locking: every Hook method takes the hook's mutex with the GIL released (so a thread waiting
// for the mutex never holds the GIL), converts Python values with the GIL, and does the C++
// work (reductions, copies, waiting for the writer) without it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "status_py.h"
#include "tensor_input.h"
#include "trainscope/collection.h"
#include "trainscope/hook.h"
#include "trainscope/hook_config.h"
#include "trainscope/reductions.h"
#include "trainscope/step_timeline.h"
#include "trainscope/thread_annotations.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

// The values save_stats takes: every TensorStats field in StatsField order (core's
// StatsFieldName, exported as _core.STATS_FIELDS).
TensorStats StatsFromValues(const std::vector<double>& v) {
  if (v.size() != kNumStatsFields) {
    throw py::value_error("save_stats needs " + std::to_string(kNumStatsFields) +
                          " values in the order of _core.STATS_FIELDS, got " +
                          std::to_string(v.size()));
  }
  TensorStats s;
  for (size_t i = 0; i < kNumStatsFields; ++i) s.Set(static_cast<StatsField>(i), v[i]);
  return s;
}

// The names of `fields`, in StatsField order.
py::tuple FieldNames(StatsFieldSet fields) {
  const std::vector<StatsField> v = fields.ToVector();
  py::tuple out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = py::str(std::string(StatsFieldName(v[i])));
  return out;
}

// ---- configs: Python values -> C++ --------------------------------------------------------

// int(v) as Python computes it (accepts numpy integers and numeric strings).
int64_t ToInt(py::handle v) {
  return py::int_(py::reinterpret_borrow<py::object>(v)).cast<int64_t>();
}

std::optional<int64_t> OptionalInt(py::handle v) {
  if (v.is_none()) return std::nullopt;
  return ToInt(v);
}

SaveConfigMode SaveModeFromDict(py::handle h) {
  py::dict d = py::reinterpret_borrow<py::dict>(h);
  SaveConfigMode m;
  if (d.contains("save_interval") && !d["save_interval"].is_none()) {
    m.save_interval = ToInt(d["save_interval"]);
  }
  if (d.contains("start_step") && !d["start_step"].is_none()) {
    m.start_step = ToInt(d["start_step"]);
  }
  if (d.contains("end_step")) m.end_step = OptionalInt(d["end_step"]);
  if (d.contains("save_steps") && !d["save_steps"].is_none()) {
    for (py::handle s : d["save_steps"]) m.save_steps.push_back(ToInt(s));
  }
  return m;
}

// {"TRAIN": dict|None, ...}: missing or None modes stay unset.
SaveConfig SaveConfigFromDict(py::handle h, const std::string& what) {
  SaveConfig c;
  py::dict d = py::reinterpret_borrow<py::dict>(h);
  for (auto item : d) {
    Mode m = ModeFromPython(item.first);
    if (!item.second.is_none()) c.set_mode(m, SaveModeFromDict(item.second));
  }
  ThrowIfError(c.Validate(what));
  return c;
}

py::object SaveConfigToDict(const std::optional<SaveConfig>& c) {
  if (!c) return py::none();
  py::dict out;
  for (Mode m : {Mode::kTrain, Mode::kEval, Mode::kPredict, Mode::kGlobal}) {
    const auto& mc = c->mode(m);
    if (!mc) {
      out[py::str(std::string(ModeName(m)))] = py::none();
      continue;
    }
    py::dict d;
    d["save_interval"] = mc->save_interval;
    d["start_step"] = mc->start_step;
    d["end_step"] = mc->end_step ? py::object(py::int_(*mc->end_step)) : py::none();
    d["save_steps"] = mc->save_steps;
    out[py::str(std::string(ModeName(m)))] = d;
  }
  return out;
}

ReductionConfig ReductionConfigFromDict(py::handle h, const std::string& what) {
  py::dict d = py::reinterpret_borrow<py::dict>(h);
  ReductionConfig c;
  auto list = [&](const char* key, std::vector<ReductionOp>* out) {
    if (!d.contains(key) || d[key].is_none()) return;
    for (py::handle item : d[key]) {
      const std::string name = py::str(item).cast<std::string>();
      out->push_back(ValueOrThrow([&]() -> Result<ReductionOp> {
        auto r = ParseReductionForList(key, name);
        if (!r.ok()) return r.status().WithContext(what);
        return r;
      }()));
    }
  };
  list("reductions", &c.reductions);
  list("abs_reductions", &c.abs_reductions);
  list("norms", &c.norms);
  list("abs_norms", &c.abs_norms);
  auto flag = [&](const char* key) {
    if (!d.contains(key) || d[key].is_none()) return false;
    py::handle v = d[key];
    if (!PyBool_Check(v.ptr())) {
      throw py::value_error(what + ": " + key + "=" + py::repr(v).cast<std::string>() +
                            " must be True or False");
    }
    return v.ptr() == Py_True;
  };
  c.save_raw_tensor = flag("save_raw_tensor");
  c.save_shape = flag("save_shape");
  ThrowIfError(c.Validate(what));
  return c;
}

py::object ReductionConfigToDict(const std::optional<ReductionConfig>& c) {
  if (!c) return py::none();
  auto names = [](const std::vector<ReductionOp>& ops) {
    py::list l;
    for (auto op : ops) l.append(py::str(std::string(ReductionOpName(op))));
    return l;
  };
  py::dict d;
  d["reductions"] = names(c->reductions);
  d["abs_reductions"] = names(c->abs_reductions);
  d["norms"] = names(c->norms);
  d["abs_norms"] = names(c->abs_norms);
  d["save_raw_tensor"] = c->save_raw_tensor;
  d["save_shape"] = c->save_shape;
  return d;
}

// ---- Collection ---------------------------------------------------------------------------

struct PyCollection {
  std::shared_ptr<Collection> c;
};

PyCollection MakeCollection(const std::string& name) {
  return PyCollection{std::make_shared<Collection>(name)};
}

// ---- Hook ---------------------------------------------------------------------------------

class PyHook {
 public:
  explicit PyHook(std::unique_ptr<Hook> hook) : hook_(std::move(hook)) {}
  ~PyHook() {
    // Closing waits for the writer thread, which may need the GIL to drop borrowed tensors.
    ResetWithoutGil(hook_);
  }

  // The hook without mu_, for the bindings' calls that take only the GIL (config, collections,
  // mode, step and the other getters); unchecked: the GIL does not exclude a locked call.
  Hook& h() TS_NO_THREAD_SAFETY_ANALYSIS { return *hook_; }

  // Each method below holds mu_ and not the GIL (`release` is made first, so it ends last).
  Status Prepare() {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    return hook_->Prepare();
  }
  bool Step() {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    return hook_->Step();
  }
  // boundary()'s flags.
  static constexpr int kBoundarySaving = 1;   // the step begun saves
  static constexpr int kBoundaryPhases = 2;   // it records its phases (timeline attached)
  static constexpr int kBoundaryStopped = 4;  // a rule asked to stop: the hook is closed

  // A step boundary in one call, the hot path of a training with short steps: Step() (without
  // the GIL) and, with a step timeline attached, the Step span that ends and the one that
  // begins, timed before Step() as the Python profiler timed it.
  int Boundary() {
    const uint64_t t_us = timeline_ != nullptr ? timeline_->Now() : 0;
    // The ending step's model calls (Step() starts the count again) and capture work.
    const int64_t calls = timeline_ != nullptr ? h().model_calls() : 0;
    const bool ended_saved = timeline_ != nullptr && EndedSaved();
    const bool saving = Step();
    const Hook& hook = h();
    if (!saving && hook.StopRequested()) return kBoundaryStopped;
    int flags = saving ? kBoundarySaving : 0;
    if (timeline_ != nullptr &&
        timeline_->Begin(t_us, hook.mode(), hook.mode_step(), hook.step(), ended_saved, calls)) {
      flags |= kBoundaryPhases;
    }
    return flags;
  }
  // Ends the attached timeline's step in progress now (a mode change, the end of profiling),
  // its span with the step's model calls and capture work as Boundary() gives them.
  void EndStepTimeline() {
    if (timeline_ == nullptr || !timeline_->in_step()) return;
    timeline_->End(timeline_->Now(), EndedSaved(), h().model_calls());
  }
  // The profiler's StepTimeline (or None: detached). Called with the GIL, on the training thread.
  void AttachStepTimeline(py::object timeline) {
    timeline_ = timeline.is_none() ? nullptr : timeline.cast<StepTimeline*>();
    timeline_obj_ = std::move(timeline);
    boundary_captured_ = h().captured_bytes();  // work before it is no step's of this timeline
  }

  // The forward pre-hook's state (ForwardPreHook below), set from Python when it changes:
  // `fast`: the next boundary needs nothing but boundary() unless its flags are not 0;
  // `explicit_steps`: hook.step() marks the steps, forward calls do not; `slow`: the Python
  // boundary, called as slow(module) when not fast and slow(module, flags) after a fast
  // boundary() whose flags are not 0 (None: the pre-hook does nothing).
  bool fast = false;
  bool explicit_steps = false;
  py::object slow = py::none();

  void EndStep() {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    hook_->EndStep();
  }
  void SetClosureSteps(std::vector<ClosureStep> closures) {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    hook_->SetClosureSteps(std::move(closures));
  }

  // Saves one value as planned; conversion errors are reported, not raised (fail open).
  bool Save(const std::string& name, py::handle value, bool nocopy) {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    if (!hook_->is_saving_step() || !hook_->Plan(name).save) return false;
    std::unique_ptr<PyTensorInput> in;
    {
      py::gil_scoped_acquire gil;
      in = Convert(name, value);
    }
    if (!in) return false;
    const TensorView view = in->view();
    if (nocopy && view.is_contiguous() && view.dtype != DType::kString) {
      std::shared_ptr<const void> keep;
      {
        py::gil_scoped_acquire gil;
        keep = KeepaliveHoldingGil(std::move(in));
      }
      // The hook reports a failure itself (fail open: stderr once, then first_error()).
      (void)hook_->SaveTensorNoCopy(name, view, std::move(keep));
    } else {
      (void)hook_->SaveTensor(name, view);  // reported by the hook, as above
      py::gil_scoped_acquire gil;           // the input holds Python references
      in.reset();
    }
    return true;
  }

  // Saves many (name, value) pairs: one lock, conversions first, then the C++ work.
  int SaveMany(const py::sequence& items) {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    if (!hook_->is_saving_step()) return 0;
    std::vector<std::pair<std::string, std::unique_ptr<PyTensorInput>>> inputs;
    {
      py::gil_scoped_acquire gil;
      for (py::handle item : items) {
        py::tuple t = py::reinterpret_borrow<py::tuple>(item);
        std::string name = t[0].cast<std::string>();
        if (!hook_->Plan(name).save) continue;
        auto in = Convert(name, t[1]);
        if (in) inputs.emplace_back(std::move(name), std::move(in));
      }
    }
    // The hook reports a failure itself (fail open: stderr once, then first_error()).
    for (auto& [name, in] : inputs) (void)hook_->SaveTensor(name, in->view());
    py::gil_scoped_acquire gil;
    const int n = static_cast<int>(inputs.size());
    inputs.clear();
    return n;
  }

  void SaveStats(const std::string& name, const std::vector<double>& values,
                 const std::vector<int64_t>& shape) {
    TensorStats s = StatsFromValues(values);
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    (void)hook_->SaveStats(name, s, shape);  // reported by the hook
  }

  void SaveScalar(const std::string& name, double value, double wall_time_s) {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    (void)hook_->SaveScalar(name, value, wall_time_s);  // as above
  }

  void SaveCustom(const std::string& name, py::handle value,
                  const std::vector<std::string>& collections) {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    std::unique_ptr<PyTensorInput> in;
    {
      py::gil_scoped_acquire gil;
      in = Convert(name, value);
    }
    if (!in) return;
    (void)hook_->SaveCustomTensor(name, in->view(), collections);  // reported by the hook
    py::gil_scoped_acquire gil;
    in.reset();
  }

  // REQUIRES: the GIL (Python objects are touched).
  py::object Plan(const std::string& name) {
    TensorPlan p;
    {
      py::gil_scoped_release release;
      MutexLock lock(&mu_);
      if (hook_->step() < 0) return py::none();
      p = hook_->Plan(name);
    }
    if (!p.save) return py::none();
    py::dict d;
    d["save_raw"] = p.save_raw;
    d["save_shape"] = p.save_shape;
    py::list reds;
    for (const auto& r : p.reductions) {
      reds.append(py::make_tuple(std::string(ReductionOpName(r.op)), r.abs));
    }
    d["reductions"] = reds;
    d["fields"] = FieldNames(FieldsRead(p.reductions));
    d["histogram_tag"] = p.histogram_tag;
    d["tensorboard_scalar"] = p.tensorboard_scalar;
    return d;
  }

  void ReportError(const std::string& tensor, const std::string& message) {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    // Recorded by the hook (stderr once, then first_error()); the caller wants nothing back.
    (void)hook_->ReportError(Status::Internal(message), tensor);
  }

  void Close() {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    // Already reported on stderr; first_error() gives it to callers who ask.
    (void)hook_->Close();
  }

  // Fail open: a write error was reported by the hook and stays in first_error().
  void Flush() {
    py::gil_scoped_release release;
    MutexLock lock(&mu_);
    (void)hook_->Flush();
  }

 private:
  // Converts with the GIL held; reports a conversion error through the hook and returns null.
  std::unique_ptr<PyTensorInput> Convert(const std::string& name, py::handle value)
      TS_REQUIRES(mu_) {
    try {
      return TensorFromPython(value, name);
    } catch (py::error_already_set& e) {
      // Recorded by the hook (fail open: stderr once, then first_error()).
      (void)hook_->ReportError(Status::InvalidArgument(e.what()), name);
    } catch (const std::exception& e) {
      (void)hook_->ReportError(Status::InvalidArgument(e.what()), name);  // as above
    }
    return nullptr;
  }

  Mutex mu_;
  std::unique_ptr<Hook> hook_ TS_PT_GUARDED_BY(mu_);  // h() reads it without mu_
  // The attached StepTimeline: the Python object keeps it (and its writer) alive.
  py::object timeline_obj_;
  StepTimeline* timeline_ = nullptr;
  uint64_t boundary_captured_ = 0;  // Hook::captured_bytes() when the last span ended

  // Whether the step whose span ends now captured Hook::kSavedStepBytes or more.
  bool EndedSaved() {
    const uint64_t captured = h().captured_bytes();
    const bool saved = captured - boundary_captured_ >= Hook::kSavedStepBytes;
    boundary_captured_ = captured;
    return saved;
  }
};

// ---- the forward pre-hook ------------------------------------------------------------------
//
// A registered module's forward pre-hook is the step boundary of a training that has no
// hook.step(): the hottest trainscope callback when steps are short (an MLP's 0.3 ms step). It is
// a plain CPython function (METH_FASTCALL, no pybind11 dispatch, no Python frame): on a step
// that saves nothing and records no profiler phases, after one like it, the whole boundary is
// PyHook::Boundary(); anything else goes to the Python hook (PyHook::slow).

constexpr const char* kPreHookCapsule = "trainscope._core.forward_pre_hook";

// The capsule bound to the function: the PyHook and a strong reference to its Python object.
struct PreHookTarget {
  PyHook* hook;
  PyObject* owner;
};

void DestroyPreHookTarget(PyObject* capsule) {
  auto* t = static_cast<PreHookTarget*>(PyCapsule_GetPointer(capsule, kPreHookCapsule));
  if (t == nullptr) return;
  Py_XDECREF(t->owner);
  delete t;
}

PyObject* ForwardPreHook(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  auto* t = static_cast<PreHookTarget*>(PyCapsule_GetPointer(self, kPreHookCapsule));
  if (t == nullptr) return nullptr;
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "forward pre-hook: expected (module, inputs)");
    return nullptr;
  }
  PyHook& h = *t->hook;
  if (h.explicit_steps) {  // hook.step() marks the steps: a call inside one (a rollout's)
    h.h().CountModelCall();
    Py_RETURN_NONE;
  }
  if (h.slow.is_none()) Py_RETURN_NONE;
  if (!h.fast) return PyObject_CallOneArg(h.slow.ptr(), args[0]);
  int flags = 0;
  try {
    flags = h.Boundary();
  } catch (const std::exception&) {
    // Never through a C function into the training (that would terminate it): the Python
    // boundary makes the step again and reports what went wrong (fail open).
    h.fast = false;
    return PyObject_CallOneArg(h.slow.ptr(), args[0]);
  }
  if (flags == 0) Py_RETURN_NONE;
  PyObject* flags_obj = PyLong_FromLong(flags);
  if (flags_obj == nullptr) return nullptr;
  PyObject* call_args[2] = {args[0], flags_obj};
  PyObject* r = PyObject_Vectorcall(h.slow.ptr(), call_args, 2, nullptr);
  Py_DECREF(flags_obj);
  return r;
}

// The function's definition; PyCFunction_NewEx keeps the pointer, so it lives as long as the
// module.
PyMethodDef* ForwardPreHookDef() {
  static PyMethodDef def = {
      "forward_pre_hook",
      reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(ForwardPreHook)), METH_FASTCALL,
      "trainscope's step boundary as a forward pre-hook (module, inputs) -> None."};
  return &def;
}

py::object MakeForwardPreHook(PyHook& hook, py::handle owner) {
  auto* t = new PreHookTarget{&hook, owner.ptr()};
  Py_INCREF(owner.ptr());
  py::object capsule =
      py::reinterpret_steal<py::object>(PyCapsule_New(t, kPreHookCapsule, DestroyPreHookTarget));
  if (!capsule) {
    Py_DECREF(owner.ptr());
    delete t;
    throw py::error_already_set();
  }
  return BoundFunction(ForwardPreHookDef(), capsule.release().ptr());
}

}  // namespace

int HookBoundary(PyObject* core_hook, bool model_call) noexcept {
  try {
    PyHook& h = py::handle(core_hook).cast<PyHook&>();
    const int flags = h.Boundary();
    if (model_call) h.h().CountModelCall();
    return flags;
  } catch (...) {  // not a _core.Hook, or the boundary threw (fail open: the caller goes on)
    PyErr_Clear();
    return -1;
  }
}

void HookCountModelCall(PyObject* core_hook) noexcept {
  try {
    py::handle(core_hook).cast<PyHook&>().h().CountModelCall();
  } catch (...) {  // not a _core.Hook
    PyErr_Clear();
  }
}

namespace {

HookConfig HookConfigFromDict(const py::dict& d) {
  HookConfig c;
  auto has = [&](const char* k) { return d.contains(k) && !d[k].is_none(); };
  if (has("out_dir")) c.out_dir = d["out_dir"].cast<std::string>();
  if (has("export_tensorboard")) c.export_tensorboard = d["export_tensorboard"].cast<bool>();
  if (has("tensorboard_dir")) c.tensorboard_dir = d["tensorboard_dir"].cast<std::string>();
  if (has("dry_run")) c.dry_run = d["dry_run"].cast<bool>();
  if (has("reduction_config")) {
    c.reduction_config = ReductionConfigFromDict(d["reduction_config"], "reduction_config");
  }
  if (has("save_config")) c.save_config = SaveConfigFromDict(d["save_config"], "save_config");
  if (has("include_regex")) c.include_regex = d["include_regex"].cast<std::vector<std::string>>();
  if (has("include_collections")) {
    c.include_collections = d["include_collections"].cast<std::vector<std::string>>();
  }
  if (has("default_include_collections")) {
    c.default_include_collections =
        d["default_include_collections"].cast<std::vector<std::string>>();
  }
  if (has("save_all")) c.save_all = d["save_all"].cast<bool>();
  if (has("include_workers")) {
    const std::string w = d["include_workers"].cast<std::string>();
    if (w == "one") {
      c.include_workers = IncludeWorkers::kOne;
    } else if (w == "all") {
      c.include_workers = IncludeWorkers::kAll;
    } else {
      throw py::value_error("include_workers='" + w +
                            "' is not valid: use \"one\" (only worker 0 writes) or \"all\" "
                            "(every worker writes its own files)");
    }
  }
  if (has("rank")) c.rank = d["rank"].cast<int>();
  if (has("world_size")) c.world_size = d["world_size"].cast<int>();
  if (has("quiet")) c.quiet = d["quiet"].cast<bool>();
  if (has("max_queue_bytes")) c.max_queue_bytes = d["max_queue_bytes"].cast<size_t>();
  if (has("max_queue_steps")) c.max_queue_steps = d["max_queue_steps"].cast<int64_t>();
  if (has("drop_steps_when_full")) c.drop_steps_when_full = d["drop_steps_when_full"].cast<bool>();
  return c;
}

py::dict HookConfigSummary(const HookConfig& c) {
  py::dict d;
  d["out_dir"] = c.out_dir;
  d["export_tensorboard"] = c.export_tensorboard;
  d["tensorboard_dir"] =
      c.tensorboard_dir.empty() ? py::object(py::none()) : py::object(py::str(c.tensorboard_dir));
  d["dry_run"] = c.dry_run;
  d["include_regex"] = c.include_regex;
  d["include_collections"] =
      c.include_collections ? py::cast(*c.include_collections) : py::object(py::none());
  d["save_all"] = c.save_all;
  d["include_workers"] = c.include_workers == IncludeWorkers::kAll ? "all" : "one";
  d["reduction_config"] = ReductionConfigToDict(c.reduction_config);
  d["save_config"] = SaveConfigToDict(c.save_config);
  return d;
}

}  // namespace

void RegisterCapture(py::module_& m) {
  m.attr("STATS_FIELDS") = FieldNames(StatsFieldSet::All());
  m.attr("BOUNDARY_SAVING") = PyHook::kBoundarySaving;
  m.attr("BOUNDARY_PHASES") = PyHook::kBoundaryPhases;
  m.attr("BOUNDARY_STOPPED") = PyHook::kBoundaryStopped;
  m.def(
      "stats_fields_for",
      [](const py::iterable& reductions) {
        std::vector<Reduction> rs;
        for (py::handle item : reductions) {
          if (py::isinstance<py::str>(item)) {
            rs.push_back(ValueOrThrow(ParseReduction(item.cast<std::string>())));
            continue;
          }
          auto [op, abs] = item.cast<std::pair<std::string, bool>>();
          Reduction r = ValueOrThrow(ParseReduction(op));
          r.abs = r.abs || abs;
          rs.push_back(r);
        }
        return FieldNames(FieldsRead(rs));
      },
      py::arg("reductions"),
      "The STATS_FIELDS that reductions read (FieldsRead, trainscope/reductions.h), in "
      "STATS_FIELDS order; count aside. reductions: names ('abs_mean', 'l2_norm') or "
      "(op, abs) pairs as a plan lists them.");

  m.def(
      "check_save_config_mode",
      [](const py::dict& d, const std::string& what) {
        ThrowIfError(SaveModeFromDict(d).Validate(what));
      },
      py::arg("params"), py::arg("what") = "SaveConfigMode",
      "Raises ValueError if {save_interval, start_step, end_step, save_steps} is invalid.");
  py::class_<SaveConfigMode>(m, "SaveSchedule",
                             "The save schedule of one mode (SaveConfigMode::ShouldSave, the "
                             "hook's own): schedule(mode_step) is True if that step is saved.")
      .def(py::init([](const py::dict& d) {
             SaveConfigMode mode = SaveModeFromDict(d);
             ThrowIfError(mode.Validate("SaveConfigMode"));
             return mode;
           }),
           py::arg("params"),
           "From {save_interval, start_step, end_step, save_steps}; ValueError if invalid.")
      .def("__call__", &SaveConfigMode::ShouldSave, py::arg("mode_step"));
  m.def(
      "check_reduction_config",
      // Only its checks matter: it raises ValueError on an invalid config.
      [](const py::dict& d, const std::string& what) { (void)ReductionConfigFromDict(d, what); },
      py::arg("params"), py::arg("what") = "ReductionConfig",
      "Raises ValueError if the reduction lists or flags are invalid.");
  m.def(
      "reductions_string",
      [](const py::dict& d) {
        return ReductionConfigFromDict(d, "ReductionConfig").ReductionsString();
      },
      "smdebug's one-string form of a reduction config ('mean,l2_norm,abs_max').");
  m.def(
      "parse_reductions",
      [](const std::string& s, bool save_raw, bool save_shape) {
        return ReductionConfigToDict(ValueOrThrow(ReductionConfig::Parse(s, save_raw, save_shape)));
      },
      py::arg("reductions"), py::arg("save_raw_tensor") = false, py::arg("save_shape") = false);

  py::class_<PyCollection>(m, "Collection", "A collection shared with the C++ hook.")
      .def(py::init(&MakeCollection), py::arg("name"))
      .def_property_readonly("name", [](const PyCollection& p) { return p.c->name(); })
      .def_property(
          "include_regex", [](const PyCollection& p) { return p.c->include_regex(); },
          [](PyCollection& p, std::vector<std::string> r) {
            ThrowIfError(p.c->SetIncludeRegex(std::move(r)));
          })
      .def("include", [](PyCollection& p, const std::string& r) { ThrowIfError(p.c->Include(r)); })
      .def_property(
          "tensor_names", [](const PyCollection& p) { return p.c->tensor_names(); },
          [](PyCollection& p, std::set<std::string> n) { p.c->SetTensorNames(std::move(n)); })
      .def("add_tensor_name", [](PyCollection& p, const std::string& n) { p.c->AddTensorName(n); })
      .def("remove_tensor_name",
           [](PyCollection& p, const std::string& n) { p.c->RemoveTensorName(n); })
      .def("has_tensor_name", [](const PyCollection& p,
                                 const std::string& n) { return p.c->tensor_names().count(n) > 0; })
      .def_property(
          "reduction_config",
          [](const PyCollection& p) { return ReductionConfigToDict(p.c->reduction_config()); },
          [](PyCollection& p, const py::object& d) {
            const std::string what = "collection '" + p.c->name() + "': reduction_config";
            ThrowIfError(p.c->set_reduction_config(
                d.is_none() ? std::nullopt
                            : std::optional<ReductionConfig>(ReductionConfigFromDict(d, what))));
          })
      .def_property(
          "save_config", [](const PyCollection& p) { return SaveConfigToDict(p.c->save_config()); },
          [](PyCollection& p, const py::object& d) {
            const std::string what = "collection '" + p.c->name() + "': save_config";
            ThrowIfError(p.c->set_save_config(
                d.is_none() ? std::nullopt
                            : std::optional<SaveConfig>(SaveConfigFromDict(d, what))));
          })
      .def_property(
          "save_histogram", [](const PyCollection& p) { return p.c->save_histogram(); },
          [](PyCollection& p, bool v) { p.c->set_save_histogram(v); })
      .def("matches", [](const PyCollection& p, const std::string& n) { return p.c->Matches(n); })
      .def("same_as", [](const PyCollection& p, const PyCollection& o) { return p.c == o.c; });

  py::class_<PyHook>(m, "Hook", "The C++ capture hook (trainscope/hook.h).")
      .def(py::init([](const py::dict& config) {
             HookConfig c = HookConfigFromDict(config);
             return std::make_unique<PyHook>(ValueOrThrow(Hook::Create(std::move(c))));
           }),
           py::arg("config"))
      .def_static(
          "from_json_file",
          [](const std::string& path, const py::dict& overrides) {
            HookConfig c = ValueOrThrow(LoadHookConfigFile(path));
            if (overrides.contains("rank")) c.rank = overrides["rank"].cast<int>();
            if (overrides.contains("world_size"))
              c.world_size = overrides["world_size"].cast<int>();
            if (overrides.contains("quiet")) c.quiet = overrides["quiet"].cast<bool>();
            auto hook = ValueOrThrow(Hook::Create(std::move(c)));
            ThrowIfError(hook->Prepare());
            return std::make_unique<PyHook>(std::move(hook));
          },
          py::arg("path") = "", py::arg("overrides") = py::dict())
      .def("config", [](PyHook& h) { return HookConfigSummary(h.h().config()); })
      .def(
          "get_collection",
          [](PyHook& h, const std::string& name, bool create) -> py::object {
            auto c = create ? h.h().collections().GetOrCreate(name) : h.h().collections().Get(name);
            if (!c) return py::none();
            return py::cast(PyCollection{c});
          },
          py::arg("name"), py::arg("create") = true)
      .def("add_collection", [](PyHook& h, const PyCollection& c) { h.h().collections().Add(c.c); })
      .def(
          "set_parameter_trainable",
          [](PyHook& h, const std::string& name, bool trainable) {
            h.h().collections().SetParameterTrainable(name, trainable);
          },
          py::arg("name"), py::arg("trainable"),
          "Records a registered parameter as trainable or frozen (_meta.parameters).")
      .def(
          "set_module_order",
          [](PyHook& h, const std::vector<std::pair<std::string, std::string>>& modules) {
            std::vector<ModuleInfo> order;
            order.reserve(modules.size());
            for (const auto& [name, type] : modules) order.push_back({name, type});
            h.h().collections().SetModuleOrder(std::move(order));
          },
          py::arg("modules"),
          "Records the modules (name, class) in the order they ran in the first step "
          "(_meta.modules).")
      .def(
          "set_environments",
          [](PyHook& h, std::vector<std::string> environments) {
            h.h().collections().SetEnvironments(std::move(environments));
          },
          py::arg("environments"),
          "Records the reinforcement-learning libraries the training imported "
          "(_meta.environments).")
      .def(
          "count_model_call", [](PyHook& h) { h.h().CountModelCall(); },
          "Counts one call of the model in the current step (index meta.model_calls).")
      .def(
          "set_closure_steps",
          [](PyHook& h,
             const std::vector<std::pair<std::string, std::vector<std::vector<std::string>>>>&
                 steps) {
            std::vector<ClosureStep> out;
            out.reserve(steps.size());
            for (const auto& [optimizer, evaluations] : steps) {
              out.push_back(ClosureStep{optimizer, evaluations});
            }
            h.SetClosureSteps(std::move(out));
          },
          py::arg("steps"),
          "Records [(optimizer class, [[loss tensor names of one evaluation], ...])] for the "
          "current step (index meta.closure_evaluations); nothing if the step saved nothing.")
      .def("collection_names",
           [](PyHook& h) {
             std::vector<std::string> out;
             for (const auto& c : h.h().collections().collections()) out.push_back(c->name());
             return out;
           })
      .def("collections_json", [](PyHook& h, int n) { return h.h().collections().ToJson(n); })
      .def("prepare", [](PyHook& h) { ThrowIfError(h.Prepare()); })
      .def("set_mode", [](PyHook& h, py::handle mode) { h.h().SetMode(ModeFromPython(mode)); })
      .def_property_readonly("mode", [](PyHook& h) { return static_cast<int>(h.h().mode()); })
      .def_property_readonly("step_number", [](PyHook& h) { return h.h().step(); })
      .def_property_readonly("mode_step", [](PyHook& h) { return h.h().mode_step(); })
      .def(
          "step",
          [](PyHook& h) -> py::object {
            const bool saving = h.Step();
            if (!saving && h.h().StopRequested()) return py::none();
            return py::bool_(saving);
          },
          "Ends the current step, starts the next; True if it saves, None if a rule asked the "
          "training to stop (see stop_reason).")
      .def_property_readonly(
          "stop_reason",
          [](PyHook& h) -> py::object {
            if (!h.h().StopRequested()) return py::none();
            const StopRequest& r = h.h().stop_reason();
            py::dict d;
            d["rule"] = r.rule;
            d["step"] = r.step;
            d["explanation"] = r.explanation;
            d["text"] = r.ToString();
            return d;
          },
          "None, or why a rule asked the training to stop (the step that saw it closed the "
          "trial): a dict with rule, step, explanation and text.")
      .def("boundary", &PyHook::Boundary,
           "step() and the attached step timeline's span in one call: an int of flags, "
           "BOUNDARY_SAVING (the step saves), BOUNDARY_PHASES (it records its phases), "
           "BOUNDARY_STOPPED (a rule asked the training to stop; see stop_reason).")
      .def("attach_step_timeline", &PyHook::AttachStepTimeline, py::arg("timeline"),
           "A StepTimeline that boundary() begins a span of at each step (None detaches).")
      .def("end_step_timeline", &PyHook::EndStepTimeline,
           "Ends the attached timeline's step in progress now, its span with the step's model "
           "calls and capture work (set_mode, close).")
      .def(
          "forward_pre_hook",
          [](const py::object& self) { return MakeForwardPreHook(self.cast<PyHook&>(), self); },
          "The step boundary as a forward pre-hook (a C function; see fast, explicit_steps, "
          "slow).")
      .def_readwrite("fast", &PyHook::fast)
      .def_readwrite("explicit_steps", &PyHook::explicit_steps)
      .def_readwrite("slow", &PyHook::slow)
      .def("end_step", &PyHook::EndStep)
      .def_property_readonly("is_saving_step", [](PyHook& h) { return h.h().is_saving_step(); })
      .def("plan", &PyHook::Plan, py::arg("name"),
           "None if nothing of `name` is saved this step, else a dict: save_raw, save_shape, "
           "reductions [(op, abs)], fields (the STATS_FIELDS they read: FieldsRead), "
           "histogram_tag, tensorboard_scalar.")
      .def(
          "save", [](PyHook& h, const std::string& n, py::handle v) { return h.Save(n, v, false); },
          py::arg("name"), py::arg("value"))
      .def(
          "save_nocopy",
          [](PyHook& h, const std::string& n, py::handle v) { return h.Save(n, v, true); },
          py::arg("name"), py::arg("value"),
          "As save, but borrows a contiguous value until the writer has written it.")
      .def("save_many", &PyHook::SaveMany, py::arg("items"),
           "Saves [(name, value)...] as planned; returns how many were saved.")
      .def("save_stats", &PyHook::SaveStats, py::arg("name"), py::arg("values"), py::arg("shape"),
           "Writes planned reductions from STATS_FIELDS values.")
      .def("save_scalar", &PyHook::SaveScalar, py::arg("name"), py::arg("value"),
           py::arg("wall_time_s") = 0.0)
      .def("save_custom", &PyHook::SaveCustom, py::arg("name"), py::arg("value"),
           py::arg("collections"))
      .def("report_error", &PyHook::ReportError, py::arg("tensor"), py::arg("message"))
      .def("close", &PyHook::Close)
      .def("flush", &PyHook::Flush)
      .def("saved_collections", [](PyHook& h) { return h.h().saved_collections(); })
      .def_property_readonly("closed", [](PyHook& h) { return h.h().closed(); })
      .def_property_readonly("worker", [](PyHook& h) { return h.h().worker(); })
      .def_property_readonly("rank", [](PyHook& h) { return h.h().rank(); })
      .def_property_readonly("world_size", [](PyHook& h) { return h.h().world_size(); })
      .def_property_readonly("writes", [](PyHook& h) { return h.h().writes(); })
      .def("first_error",
           [](PyHook& h) -> py::object {
             Status s = h.h().first_error();
             if (s.ok()) return py::none();
             return py::str(s.ToString());
           })
      .def("stats", [](PyHook& h) {
        HookStats s = h.h().stats();
        py::dict d;
        d["steps_saved"] = s.steps_saved;
        d["steps_failed"] = s.steps_failed;
        d["steps_dropped"] = s.steps_dropped;
        d["steps_pending"] = s.steps_pending;
        d["tensors_saved"] = s.tensors_saved;
        d["reductions_saved"] = s.reductions_saved;
        d["raw_bytes"] = s.raw_bytes;
        d["errors"] = s.errors;
        d["plans_built"] = s.plans_built;
        d["out_dir_refused"] = s.out_dir_refused;
        return d;
      });
}

}  // namespace trainscope::python

// Pieces shared by the binding files of trainscope._core.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "trainscope/modes.h"

namespace trainscope::python {

// Accepts 1..4, a ModeKeys-like enum (anything with an int `.value`), or a mode name
// ("TRAIN", "ModeKeys.EVAL"...). Throws ValueError otherwise.
Mode ModeFromPython(pybind11::handle mode);

// Destroys what `owner` holds (a hook, a writer: destroying it closes it, which waits for its
// threads) with the GIL released when this thread holds it, since those threads may need the GIL
// (to drop borrowed tensors). For destructors: never throws; if the GIL cannot be released
// (pybind11 fails, e.g. while the interpreter shuts down) it destroys it with the GIL held.
template <typename T>
void ResetWithoutGil(std::unique_ptr<T>& owner) noexcept {
  if (PyGILState_Check()) {
    try {
      pybind11::gil_scoped_release release;
      owner.reset();
    } catch (...) {  // from gil_scoped_release only: reset() does not throw
    }
  }
  owner.reset();  // without the GIL, or after a failed release (no-op when done above)
}

// The step boundary of `core_hook`, a _core.Hook (its boundary() method, without pybind11's
// dispatch): its BOUNDARY_* flags, or -1 when `core_hook` is not a _core.Hook or the boundary
// failed (no Python error is left set). `model_call`: a call of the model makes it, and counts
// as the new step's first (Hook::CountModelCall). Needs the GIL. python/src/capture_bindings.cc.
int HookBoundary(PyObject* core_hook, bool model_call = false) noexcept;

// Hook::CountModelCall of `core_hook`, a _core.Hook; nothing when it is not one (no Python error
// is left set). Needs the GIL.
void HookCountModelCall(PyObject* core_hook) noexcept;

// The truth of obj.<name> as `if obj.name:` sees it: 1, 0, or -1 when it cannot be told (no
// such attribute, a __bool__ that raises; no Python error is left set). For the C callbacks
// that decide from a Python object's flags (auto_gate.cc, pre_call.cc).
int AttrTruth(PyObject* obj, PyObject* name);

// A C function of trainscope._core whose `self` is `capsule` (a new reference, which the function
// takes; released on failure): how the extension makes the callbacks it hands PyTorch
// (pre_call.cc, auto_gate.cc, capture_bindings.cc). Throws error_already_set on failure.
pybind11::object BoundFunction(PyMethodDef* def, PyObject* capsule);

void RegisterWriter(pybind11::module_& m);
void RegisterTrial(pybind11::module_& m);
void RegisterStats(pybind11::module_& m);
// Capture (hook, collections, config checks): python/src/capture_bindings.cc.
void RegisterCapture(pybind11::module_& m);
// Tensor names (trainscope/tensor_names.h): python/src/names_py.cc.
void RegisterNames(pybind11::module_& m);
// Rules (built-in rules, evaluation): python/src/rules_bindings.cc.
void RegisterRules(pybind11::module_& m);
// Profiler (timeline writer, system sampler, readers, merge): python/src/profiler_bindings.cc.
void RegisterProfiler(pybind11::module_& m);
// The automatic mode's callbacks in C (auto_forward_pre_hook...): python/src/auto_gate.cc.
void RegisterAutoGate(pybind11::module_& m);
// A forward pre-hook in front of a module's call (pre_call): python/src/pre_call.cc.
void RegisterPreCall(pybind11::module_& m);

}  // namespace trainscope::python

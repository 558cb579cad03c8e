// Pieces shared by the binding files of trainscope._core.
#pragma once

#include <pybind11/pybind11.h>

#include "trainscope/modes.h"

namespace trainscope::python {

// Accepts 1..4, a ModeKeys-like enum (anything with an int `.value`), or a mode name
// ("TRAIN", "ModeKeys.EVAL"...). Throws ValueError otherwise.
Mode ModeFromPython(pybind11::handle mode);

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

}  // namespace trainscope::python

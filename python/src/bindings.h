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
void RegisterRules(pybind11::module_& m);  // rules_bindings.cc (branch rules)

}  // namespace trainscope::python

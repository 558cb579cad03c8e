// Tensor names for Python (trainscope/tensor_names.h): the Python hook and the automatic mode
// name every tensor through these, so the names are made in one place for every hook. Python
// caches the results per module and parameter (trainscope/pytorch/_names.py): the per-step path
// does not call in here.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "bindings.h"
#include "trainscope/tensor_names.h"

namespace py = pybind11;

namespace trainscope::python {

void RegisterNames(py::module_& m) {
  namespace tn = tensor_names;
  m.attr("GRADIENT_PREFIX") = py::str(std::string(tn::kGradientPrefix));
  m.attr("SCALAR_PREFIX") = py::str(std::string(tn::kScalarPrefix));
  m.attr("INPUT_TENSOR_SUFFIX") = py::str(std::string(tn::kInputInfix));
  m.attr("OUTPUT_TENSOR_SUFFIX") = py::str(std::string(tn::kOutputInfix));
  m.attr("DEFAULT_LOSS_NAME") = py::str(std::string(tn::kDefaultLossName));
  m.def("parameter_name", &tn::ParameterName, py::arg("module"), py::arg("path"),
        "'<module>_<path>': 'Net_fc1.weight' for parameter fc1.weight of module Net.");
  m.def("gradient_name", &tn::GradientName, py::arg("parameter"), "'gradient/<parameter>'.");
  m.def("input_prefix", &tn::InputPrefix, py::arg("module"), "'<module>_input_'.");
  m.def("output_prefix", &tn::OutputPrefix, py::arg("module"), "'<module>_output_'.");
  m.def("input_name", &tn::InputName, py::arg("module"), py::arg("index"),
        "'<module>_input_<index>'.");
  m.def("output_name", &tn::OutputName, py::arg("module"), py::arg("index"),
        "'<module>_output_<index>' (module outputs, losses, recorded values).");
  m.def("scalar_name", &tn::ScalarName, py::arg("name"), "'scalar/<name>'.");
  m.def("user_path", &tn::UserPath, py::arg("path"),
        "A module or parameter path without FSDP's '_fsdp_wrapped_module.' segments.");
}

}  // namespace trainscope::python

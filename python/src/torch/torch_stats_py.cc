// The extension module trainscope._torch_stats: the on-device tensor statistics of src/torch
// (trainscope/torch_stats.h) for trainscope.pytorch's hook (pytorch/_device.py).
//
// Built only with the LibTorch module (python/CMakeLists.txt), against the torch of the Python it
// is installed into, with torch's own pybind11 headers and type casters (torch.Tensor <->
// at::Tensor), as torch's C++ extensions are. A torch upgraded after trainscope was installed may
// no longer match its ABI: then importing this module fails, and _device.py falls back to the
// core's CPU statistics and says to reinstall trainscope.
#include <torch/csrc/utils/pybind.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "trainscope/reductions.h"
#include "trainscope/torch_stats.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

// The StatsField named `name` (StatsFieldName's spelling: "nan_count", "abs_m2", ...).
std::optional<StatsField> StatsFieldFromName(std::string_view name) {
  for (size_t i = 0; i < kNumStatsFields; ++i) {
    const auto f = static_cast<StatsField>(i);
    if (StatsFieldName(f) == name) return f;
  }
  return std::nullopt;
}

// A sequence of field names (a plan's "fields", _core.STATS_FIELDS' spelling) -> the set.
StatsFieldSet FieldSetFromPython(const py::iterable& names) {
  StatsFieldSet fields;
  for (py::handle item : names) {
    const auto name = py::cast<std::string>(item);
    const std::optional<StatsField> f = StatsFieldFromName(name);
    if (!f) throw py::value_error("unknown statistic '" + name + "' (see _core.STATS_FIELDS)");
    fields.Add(*f);
  }
  return fields;
}

at::Tensor StatsOnDevice(const at::Tensor& t, const py::iterable& names) {
  const StatsFieldSet fields = FieldSetFromPython(names);
  Result<at::Tensor> r = [&] {
    py::gil_scoped_release release;  // torch's own Python operations release it too
    return TorchStatsOnDevice(t, fields);
  }();
  if (!r.ok()) throw py::value_error(r.status().ToString());
  return std::move(r).value();
}

}  // namespace
}  // namespace trainscope::python

PYBIND11_MODULE(_torch_stats, m) {
  m.doc() =
      "trainscope's on-device tensor statistics (LibTorch), for trainscope.pytorch's hook: "
      "src/torch's TorchStatsOnDevice.";
  m.attr("TORCH_VERSION") = TRAINSCOPE_TORCH_VERSION;  // the torch it was built against
  m.def("stats_on_device", &trainscope::python::StatsOnDevice, py::arg("tensor"), py::arg("fields"),
        "The statistics named in `fields` (names as in _core.STATS_FIELDS; 'count' is left out) "
        "of `tensor`, computed with torch operations where the tensor lives, as ONE 1-D float64 "
        "tensor on its device, not synchronised: the values in _core.STATS_FIELDS' order, "
        "whatever order `fields` lists them in. ValueError for an unknown name or when torch "
        "fails.");
}

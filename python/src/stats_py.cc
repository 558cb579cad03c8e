// Reductions, histograms, TensorBoard export and CRC32C for Python, over the same C++ code the
// writer and reader use (include/trainscope/reductions.h, tensorboard.h, crc32c.h).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "status_py.h"
#include "tensor_input.h"
#include "trainscope/crc32c.h"
#include "trainscope/reductions.h"
#include "trainscope/tensorboard.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

constexpr ReductionOp kAllOps[] = {
    ReductionOp::kMin,      ReductionOp::kMax,      ReductionOp::kMean,
    ReductionOp::kStd,      ReductionOp::kVariance, ReductionOp::kSum,
    ReductionOp::kProd,     ReductionOp::kL1,       ReductionOp::kL2,
    ReductionOp::kNanCount, ReductionOp::kInfCount, ReductionOp::kZeroFraction,
};

// abs_ changes nothing for norms and counts, so compute_stats lists abs_ only for these.
bool HasAbsVariant(ReductionOp op) {
  switch (op) {
    case ReductionOp::kL1:
    case ReductionOp::kL2:
    case ReductionOp::kNanCount:
    case ReductionOp::kInfCount:
    case ReductionOp::kZeroFraction:
      return false;
    default:
      return true;
  }
}

TensorStats StatsOf(py::handle value) {
  std::unique_ptr<PyTensorInput> in = TensorFromPython(value, "value");
  Result<TensorStats> r = [&] {
    py::gil_scoped_release release;
    return ComputeStats(in->view());
  }();
  return ValueOrThrow(std::move(r));
}

Histogram HistogramOf(py::handle value, int bins) {
  std::unique_ptr<PyTensorInput> in = TensorFromPython(value, "value");
  Result<Histogram> r = [&] {
    py::gil_scoped_release release;
    return ComputeHistogram(in->view(), bins);
  }();
  return ValueOrThrow(std::move(r));
}

py::dict HistogramToDict(const Histogram& h) {
  py::dict d;
  d["edges"] = py::array_t<double>(static_cast<py::ssize_t>(h.edges.size()), h.edges.data());
  d["counts"] = py::array_t<double>(static_cast<py::ssize_t>(h.counts.size()), h.counts.data());
  d["min"] = h.min;
  d["max"] = h.max;
  d["num"] = h.num;
  d["sum"] = h.sum;
  d["sum_squares"] = h.sum_squares;
  return d;
}

// A dict as histogram() returns (edges, counts and the optional scalars) -> Histogram.
Histogram HistogramFromDict(const py::dict& d) {
  if (!d.contains("edges") || !d.contains("counts")) {
    throw py::value_error("a histogram dict needs 'edges' and 'counts' (as histogram() returns)");
  }
  Histogram h;
  h.edges = d["edges"].cast<std::vector<double>>();
  h.counts = d["counts"].cast<std::vector<double>>();
  if (h.edges.size() != h.counts.size() + 1) {
    throw py::value_error("histogram: len(edges) must be len(counts) + 1");
  }
  double num = 0;
  for (double c : h.counts) num += c;
  h.num = d.contains("num") ? d["num"].cast<double>() : num;
  h.min = d.contains("min") ? d["min"].cast<double>() : (h.edges.empty() ? 0 : h.edges.front());
  h.max = d.contains("max") ? d["max"].cast<double>() : (h.edges.empty() ? 0 : h.edges.back());
  h.sum = d.contains("sum") ? d["sum"].cast<double>() : 0;
  h.sum_squares = d.contains("sum_squares") ? d["sum_squares"].cast<double>() : 0;
  return h;
}

uint32_t Crc32cOf(const py::buffer& data, uint32_t crc) {
  py::buffer_info info = data.request();
  if (info.ndim > 1 && info.strides.back() != info.itemsize) {
    throw py::value_error("crc32c needs a contiguous buffer");
  }
  const auto n = static_cast<size_t>(info.size * info.itemsize);
  py::gil_scoped_release release;
  return crc32c::Extend(crc, info.ptr, n);
}

}  // namespace

void RegisterStats(py::module_& m) {
  m.def(
      "compute_stats",
      [](py::handle value) {
        TensorStats st = StatsOf(value);
        py::dict d;
        for (ReductionOp op : kAllOps) {
          std::string name(ReductionOpName(op));
          d[py::str(name)] = st.Value(Reduction{op, false});
          if (HasAbsVariant(op)) d[py::str("abs_" + name)] = st.Value(Reduction{op, true});
        }
        d["nan_count"] = st.nan_count;
        d["inf_count"] = st.inf_count;
        d["count"] = st.count;
        return d;
      },
      py::arg("value"),
      "Every reduction of `value` in one pass: {'min', 'abs_min', ..., 'prod', 'abs_prod', 'l1', "
      "'l2', 'nan_count', 'inf_count' (ints), 'zero_fraction', 'count'} (definitions in "
      "trainscope/reductions.h: ddof=0, flattened norms, NaN propagates).");
  m.def(
      "reduction",
      [](py::handle value, const std::string& name, bool abs) {
        Reduction r = ValueOrThrow(ParseReduction(name));
        r.abs = r.abs || abs;
        return StatsOf(value).Value(r);
      },
      py::arg("value"), py::arg("name"), py::arg("abs") = false,
      "One reduction by smdebug name ('mean', 'abs_max', 'l2_norm', 'nan_count', ...).");
  m.def(
      "reduction_names",
      [] {
        std::vector<std::string> names;
        for (ReductionOp op : kAllOps) names.emplace_back(ReductionOpName(op));
        return names;
      },
      "Names of every reduction op.");
  m.def(
      "histogram",
      [](py::handle value, int bins) { return HistogramToDict(HistogramOf(value, bins)); },
      py::arg("value"), py::arg("bins") = 64,
      "{'edges', 'counts', 'min', 'max', 'num', 'sum', 'sum_squares'} over the finite values.");
  m.def("crc32c", &Crc32cOf, py::arg("data"), py::arg("crc") = 0,
        "CRC32C (Castagnoli) of a bytes-like object, continuing from `crc`.");
  m.def(
      "masked_crc32c", [](const py::buffer& data) { return crc32c::Mask(Crc32cOf(data, 0)); },
      py::arg("data"), "TFRecord's masked CRC32C of a bytes-like object.");

  py::class_<TensorBoardWriter>(m, "TensorBoardWriter", R"doc(
Scalars and histograms in TensorBoard's event-file format: one file per mode under
<dir>/<MODE>/ (see trainscope/tensorboard.h). Not thread-safe.)doc")
      .def(py::init(
               [](const std::string& dir) { return ValueOrThrow(TensorBoardWriter::Open(dir)); }),
           py::arg("dir"))
      .def(
          "add_scalar",
          [](TensorBoardWriter& w, py::handle mode, const std::string& tag, int64_t step,
             double value, double wall_time) {
            Mode md = ModeFromPython(mode);
            py::gil_scoped_release release;
            ThrowIfError(w.AddScalar(md, tag, step, value, wall_time));
          },
          py::arg("mode"), py::arg("tag"), py::arg("step"), py::arg("value"),
          py::arg("wall_time") = 0.0)
      .def(
          "add_histogram",
          [](TensorBoardWriter& w, py::handle mode, const std::string& tag, int64_t step,
             py::handle value, int bins, double wall_time) {
            Mode md = ModeFromPython(mode);
            Histogram h = py::isinstance<py::dict>(value)
                              ? HistogramFromDict(py::reinterpret_borrow<py::dict>(value))
                              : HistogramOf(value, bins);
            py::gil_scoped_release release;
            ThrowIfError(w.AddHistogram(md, tag, step, h, wall_time));
          },
          py::arg("mode"), py::arg("tag"), py::arg("step"), py::arg("value"), py::arg("bins") = 64,
          py::arg("wall_time") = 0.0,
          "value: a tensor (histogrammed with `bins` bins) or a dict as histogram() returns.")
      .def(
          "file_path",
          [](TensorBoardWriter& w, py::handle mode) { return w.FilePath(ModeFromPython(mode)); },
          py::arg("mode"))
      .def("flush",
           [](TensorBoardWriter& w) {
             py::gil_scoped_release release;
             ThrowIfError(w.Flush());
           })
      .def("close",
           [](TensorBoardWriter& w) {
             py::gil_scoped_release release;
             ThrowIfError(w.Close());
           })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](TensorBoardWriter& w, py::handle, py::handle, py::handle) {
        py::gil_scoped_release release;
        ThrowIfError(w.Close());
      });
}

}  // namespace trainscope::python

// trainscope._core.Trial: the Python face of trainscope::Trial (include/trainscope/trial.h).
//
// Modes are 1..4 or ModeKeys; steps are global steps unless a mode is given. Errors raise the
// _core exception of the Status code (status_py.h); trainscope.trials turns them into smdebug's
// exceptions. Every call releases the GIL while C++ works (refreshes read files).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "status_py.h"
#include "tensor_output.h"
#include "trainscope/event_file.h"
#include "trainscope/trial.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

using Millis = std::chrono::milliseconds;

Millis SecondsToMillis(double s) { return Millis(std::llround(s * 1000.0)); }

TrialOptions MakeOptions(int64_t range_begin, int64_t range_end, int64_t window,
                         double refresh_interval, double end_delay, bool use_inotify,
                         bool verify_checksums) {
  TrialOptions o;
  o.range_begin = range_begin;
  o.range_end = range_end;
  o.incomplete_step_window = window;
  o.refresh_interval = SecondsToMillis(refresh_interval);
  o.end_delay = SecondsToMillis(end_delay);
  o.use_inotify = use_inotify;
  o.verify_checksums = verify_checksums;
  return o;
}

py::dict CollectionToDict(const CollectionInfo& c) {
  py::dict d;
  d["name"] = c.name;
  d["include_regex"] = c.include_regex;
  d["tensor_names"] = c.tensor_names;
  d["reduction_config"] = c.reduction_config_json;
  d["save_config"] = c.save_config_json;
  d["save_histogram"] = c.save_histogram;
  return d;
}

std::string ReductionKey(Reduction r) { return std::string(ReductionOpName(r.op)); }

class PyTrial {
 public:
  explicit PyTrial(std::unique_ptr<Trial> t) : t_(std::move(t)) {}
  Trial& t() { return *t_; }

 private:
  std::unique_ptr<Trial> t_;
};

// Runs `f` on the Trial without the GIL.
template <typename F>
auto NoGil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

}  // namespace

void RegisterTrial(py::module_& m) {
  m.def(
      "read_event_file",
      [](const std::string& path) {
        auto tensors = ValueOrThrow(NoGil([&] { return ReadEventFile(path); }));
        py::list out;
        for (const EventFileTensor& t : tensors) {
          out.append(py::make_tuple(t.name, t.step, t.wall_time, static_cast<int>(t.mode),
                                    t.mode_step, TensorToNumpy(t.value)));
        }
        return out;
      },
      py::arg("path"), R"doc(
Every tensor of one event file, in file order (trainscope/event_file.h): a list of
(name, step, wall_time, mode, mode_step, numpy value). A damaged record raises (Corruption
naming the file and byte offset); a missing file raises NotFoundError.)doc");
  py::class_<PyTrial>(m, "Trial", R"doc(
Reads a trial folder (written by trainscope or smdebug) while it grows; see trainscope/trial.h.

Open with Trial.open(path, ...) (fails with UnavailableError when no collections file exists
yet) or Trial.open_when_ready(path, ..., timeout=None, poll=0.1) (waits for one). Steps are
global unless a mode (1..4 or ModeKeys) is given. value() returns a read-only numpy array that
views the memory-mapped event file without copying (bfloat16 comes back as float32).
Thread-safe.)doc")
      .def_static(
          "open",
          [](const std::string& path, int64_t range_begin, int64_t range_end, int64_t window,
             double refresh_interval, double end_delay, bool use_inotify, bool verify_checksums) {
            TrialOptions o = MakeOptions(range_begin, range_end, window, refresh_interval,
                                         end_delay, use_inotify, verify_checksums);
            auto r = NoGil([&] { return Trial::Open(path, o); });
            return std::make_unique<PyTrial>(ValueOrThrow(std::move(r)));
          },
          py::arg("path"), py::arg("range_begin") = 0, py::arg("range_end") = -1,
          py::arg("incomplete_step_window") = 1000, py::arg("refresh_interval") = 0.0,
          py::arg("end_delay") = 0.1, py::arg("use_inotify") = true,
          py::arg("verify_checksums") = true)
      .def_static(
          "open_when_ready",
          [](const std::string& path, int64_t range_begin, int64_t range_end, int64_t window,
             double refresh_interval, double end_delay, bool use_inotify, bool verify_checksums,
             std::optional<double> timeout, double poll) {
            TrialOptions o = MakeOptions(range_begin, range_end, window, refresh_interval,
                                         end_delay, use_inotify, verify_checksums);
            Millis t = timeout ? SecondsToMillis(*timeout) : Millis(std::chrono::hours(24 * 365));
            // Wait in slices so Ctrl-C (KeyboardInterrupt) is honoured between them.
            const Millis slice(500);
            auto deadline = std::chrono::steady_clock::now() + t;
            while (true) {
              auto now = std::chrono::steady_clock::now();
              Millis left = std::chrono::duration_cast<Millis>(deadline - now);
              if (left < Millis(0)) left = Millis(0);
              Millis wait = std::min(left, slice);
              auto r =
                  NoGil([&] { return Trial::OpenWhenReady(path, o, wait, SecondsToMillis(poll)); });
              if (r.ok() || r.status().code() != StatusCode::kUnavailable || left <= slice) {
                return std::make_unique<PyTrial>(ValueOrThrow(std::move(r)));
              }
              if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            }
          },
          py::arg("path"), py::arg("range_begin") = 0, py::arg("range_end") = -1,
          py::arg("incomplete_step_window") = 1000, py::arg("refresh_interval") = 0.0,
          py::arg("end_delay") = 0.1, py::arg("use_inotify") = true,
          py::arg("verify_checksums") = true, py::arg("timeout") = py::none(),
          py::arg("poll") = 0.1)
      .def_property_readonly("path", [](PyTrial& s) { return s.t().path(); })
      .def_property_readonly("name", [](PyTrial& s) { return s.t().name(); })
      .def("refresh", [](PyTrial& s) { ThrowIfError(NoGil([&] { return s.t().Refresh(); })); })
      .def("maybe_refresh",
           [](PyTrial& s) { ThrowIfError(NoGil([&] { return s.t().MaybeRefresh(); })); })
      .def(
          "wait_for_change",
          [](PyTrial& s, double timeout) {
            ThrowIfError(NoGil([&] { return s.t().WaitForChange(SecondsToMillis(timeout)); }));
          },
          py::arg("timeout"))
      .def("damaged_index_files",
           [](PyTrial& s) { return NoGil([&] { return s.t().DamagedIndexFiles(); }); })
      .def("incomplete",
           [](PyTrial& s) {
             auto markers = ValueOrThrow(NoGil([&] { return s.t().Incomplete(); }));
             auto count = [](int64_t v) -> py::object {
               return v >= 0 ? py::object(py::int_(v)) : py::object(py::none());
             };
             py::list out;
             for (const IncompleteMarker& m : markers) {
               py::dict d;
               d["worker"] = m.worker;
               d["path"] = m.path;
               d["readable"] = m.readable;
               d["problem"] = m.readable ? py::object(py::none()) : py::object(py::str(m.problem));
               d["final"] = m.final;
               d["steps_written"] = count(m.steps_written);
               d["steps_failed"] = count(m.steps_failed);
               d["steps_dropped"] = count(m.steps_dropped);
               d["first_lost_step"] = count(m.first_lost_step);
               d["first_error"] = m.first_error.empty() ? py::object(py::none())
                                                        : py::object(py::str(m.first_error));
               out.append(std::move(d));
             }
             return out;
           })
      .def("workers", [](PyTrial& s) { return NoGil([&] { return s.t().workers(); }); })
      .def_property_readonly("num_workers", [](PyTrial& s) { return s.t().num_workers(); })
      .def("collections",
           [](PyTrial& s) {
             std::vector<CollectionInfo> cs = NoGil([&] { return s.t().collections(); });
             py::list out;
             for (const CollectionInfo& c : cs) out.append(CollectionToDict(c));
             return out;
           })
      .def(
          "collection",
          [](PyTrial& s, const std::string& name) -> py::object {
            auto c = NoGil([&] { return s.t().collection(name); });
            if (!c) return py::none();
            return CollectionToDict(*c);
          },
          py::arg("name"))
      .def(
          "tensor_names",
          [](PyTrial& s, py::handle mode, std::optional<int64_t> step, const std::string& regex,
             const std::string& collection) {
            Mode md = ModeFromPython(mode);
            return ValueOrThrow(
                NoGil([&] { return s.t().TensorNames(md, step, regex, collection); }));
          },
          py::arg("mode") = 4, py::arg("step") = py::none(), py::arg("regex") = "",
          py::arg("collection") = "")
      .def(
          "has_tensor",
          [](PyTrial& s, const std::string& name) {
            return NoGil([&] { return s.t().HasTensor(name); });
          },
          py::arg("name"))
      .def(
          "steps",
          [](PyTrial& s, py::handle mode, bool show_incomplete) {
            Mode md = ModeFromPython(mode);
            return NoGil([&] { return s.t().Steps(md, show_incomplete); });
          },
          py::arg("mode") = 4, py::arg("show_incomplete_steps") = false)
      .def("modes",
           [](PyTrial& s) {
             std::vector<Mode> ms = NoGil([&] { return s.t().Modes(); });
             std::vector<int> out;
             out.reserve(ms.size());
             for (Mode md : ms) out.push_back(static_cast<int>(md));
             return out;
           })
      .def(
          "mode_of",
          [](PyTrial& s, int64_t step) {
            return static_cast<int>(ValueOrThrow(NoGil([&] { return s.t().ModeOf(step); })));
          },
          py::arg("global_step"))
      .def(
          "mode_step",
          [](PyTrial& s, int64_t step) {
            return ValueOrThrow(NoGil([&] { return s.t().ModeStep(step); }));
          },
          py::arg("global_step"))
      .def(
          "global_step",
          [](PyTrial& s, py::handle mode, int64_t mode_step) {
            Mode md = ModeFromPython(mode);
            return ValueOrThrow(NoGil([&] { return s.t().GlobalStep(md, mode_step); }));
          },
          py::arg("mode"), py::arg("mode_step"))
      .def(
          "has_passed_step",
          [](PyTrial& s, int64_t step, py::handle mode) {
            Mode md = ModeFromPython(mode);
            return static_cast<int>(NoGil([&] { return s.t().HasPassedStep(step, md); }));
          },
          py::arg("step"), py::arg("mode") = 4,
          "0 = UNAVAILABLE, 1 = AVAILABLE, 2 = NOT_YET_AVAILABLE (smdebug's StepState).")
      .def_property_readonly("loaded_all_steps",
                             [](PyTrial& s) { return s.t().loaded_all_steps(); })
      .def("training_ended",
           [](PyTrial& s) { return NoGil([&] { return s.t().training_ended(); }); })
      .def_property_readonly("last_complete_step",
                             [](PyTrial& s) { return s.t().last_complete_step(); })
      .def(
          "tensor_steps",
          [](PyTrial& s, const std::string& tensor, py::handle mode, bool show_incomplete) {
            Mode md = ModeFromPython(mode);
            return ValueOrThrow(
                NoGil([&] { return s.t().TensorSteps(tensor, md, show_incomplete); }));
          },
          py::arg("tensor"), py::arg("mode") = 4, py::arg("show_incomplete_steps") = false)
      .def(
          "tensor_workers",
          [](PyTrial& s, const std::string& tensor, int64_t step, py::handle mode) {
            Mode md = ModeFromPython(mode);
            return ValueOrThrow(NoGil([&] { return s.t().TensorWorkers(tensor, step, md); }));
          },
          py::arg("tensor"), py::arg("step"), py::arg("mode") = 4)
      .def(
          "value",
          [](PyTrial& s, const std::string& tensor, int64_t step, py::handle mode,
             const std::string& worker) {
            Mode md = ModeFromPython(mode);
            Tensor t = ValueOrThrow(NoGil([&] { return s.t().Value(tensor, step, md, worker); }));
            return TensorToNumpy(t);
          },
          py::arg("tensor"), py::arg("step"), py::arg("mode") = 4, py::arg("worker") = "")
      .def(
          "reduction_value",
          [](PyTrial& s, const std::string& tensor, int64_t step, const std::string& name, bool abs,
             py::handle mode, const std::string& worker) {
            Reduction r = ValueOrThrow(ParseReduction(name));
            r.abs = r.abs || abs;
            Mode md = ModeFromPython(mode);
            return ValueOrThrow(
                NoGil([&] { return s.t().ReductionValue(tensor, step, r, md, worker); }));
          },
          py::arg("tensor"), py::arg("step"), py::arg("reduction"), py::arg("abs") = false,
          py::arg("mode") = 4, py::arg("worker") = "")
      .def(
          "saved_reductions",
          [](PyTrial& s, const std::string& tensor, int64_t step, py::handle mode,
             const std::string& worker) {
            Mode md = ModeFromPython(mode);
            auto reds = ValueOrThrow(
                NoGil([&] { return s.t().SavedReductions(tensor, step, md, worker); }));
            py::list out;
            for (const auto& [r, v] : reds) out.append(py::make_tuple(ReductionKey(r), r.abs, v));
            return out;
          },
          py::arg("tensor"), py::arg("step"), py::arg("mode") = 4, py::arg("worker") = "",
          "[(name, abs, value)] of the reductions saved for the tensor at the step.")
      .def(
          "shape",
          [](PyTrial& s, const std::string& tensor, int64_t step, py::handle mode,
             const std::string& worker) {
            Mode md = ModeFromPython(mode);
            auto shape = ValueOrThrow(NoGil([&] { return s.t().Shape(tensor, step, md, worker); }));
            return py::tuple(py::cast(shape));
          },
          py::arg("tensor"), py::arg("step"), py::arg("mode") = 4, py::arg("worker") = "")
      .def(
          "closure_steps",
          [](PyTrial& s, int64_t step, const std::string& worker) {
            auto steps = NoGil([&] { return s.t().ClosureSteps(step, worker); });
            py::list out;
            for (const ClosureStep& c : steps) {
              py::dict d;
              d["optimizer"] = c.optimizer;
              d["evaluations"] = py::cast(c.evaluations);
              out.append(d);
            }
            return out;
          },
          py::arg("step"), py::arg("worker") = "",
          "[{'optimizer', 'evaluations': [[names], ...]}] recorded at the global step.")
      .def(
          "model_calls",
          [](PyTrial& s, int64_t step, const std::string& worker) {
            return NoGil([&] { return s.t().ModelCalls(step, worker); });
          },
          py::arg("step"), py::arg("worker") = "",
          "Calls of the model recorded at the global step (index meta.model_calls); 0: none.");
}

}  // namespace trainscope::python

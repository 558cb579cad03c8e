// trainscope._core.TrialWriter: the Python face of trainscope::TrialWriter.
//
// Every call that may do or wait for I/O (add_tensor's copy, end_step under back-pressure,
// flush, close, write_collections) releases the GIL, so training threads keep running and the
// writer thread can take the GIL to release no-copy tensors. Writers still open when the
// interpreter exits are closed by an atexit hook, before Python stops other threads.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <set>
#include <string>
#include <utility>

#include "bindings.h"
#include "status_py.h"
#include "tensor_input.h"
#include "trainscope/thread_annotations.h"
#include "trainscope/writer.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

class PyTrialWriter;

// Writers alive now, so the atexit hook can close them.
Mutex g_live_mu;
std::set<PyTrialWriter*>& LiveWriters() TS_REQUIRES(g_live_mu) {
  static auto* live = new std::set<PyTrialWriter*>();  // never freed: used during exit
  return *live;
}

class PyTrialWriter {
 public:
  PyTrialWriter(const std::string& dir, WriterOptions options) {
    Result<std::unique_ptr<TrialWriter>> w = [&] {
      py::gil_scoped_release release;
      return TrialWriter::Open(dir, std::move(options));
    }();
    writer_ = ValueOrThrow(std::move(w));
    MutexLock lock(&g_live_mu);
    LiveWriters().insert(this);
  }
  ~PyTrialWriter() {
    {
      MutexLock lock(&g_live_mu);
      LiveWriters().erase(this);
    }
    // Closing waits for the writer thread, which may need the GIL to drop no-copy tensors.
    ResetWithoutGil(writer_);
  }

  TrialWriter& w() {
    if (!writer_) throw py::value_error("the TrialWriter was closed");
    return *writer_;
  }

  void BeginStep(int64_t global_step, py::handle mode, int64_t mode_step) {
    Mode m = ModeFromPython(mode);
    ThrowIfError(w().BeginStep(global_step, m, mode_step < 0 ? global_step : mode_step));
  }

  void AddTensor(const std::string& name, py::handle value) {
    std::unique_ptr<PyTensorInput> in = TensorFromPython(value, name);
    Status s;
    {
      py::gil_scoped_release release;
      s = w().AddTensor(name, in->view());
    }
    ThrowIfError(s);
  }

  void AddTensorNoCopy(const std::string& name, py::handle value) {
    std::unique_ptr<PyTensorInput> in = TensorFromPython(value, name);
    if (!in->view().is_contiguous() || in->view().dtype == DType::kString) {
      throw py::value_error("tensor '" + name +
                            "': add_tensor_nocopy needs a contiguous numeric tensor; use "
                            "add_tensor (which copies) for strided views and strings");
    }
    TensorView view = in->view();
    std::shared_ptr<const void> keepalive = KeepaliveHoldingGil(std::move(in));
    Status s;
    {
      py::gil_scoped_release release;
      s = w().AddTensorNoCopy(name, view, std::move(keepalive));
    }
    ThrowIfError(s);
  }

  void AddShape(const std::string& name, const std::vector<int64_t>& shape) {
    ThrowIfError(w().AddShape(name, shape));
  }

  void EndStep() {
    Status s;
    {
      py::gil_scoped_release release;
      s = w().EndStep();
    }
    ThrowIfError(s);
  }

  bool step_open() { return writer_ && writer_->step_open(); }

  void WriteCollections(const std::string& json) {
    Status s;
    {
      py::gil_scoped_release release;
      s = w().WriteCollections(json);
    }
    ThrowIfError(s);
  }

  void Flush() {
    Status s;
    {
      py::gil_scoped_release release;
      s = w().Flush();
    }
    ThrowIfError(s);
  }

  // Idempotent. Raises the first I/O error the writer met, if any.
  void Close() {
    if (!writer_) return;
    Status s;
    {
      py::gil_scoped_release release;
      s = writer_->Close();
    }
    ThrowIfError(s);
  }

  // Closes without raising (atexit). REQUIRES: GIL held.
  void CloseQuietly() {
    if (!writer_) return;
    py::gil_scoped_release release;
    (void)writer_->Close();  // at exit nobody can take the error; close() raises it
  }

  py::dict Stats() {
    WriterStats st = w().stats();
    py::dict d;
    d["steps_written"] = st.steps_written;
    d["steps_dropped"] = st.steps_dropped;
    d["steps_failed"] = st.steps_failed;
    d["tensors_written"] = st.tensors_written;
    d["bytes_written"] = st.bytes_written;
    d["queue_bytes"] = st.queue_bytes;
    d["queue_high_water"] = st.queue_high_water;
    return d;
  }

  py::object FirstError() {
    Status s = w().first_error();
    if (s.ok()) return py::none();
    return py::str(s.ToString());
  }

  std::string dir() { return w().dir(); }
  std::string worker() { return w().worker(); }

 private:
  std::unique_ptr<TrialWriter> writer_;
};

void CloseLiveWriters() {
  std::set<PyTrialWriter*> live;
  {
    MutexLock lock(&g_live_mu);
    live = LiveWriters();
  }
  for (PyTrialWriter* w : live) w->CloseQuietly();
}

WriterOptions::WhenFull ParseWhenFull(const std::string& s) {
  if (s == "block") return WriterOptions::WhenFull::kBlock;
  if (s == "drop") return WriterOptions::WhenFull::kDropStep;
  throw py::value_error("when_full must be 'block' or 'drop', got '" + s + "'");
}

}  // namespace

void RegisterWriter(py::module_& m) {
  py::class_<PyTrialWriter>(m, "TrialWriter", R"doc(
Writes one worker's tensors into a trial folder in smdebug's layout (see trainscope/writer.h).

TrialWriter(out_dir, worker="worker_0", max_queue_bytes=1<<30, when_full="block"|"drop",
            sync=False, write_end_marker=True, quiet=False, io_threads=0)

io_threads: threads that write queued steps' files at once (0 = the default: 2, or 1 under
TRAINSCOPE_THREADS=1); index files still appear one at a time, in step order.

Steps: begin_step(global_step, mode, mode_step); add_tensor(name, value)...; end_step().
add_tensor copies the value (numpy array, __dlpack__ object such as a CPU torch tensor, Python
scalar, list of str); add_tensor_nocopy keeps a reference to a contiguous value until its step is
written (do not modify it meanwhile). close() drains the queue and writes training_job_end.ts.
I/O errors never raise from add/end_step: they are kept in first_error() and counted in stats().
Not thread-safe: one thread at a time (stats and first_error excepted).)doc")
      .def(py::init([](const std::string& out_dir, const std::string& worker,
                       size_t max_queue_bytes, const std::string& when_full, bool sync,
                       bool write_end_marker, bool quiet, int io_threads) {
             if (io_threads < 0 || io_threads > 16) {
               throw py::value_error("io_threads must be 0 (the default) or 1 to 16, got " +
                                     std::to_string(io_threads));
             }
             WriterOptions o;
             o.io_threads = io_threads;
             o.worker = worker;
             o.max_queue_bytes = max_queue_bytes;
             o.when_full = ParseWhenFull(when_full);
             o.sync = sync;
             o.write_end_marker = write_end_marker;
             o.quiet = quiet;
             return std::make_unique<PyTrialWriter>(out_dir, std::move(o));
           }),
           py::arg("out_dir"), py::arg("worker") = "worker_0",
           py::arg("max_queue_bytes") = size_t{1} << 30, py::arg("when_full") = "block",
           py::arg("sync") = false, py::arg("write_end_marker") = true, py::arg("quiet") = false,
           py::arg("io_threads") = 0)
      .def("begin_step", &PyTrialWriter::BeginStep, py::arg("global_step"), py::arg("mode") = 4,
           py::arg("mode_step") = -1,
           "Opens a step. mode: 1..4 or a ModeKeys; mode_step -1 means mode_step = global_step.")
      .def("add_tensor", &PyTrialWriter::AddTensor, py::arg("name"), py::arg("value"))
      .def("add_tensor_nocopy", &PyTrialWriter::AddTensorNoCopy, py::arg("name"), py::arg("value"))
      .def("add_shape", &PyTrialWriter::AddShape, py::arg("name"), py::arg("shape"))
      .def("end_step", &PyTrialWriter::EndStep)
      .def_property_readonly("step_open", &PyTrialWriter::step_open)
      .def("write_collections", &PyTrialWriter::WriteCollections, py::arg("json_str"))
      .def("flush", &PyTrialWriter::Flush)
      .def("close", &PyTrialWriter::Close)
      .def("stats", &PyTrialWriter::Stats)
      .def("first_error", &PyTrialWriter::FirstError)
      .def_property_readonly("dir", &PyTrialWriter::dir)
      .def_property_readonly("worker", &PyTrialWriter::worker)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyTrialWriter& self, py::handle, py::handle, py::handle) { self.Close(); });

  py::module_::import("atexit").attr("register")(py::cpp_function(&CloseLiveWriters));
}

}  // namespace trainscope::python

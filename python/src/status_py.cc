#include "status_py.h"

#include <array>
#include <string_view>

namespace py = pybind11;

namespace trainscope::python {
namespace {

struct CodeClass {
  StatusCode code;
  const char* class_name;
  PyObject* extra_base;  // a builtin exception the class also derives from, or null
  PyObject* type = nullptr;
};

// Filled once at import; the classes live as long as the module (never freed: a module's
// exception types are immortal for practical purposes, and freeing them at exit races teardown).
std::array<CodeClass, 9>& Classes() {
  static std::array<CodeClass, 9> classes = {{
      {StatusCode::kNotFound, "NotFoundError", nullptr},
      {StatusCode::kCorruption, "CorruptionError", nullptr},
      {StatusCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError},
      {StatusCode::kIOError, "IOError", PyExc_OSError},
      {StatusCode::kNotSupported, "NotSupportedError", PyExc_NotImplementedError},
      {StatusCode::kUnavailable, "UnavailableError", nullptr},
      {StatusCode::kOutOfRange, "OutOfRangeError", nullptr},
      {StatusCode::kAborted, "AbortedError", nullptr},
      {StatusCode::kInternal, "InternalError", nullptr},
  }};
  return classes;
}

PyObject* g_base_error = nullptr;

void RaiseStatus(const Status& s) {
  PyObject* type = g_base_error;
  for (const CodeClass& c : Classes()) {
    if (c.code == s.code()) type = c.type;
  }
  py::object cls = py::reinterpret_borrow<py::object>(type);
  py::object exc = cls(py::str(s.ToString()));
  exc.attr("code") = py::str(std::string(StatusCodeName(s.code())));
  exc.attr("message") = py::str(s.message());
  if (s.os_errno() != 0) exc.attr("os_errno") = py::int_(s.os_errno());
  // smdebug's exception class, as a name, and the fields it is built from (status.h).
  if (s.detail() == ErrorDetail::kNone) {
    exc.attr("detail") = py::none();
  } else {
    const ErrorSubject& subject = s.subject();
    exc.attr("detail") = py::str(std::string(ErrorDetailName(s.detail())));
    exc.attr("tensor") = py::str(subject.tensor);
    exc.attr("step") = py::int_(subject.step);
    exc.attr("mode") = py::int_(static_cast<int>(subject.mode));
    exc.attr("worker") = py::str(subject.worker);
    exc.attr("has_reductions") = py::bool_(subject.has_reductions);
    exc.attr("last_step") = py::int_(subject.last_step);
  }
  PyErr_SetObject(type, exc.ptr());
}

}  // namespace

void RegisterStatusExceptions(py::module_& m) {
  g_base_error = PyErr_NewExceptionWithDoc(
      "trainscope._core.Error",
      "A trainscope C++ call failed. Attributes: code (e.g. 'NotFound') and message.",
      PyExc_RuntimeError, nullptr);
  m.add_object("Error", py::handle(g_base_error));
  for (CodeClass& c : Classes()) {
    std::string qualified = std::string("trainscope._core.") + c.class_name;
    py::tuple bases =
        c.extra_base == nullptr
            ? py::tuple(py::make_tuple(py::handle(g_base_error)))
            : py::tuple(py::make_tuple(py::handle(g_base_error), py::handle(c.extra_base)));
    c.type = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    if (c.type == nullptr) throw py::error_already_set();
    m.add_object(c.class_name, py::handle(c.type));
  }
  // pybind11's translator type takes the exception_ptr by value (void (*)(std::exception_ptr)).
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      RaiseStatus(e.status());
    }
  });
}

}  // namespace trainscope::python

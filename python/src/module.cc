// The extension module trainscope._core: C++ writer, reader, reductions and TensorBoard export.
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.h"
#include "status_py.h"

namespace py = pybind11;

namespace trainscope::python {

Mode ModeFromPython(py::handle mode) {
  py::object value = py::reinterpret_borrow<py::object>(mode);
  if (!PyLong_Check(value.ptr()) && py::hasattr(value, "value")) value = value.attr("value");
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) {
    long v = PyLong_AsLong(value.ptr());
    if (v >= 1 && v <= 4) return static_cast<Mode>(v);
  } else if (PyUnicode_Check(value.ptr())) {
    if (auto m = ModeFromName(value.cast<std::string>())) return *m;
  }
  throw py::value_error("invalid mode " + py::repr(mode).cast<std::string>() +
                        ": use ModeKeys.TRAIN/EVAL/PREDICT/GLOBAL or 1..4");
}

int AttrTruth(PyObject* obj, PyObject* name) {
  PyObject* v = PyObject_GetAttr(obj, name);
  if (v == nullptr) {
    PyErr_Clear();
    return -1;
  }
  const int t = v == Py_True ? 1 : (v == Py_False || v == Py_None) ? 0 : PyObject_IsTrue(v);
  Py_DECREF(v);
  if (t < 0) PyErr_Clear();
  return t;
}

py::object BoundFunction(PyMethodDef* def, PyObject* capsule) {
  py::str module_name("trainscope._core");
  PyObject* fn = PyCFunction_NewEx(def, capsule, module_name.ptr());
  Py_DECREF(capsule);  // the function holds it
  if (fn == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

}  // namespace trainscope::python

PYBIND11_MODULE(_core, m) {
  m.doc() = "trainscope's C++ core: trial writer and reader, reductions, TensorBoard export.";
  m.attr("__version__") = TRAINSCOPE_VERSION;
  trainscope::python::RegisterStatusExceptions(m);
  trainscope::python::RegisterWriter(m);
  trainscope::python::RegisterTrial(m);
  trainscope::python::RegisterStats(m);
  trainscope::python::RegisterCapture(m);
  trainscope::python::RegisterNames(m);
  trainscope::python::RegisterRules(m);
  trainscope::python::RegisterProfiler(m);
  trainscope::python::RegisterAutoGate(m);
  trainscope::python::RegisterPreCall(m);
}

// A module's forward pre-hook without PyTorch's slow call path.
//
// nn.Module.__call__ runs a module with no hook of any kind on a fast path (one Python frame that
// calls forward); one forward pre-hook sends every call of it through the slow path, which builds
// the hook lists and a closure and catches exceptions: 4.6 us a call on this project's MLP (a
// no-op Python pre-hook), more than trainscope's step boundary itself. A registered model's call
// is the step boundary of a training with short steps, so trainscope puts its pre-hook in front
// of the call instead: nn.Module.__call__ (`_wrapped_call_impl`) calls
// `module._compiled_call_impl(*args, **kwargs)` when that attribute is set (module.compile()
// sets it to the compiled `_call_impl`), and this function, set there, calls
// `prehook(module, args)` and then `_call_impl(module, *args, **kwargs)`, which runs the
// module's own hooks, if any, as before. Module.__getstate__ drops the attribute, so a copy or a
// pickle of the module is not hooked. trainscope/_pre_call.py decides when it is used.
#include <pybind11/pybind11.h>

#include <vector>

#include "bindings.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

constexpr const char* kPreCallCapsule = "trainscope._core.pre_call";

struct PreCall {
  PyObject* prehook = nullptr;     // prehook(module, args) -> None (or new args, as PyTorch's)
  PyObject* module_ref = nullptr;  // a weak reference: the module holds this function
  PyObject* call_impl = nullptr;   // nn.Module._call_impl (if the class has none)
};

void DestroyPreCall(PyObject* capsule) {
  auto* c = static_cast<PreCall*>(PyCapsule_GetPointer(capsule, kPreCallCapsule));
  if (c == nullptr) return;
  Py_XDECREF(c->prehook);
  Py_XDECREF(c->module_ref);
  Py_XDECREF(c->call_impl);
  delete c;
}

// The module (a new reference), or null with an error set.
PyObject* ModuleOf(const PreCall& c) {
  PyObject* module = PyObject_CallNoArgs(c.module_ref);
  if (module == nullptr) return nullptr;
  if (module == Py_None) {
    Py_DECREF(module);
    PyErr_SetString(PyExc_ReferenceError, "trainscope pre-call: the module is gone");
    return nullptr;
  }
  return module;
}

// The _call_impl of the module's class (a new reference), or null with an error set: the one
// given (nn.Module's) unless the class has its own (its class swapped since: the hook's check
// moves the pre-hook at the next step; until then the module's own is called).
PyObject* CallImplOf(const PreCall& c, PyObject* module) {
  static PyObject* name = PyUnicode_InternFromString("_call_impl");
  if (name == nullptr) return nullptr;
  PyObject* f = PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(module)), name);
  if (f == nullptr) {
    PyErr_Clear();
    return Py_NewRef(c.call_impl);
  }
  return f;
}

PyObject* CallPreCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* c = static_cast<PreCall*>(PyCapsule_GetPointer(self, kPreCallCapsule));
  if (c == nullptr) return nullptr;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  PyObject* module = ModuleOf(*c);
  if (module == nullptr) return nullptr;
  PyObject* inputs = PyTuple_New(nargs);  // the pre-hook's `args`, as PyTorch passes them
  if (inputs == nullptr) {
    Py_DECREF(module);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) PyTuple_SET_ITEM(inputs, i, Py_NewRef(args[i]));
  PyObject* hook_args[2] = {module, inputs};
  PyObject* r = PyObject_Vectorcall(c->prehook, hook_args, 2, nullptr);
  if (r == nullptr) {
    Py_DECREF(inputs);
    Py_DECREF(module);
    return nullptr;
  }
  PyObject* out = nullptr;
  if (r == Py_None) {
    // The usual case: forward the caller's arguments as they came, the module first.
    PyObject* small[9];
    std::vector<PyObject*> large;
    PyObject** v = small;
    if (1 + nargs + nkw > 9) {
      large.resize(static_cast<size_t>(1 + nargs + nkw));
      v = large.data();
    }
    v[0] = module;
    for (Py_ssize_t i = 0; i < nargs + nkw; ++i) v[1 + i] = args[i];
    PyObject* call_impl = CallImplOf(*c, module);
    if (call_impl != nullptr) {
      out = PyObject_Vectorcall(call_impl, v, static_cast<size_t>(1 + nargs), kwnames);
      Py_DECREF(call_impl);
    }
  } else {
    // A pre-hook that returns new inputs (PyTorch's rule: a tuple is the arguments, anything
    // else the single argument); trainscope's return None.
    PyObject* new_args = PyTuple_Check(r) ? Py_NewRef(r) : PyTuple_Pack(1, r);
    PyObject* kwargs = nkw == 0 ? nullptr : PyDict_New();
    bool ok = new_args != nullptr && (nkw == 0 || kwargs != nullptr);
    for (Py_ssize_t i = 0; ok && i < nkw; ++i) {
      ok = PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) == 0;
    }
    PyObject* call_args = nullptr;
    if (ok) {
      const Py_ssize_t n = PyTuple_GET_SIZE(new_args);
      call_args = PyTuple_New(n + 1);
      if (call_args != nullptr) {
        PyTuple_SET_ITEM(call_args, 0, Py_NewRef(module));
        for (Py_ssize_t i = 0; i < n; ++i) {
          PyTuple_SET_ITEM(call_args, i + 1, Py_NewRef(PyTuple_GET_ITEM(new_args, i)));
        }
        PyObject* call_impl = CallImplOf(*c, module);
        if (call_impl != nullptr) {
          out = PyObject_Call(call_impl, call_args, kwargs);
          Py_DECREF(call_impl);
        }
      }
    }
    Py_XDECREF(call_args);
    Py_XDECREF(kwargs);
    Py_XDECREF(new_args);
  }
  Py_DECREF(r);
  Py_DECREF(inputs);
  Py_DECREF(module);
  return out;
}

PyMethodDef pre_call_def = {
    "pre_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(CallPreCall)),
    METH_FASTCALL | METH_KEYWORDS,
    "trainscope's forward pre-hook in front of a module's call: prehook(module, args), then "
    "nn.Module._call_impl(module, *args, **kwargs)."};

}  // namespace

void RegisterPreCall(py::module_& m) {
  m.def(
      "pre_call",
      [](const py::object& prehook, const py::object& module_ref, const py::object& call_impl) {
        auto* c = new PreCall{Py_NewRef(prehook.ptr()), Py_NewRef(module_ref.ptr()),
                              Py_NewRef(call_impl.ptr())};
        PyObject* capsule = PyCapsule_New(c, kPreCallCapsule, DestroyPreCall);
        if (capsule == nullptr) {
          Py_DECREF(c->prehook);
          Py_DECREF(c->module_ref);
          Py_DECREF(c->call_impl);
          delete c;
          throw py::error_already_set();
        }
        py::str module_name("trainscope._core");
        PyObject* fn = PyCFunction_NewEx(&pre_call_def, capsule, module_name.ptr());
        Py_DECREF(capsule);  // the function holds it
        if (fn == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(fn);
      },
      py::arg("prehook"), py::arg("module_ref"), py::arg("call_impl"),
      "A C function f(*args, **kwargs) that calls prehook(module, args), then "
      "call_impl(module, *args, **kwargs) (module = module_ref(), a weak reference): a "
      "module's forward pre-hook for its _compiled_call_impl (trainscope/_pre_call.py).");
}

}  // namespace trainscope::python

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

#include <cstdint>
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
  uint64_t calls = 0;              // calls of the function so far
  uint64_t calls_seen = 0;         // `calls` when StepGate last looked
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
  ++c->calls;
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

// ---- optimizer step gates -----------------------------------------------------------------
//
// A global optimizer step hook written in Python costs a training each step a Python frame (a
// microsecond or more where the step is 0.3 ms), even when it returns at once. These C functions
// stand in front of such hooks and call them only when they have something to do.

constexpr const char* kGateCapsule = "trainscope._core.call_gate";

struct CallGate {
  PyObject* owner = nullptr;    // the object whose attribute is tested
  PyObject* attr = nullptr;     // that attribute's name
  PyObject* fn = nullptr;       // the Python callback
  PyObject* handles = nullptr;  // step gate: the name of the owner's list of _pre_call.Handle
};

void DestroyCallGate(PyObject* capsule) {
  auto* g = static_cast<CallGate*>(PyCapsule_GetPointer(capsule, kGateCapsule));
  if (g == nullptr) return;
  Py_XDECREF(g->owner);
  Py_XDECREF(g->attr);
  Py_XDECREF(g->fn);
  Py_XDECREF(g->handles);
  delete g;
}

PyObject* CallIf(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* g = static_cast<CallGate*>(PyCapsule_GetPointer(self, kGateCapsule));
  if (g == nullptr) return nullptr;
  if (AttrTruth(g->owner, g->attr) == 0) Py_RETURN_NONE;
  return PyObject_Vectorcall(g->fn, args, nargsf, kwnames);  // true, or unknown: fail open
}

// Whether each in-front function of owner.<handles> ran since the last look (each look moves
// the mark): 1 all of them, 0 not, -1 it cannot be told.
int AllCalledSinceLastLook(PyObject* owner, PyObject* handles_name) {
  static PyObject* fn_name = PyUnicode_InternFromString("_fn");
  if (fn_name == nullptr) return -1;
  PyObject* handles = PyObject_GetAttr(owner, handles_name);
  if (handles == nullptr || !PyList_Check(handles)) {
    Py_XDECREF(handles);
    PyErr_Clear();
    return -1;
  }
  int all = 1;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(handles); ++i) {
    PyObject* fn = PyObject_GetAttr(PyList_GET_ITEM(handles, i), fn_name);
    if (fn == nullptr) {
      PyErr_Clear();
      all = -1;
      break;
    }
    if (fn == Py_None) {  // registered as a plain forward pre-hook: nothing to watch
      Py_DECREF(fn);
      continue;
    }
    PreCall* c = nullptr;
    if (PyCFunction_Check(fn)) {
      PyObject* capsule = PyCFunction_GET_SELF(fn);
      if (capsule != nullptr && PyCapsule_IsValid(capsule, kPreCallCapsule)) {
        c = static_cast<PreCall*>(PyCapsule_GetPointer(capsule, kPreCallCapsule));
      }
    }
    Py_DECREF(fn);
    if (c == nullptr) {
      all = -1;
      break;
    }
    if (c->calls == c->calls_seen) all = 0;
    c->calls_seen = c->calls;
  }
  Py_DECREF(handles);
  return all;
}

PyObject* StepGate(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* g = static_cast<CallGate*>(PyCapsule_GetPointer(self, kGateCapsule));
  if (g == nullptr) return nullptr;
  const int called = AllCalledSinceLastLook(g->owner, g->handles);
  if (called == 1 && AttrTruth(g->owner, g->attr) == 0) Py_RETURN_NONE;
  return PyObject_Vectorcall(g->fn, args, nargsf, kwnames);
}

PyMethodDef call_if_def = {
    "call_if", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(CallIf)),
    METH_FASTCALL | METH_KEYWORDS, "fn(*args, **kwargs) when owner.<attr> is true, else None."};
PyMethodDef step_gate_def = {
    "step_gate", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(StepGate)),
    METH_FASTCALL | METH_KEYWORDS,
    "fn(*args, **kwargs) when owner.<attr> is true or a function in front of a call did not run "
    "since the last call, else None."};

py::object MakeGate(PyMethodDef* def, const py::object& owner, const py::str& attr,
                    const py::object& fn, PyObject* handles) {
  auto* g = new CallGate{Py_NewRef(owner.ptr()), Py_NewRef(attr.ptr()), Py_NewRef(fn.ptr()),
                         handles == nullptr ? nullptr : Py_NewRef(handles)};
  PyObject* capsule = PyCapsule_New(g, kGateCapsule, DestroyCallGate);
  if (capsule == nullptr) {
    delete g;  // the references leak with it: out of memory
    throw py::error_already_set();
  }
  return BoundFunction(def, capsule);
}

}  // namespace

void RegisterPreCall(py::module_& m) {
  m.def(
      "call_if",
      [](const py::object& owner, const py::str& attr, const py::object& fn) {
        return MakeGate(&call_if_def, owner, attr, fn, nullptr);
      },
      py::arg("owner"), py::arg("attr"), py::arg("fn"),
      "A C function f(*args, **kwargs): fn(*args, **kwargs) when getattr(owner, attr) is true "
      "(or cannot be read), else None without calling it. A global optimizer step hook that has "
      "nothing to do on most steps costs them no Python frame.");
  m.def(
      "step_gate",
      [](const py::object& owner, const py::str& attr, const py::str& handles,
         const py::object& fn) { return MakeGate(&step_gate_def, owner, attr, fn, handles.ptr()); },
      py::arg("owner"), py::arg("attr"), py::arg("handles"), py::arg("fn"),
      "As call_if, and fn is also called when one of the functions in front of a call "
      "(_pre_call.Handle in the list getattr(owner, handles)) was not called since the gate's "
      "last call: the module's call was replaced (module.compile()), or the module was not "
      "called, and fn looks at them (Handle.check()).");
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
        return BoundFunction(&pre_call_def, capsule);
      },
      py::arg("prehook"), py::arg("module_ref"), py::arg("call_impl"),
      "A C function f(*args, **kwargs) that calls prehook(module, args), then "
      "call_impl(module, *args, **kwargs) (module = module_ref(), a weak reference): a "
      "module's forward pre-hook for its _compiled_call_impl (trainscope/_pre_call.py).");
}

}  // namespace trainscope::python

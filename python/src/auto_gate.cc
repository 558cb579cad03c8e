// The automatic mode's callbacks on a quiet step, in C.
//
// trainscope.auto._capture.AutoSession drives a hook from PyTorch's global callbacks: a forward
// pre-hook on each model, global optimizer step pre- and post-hooks, and a wrapper of
// torch.autograd.backward. On a training with short steps (an MLP's 0.3 ms step) those Python
// callbacks were the automatic mode's cost: +30 us a step against the hook's +15. Almost every
// step is quiet (the step saves nothing, no boundary is pending, the mode is TRAIN): each
// callback then tests a few of the session's attributes and returns, and the forward pre-hook
// makes the step boundary. These functions do that in C, reading the same attributes of the
// session (no state is copied: the Python session stays the one truth), and call the Python
// callback (`slow`) for anything else, which tests everything again. Any failure of the C API
// here falls back to the Python callback too.
//
// Each is a plain CPython function (METH_FASTCALL, no pybind11 dispatch, no Python frame) bound
// to a capsule holding the session and the callables it needs; the session makes them
// (AutoSession._gates).
#include <pybind11/pybind11.h>

#include <unordered_map>

#include "bindings.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

constexpr const char* kGateCapsule = "trainscope._core.auto_gate";

// What a gate function is bound to (strong references).
struct Gate {
  PyObject* session = nullptr;
  PyObject* slow = nullptr;            // the Python callback with the same arguments
  PyObject* original = nullptr;        // backward: the wrapped function
  PyObject* grad_enabled = nullptr;    // forward pre-hook: torch.is_grad_enabled
  PyObject* inference_mode = nullptr;  // forward pre-hook: torch.is_inference_mode_enabled
  PyObject* after = nullptr;           // forward pre-hook: session._after_gate(module, flags)
  // Optimizer pre-hook: the optimizer last found known and fresh (compared, never used), its weak
  // reference in session._known and that dict (see KnownAndFresh).
  PyObject* fresh_opt = nullptr;
  PyObject* fresh_ref = nullptr;
  PyObject* fresh_known = nullptr;
  // Optimizer post-hook: a session._cycle of this one optimizer (NoteStep).
  PyObject* cycle_of_one = nullptr;
  PyObject* cycle_opt = nullptr;  // compared, never used
};

void FreeGate(Gate* g) {
  Py_XDECREF(g->session);
  Py_XDECREF(g->slow);
  Py_XDECREF(g->original);
  Py_XDECREF(g->grad_enabled);
  Py_XDECREF(g->inference_mode);
  Py_XDECREF(g->after);
  Py_XDECREF(g->fresh_ref);
  Py_XDECREF(g->fresh_known);
  Py_XDECREF(g->cycle_of_one);
  delete g;
}

void DestroyGate(PyObject* capsule) {
  auto* g = static_cast<Gate*>(PyCapsule_GetPointer(capsule, kGateCapsule));
  if (g != nullptr) FreeGate(g);
}

// The attribute names read, interned once (RegisterAutoGate).
struct Names {
  PyObject* off;
  PyObject* hook;
  PyObject* saving;
  PyObject* pending;
  PyObject* eval;
  PyObject* manual;
  PyObject* known;
  PyObject* stepped;
  PyObject* cycle;
  PyObject* fast;
  PyObject* explicit_steps;
  PyObject* loss_outputs;
  PyObject* scaled;
  PyObject* roots;
  PyObject* training;
  PyObject* core;
};
Names names;

// A reference that is released when it goes out of scope.
class Ref {
 public:
  explicit Ref(PyObject* p = nullptr) : p_(p) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  ~Ref() { Py_XDECREF(p_); }
  PyObject* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  PyObject* p_;
};

// 1 if obj.name is None, 0 if not, -1 on an error (cleared).
int IsNone(PyObject* obj, PyObject* name) {
  Ref v(PyObject_GetAttr(obj, name));
  if (!v) {
    PyErr_Clear();
    return -1;
  }
  return v.get() == Py_None ? 1 : 0;
}

// The session's "quiet" test (see AutoSession: the hook is made, the step saves nothing, no
// boundary is pending, the mode is TRAIN, no training without an optimizer is captured): 1, 0,
// or -1 on an error. `hook`: session.hook (null after an error). The caller tests session.off.
int Quiet(PyObject* session, const Ref& hook) {
  if (!hook || hook.get() == Py_None) return 0;
  const int saving = AttrTruth(hook.get(), names.saving);
  if (saving != 0) return saving < 0 ? -1 : 0;
  const int pending = AttrTruth(session, names.pending);
  if (pending != 0) return pending < 0 ? -1 : 0;
  const int eval = AttrTruth(session, names.eval);
  if (eval != 0) return eval < 0 ? -1 : 0;
  return IsNone(session, names.manual);
}

Gate* GateOf(PyObject* self) {
  return static_cast<Gate*>(PyCapsule_GetPointer(self, kGateCapsule));
}

PyObject* CallSlow(const Gate& g, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return PyObject_Vectorcall(g.slow, args, nargsf, kwnames);
}

// ---- the model's forward pre-hook (AutoSession._root_forward_pre) ---------------------------

// 1 if the forward pass of `module` is an evaluation one (the model in eval(), inference mode,
// or no_grad with a single model), 0 if a training one, -1 on an error.
int Evaluating(const Gate& g, PyObject* module) {
  const int training = AttrTruth(module, names.training);
  if (training != 1) return training < 0 ? -1 : 1;
  Ref inference(PyObject_CallNoArgs(g.inference_mode));
  if (!inference) {
    PyErr_Clear();
    return -1;
  }
  if (inference.get() == Py_True) return 1;
  Ref roots(PyObject_GetAttr(g.session, names.roots));
  if (!roots) {
    PyErr_Clear();
    return -1;
  }
  const Py_ssize_t n = PyObject_Size(roots.get());
  if (n < 0) {
    PyErr_Clear();
    return -1;
  }
  if (n != 1) return 0;
  Ref grad(PyObject_CallNoArgs(g.grad_enabled));
  if (!grad) {
    PyErr_Clear();
    return -1;
  }
  return grad.get() == Py_False ? 1 : 0;
}

PyObject* ForwardPre(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  Gate* g = GateOf(self);
  if (g == nullptr) return nullptr;
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "forward pre-hook: expected (module, inputs)");
    return nullptr;
  }
  PyObject* module = args[0];
  auto slow = [&] { return CallSlow(*g, args, static_cast<size_t>(nargs), nullptr); };
  PyObject* s = g->session;
  const int off = AttrTruth(s, names.off);
  if (off != 0) return off < 0 ? slow() : Py_NewRef(Py_None);
  Ref hook(PyObject_GetAttr(s, names.hook));
  if (!hook) {
    PyErr_Clear();
    return slow();
  }
  if (hook.get() == Py_None) Py_RETURN_NONE;
  const int pending = AttrTruth(s, names.pending);
  const int eval = AttrTruth(s, names.eval);
  if (pending < 0 || eval < 0) return slow();
  if (pending == 0 && eval == 0) {  // a forward pass inside a training step (a rollout's)
    Ref core(PyObject_GetAttr(hook.get(), names.core));
    if (core) {
      HookCountModelCall(core.get());
    } else {
      PyErr_Clear();
    }
    Py_RETURN_NONE;
  }
  if (eval == 1) return slow();
  // A training step begins, the usual case: when nothing is held for the step that ends and
  // the hook's boundary is on its fast path, the C++ boundary alone.
  if (AttrTruth(hook.get(), names.fast) != 1 || AttrTruth(hook.get(), names.explicit_steps) != 1 ||
      AttrTruth(s, names.loss_outputs) != 0 || AttrTruth(s, names.scaled) != 0 ||
      Evaluating(*g, module) != 0) {
    return slow();
  }
  Ref core(PyObject_GetAttr(hook.get(), names.core));
  if (!core) {
    PyErr_Clear();
    return slow();
  }
  if (PyObject_SetAttr(s, names.pending, Py_False) < 0) {
    PyErr_Clear();
    return slow();
  }
  const int flags = HookBoundary(core.get(), /*model_call=*/true);
  if (flags == 0) Py_RETURN_NONE;
  // Saving, phases, a stop, or a failed boundary (-1: the Python boundary makes it again).
  Ref flags_obj(PyLong_FromLong(flags));
  if (!flags_obj) return nullptr;
  PyObject* call_args[2] = {module, flags_obj.get()};
  return PyObject_Vectorcall(g->after, call_args, 2, nullptr);
}

// ---- the global optimizer step hooks (AutoSession._optimizer_pre, _optimizer_post) ----------

// 1 if `optimizer` is one the session knows (its weak reference in session._known) that has not
// stepped yet in this training step, 0 if not, -1 on an error.
int KnownAndFresh(Gate& g, PyObject* session, PyObject* optimizer) {
  Ref known_map(PyObject_GetAttr(session, names.known));
  Ref stepped(PyObject_GetAttr(session, names.stepped));
  if (!known_map || !stepped || !PyDict_Check(known_map.get()) || !PySet_Check(stepped.get())) {
    PyErr_Clear();
    return -1;
  }
  // The usual step: the optimizer of the last call, alive (its weak reference in the same
  // _known, whose entries are only ever added, or replaced once dead), and nothing stepped yet.
  if (optimizer == g.fresh_opt && known_map.get() == g.fresh_known &&
      PyWeakref_GetObject(g.fresh_ref) == optimizer && PySet_GET_SIZE(stepped.get()) == 0) {
    return 1;
  }
  Ref key(PyLong_FromVoidPtr(optimizer));  // id(optimizer)
  if (!key) {
    PyErr_Clear();
    return -1;
  }
  PyObject* ref = PyDict_GetItemWithError(known_map.get(), key.get());  // borrowed
  if (ref == nullptr) {
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return -1;
    }
    return 0;
  }
  Ref target(PyObject_CallNoArgs(ref));
  if (!target) {
    PyErr_Clear();
    return -1;
  }
  if (target.get() != optimizer) return 0;
  const int in = PySet_Contains(stepped.get(), key.get());
  if (in < 0) {
    PyErr_Clear();
    return -1;
  }
  if (in == 0 && PyWeakref_CheckRef(ref)) {
    g.fresh_opt = optimizer;
    Py_XSETREF(g.fresh_ref, Py_NewRef(ref));
    Py_XSETREF(g.fresh_known, Py_NewRef(known_map.get()));
  }
  return in == 0 ? 1 : 0;
}

// An optimizer step hook (optimizer, args, kwargs): None when the session stood down or when
// `quiet(session, optimizer)` handled the call (returned true), the Python callback otherwise.
template <typename Quiet>
PyObject* OptimizerHook(PyObject* self, PyObject* const* args, Py_ssize_t nargs, Quiet quiet) {
  Gate* g = GateOf(self);
  if (g == nullptr) return nullptr;
  const int off = nargs < 1 ? -1 : AttrTruth(g->session, names.off);
  if (off == 1 || (off == 0 && quiet(*g, args[0]))) Py_RETURN_NONE;
  return CallSlow(*g, args, static_cast<size_t>(nargs), nullptr);
}

PyObject* OptimizerPre(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  // A known optimizer's step in a step that saves nothing.
  return OptimizerHook(self, args, nargs, [](Gate& g, PyObject* optimizer) {
    PyObject* s = g.session;
    Ref hook(PyObject_GetAttr(s, names.hook));
    if (!hook) PyErr_Clear();
    return Quiet(s, hook) == 1 && KnownAndFresh(g, s, optimizer) == 1;
  });
}

// Notes the optimizer's step once the optimizers of a training step are known (session._cycle;
// until then Python learns them); when all have stepped, the next sign of training starts the
// next step (session._pending).
bool NoteStep(Gate& g, PyObject* optimizer) {
  PyObject* s = g.session;
  Ref hook(PyObject_GetAttr(s, names.hook));
  Ref cycle(PyObject_GetAttr(s, names.cycle));
  Ref stepped(PyObject_GetAttr(s, names.stepped));
  if (!hook || !cycle || !stepped) {
    PyErr_Clear();
    return false;
  }
  if (hook.get() == Py_None) return true;
  if (!PySet_Check(cycle.get()) || !PySet_Check(stepped.get())) return false;
  // The usual step of a training with one optimizer: the cycle seen before (the session only ever
  // replaces _cycle, never changes it), nothing else stepped: adding it, comparing and clearing
  // would leave _stepped empty and the step boundary pending.
  if (cycle.get() == g.cycle_of_one && optimizer == g.cycle_opt &&
      PySet_GET_SIZE(stepped.get()) == 0) {
    if (PyObject_SetAttr(s, names.pending, Py_True) < 0) PyErr_Clear();
    return true;
  }
  const bool empty_before = PySet_GET_SIZE(stepped.get()) == 0;
  Ref key(PyLong_FromVoidPtr(optimizer));
  if (!key || PySet_Add(stepped.get(), key.get()) < 0) {
    PyErr_Clear();
    return false;  // nothing was added
  }
  const int all = PyObject_RichCompareBool(cycle.get(), stepped.get(), Py_LE);
  if (all < 0) {
    PyErr_Clear();
    return false;  // Python adds the key again, which changes nothing, and compares
  }
  if (all == 1 &&
      (PySet_Clear(stepped.get()) < 0 || PyObject_SetAttr(s, names.pending, Py_True) < 0)) {
    PyErr_Clear();  // never into the training: the step boundary is late, not the training
  }
  if (all == 1 && empty_before && PySet_GET_SIZE(cycle.get()) == 1) {
    g.cycle_opt = optimizer;
    Py_XSETREF(g.cycle_of_one, Py_NewRef(cycle.get()));
  }
  return true;
}

PyObject* OptimizerPost(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  return OptimizerHook(self, args, nargs, NoteStep);
}

// ---- torch.autograd.backward's wrapper (AutoSession._autograd_backward_wrapper) -------------

PyObject* Backward(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  Gate* g = GateOf(self);
  if (g == nullptr) return nullptr;
  PyObject* s = g->session;
  const int off = AttrTruth(s, names.off);
  int quiet = off;
  if (off == 0) {
    Ref hook(PyObject_GetAttr(s, names.hook));
    if (!hook) PyErr_Clear();
    quiet = Quiet(s, hook);
  }
  PyObject* to = quiet == 1 ? g->original : g->slow;
  return PyObject_Vectorcall(to, args, static_cast<size_t>(nargs), kwnames);
}

// ---- making them ---------------------------------------------------------------------------

// The function `def` bound to `gate` (which it owns from here on).
py::object Bind(PyMethodDef* def, Gate* gate) {
  PyObject* capsule = PyCapsule_New(gate, kGateCapsule, DestroyGate);
  if (capsule == nullptr) {
    FreeGate(gate);
    throw py::error_already_set();
  }
  return BoundFunction(def, capsule);
}

Gate* NewGate(const py::object& session, const py::object& slow) {
  auto* g = new Gate;
  g->session = Py_NewRef(session.ptr());
  g->slow = Py_NewRef(slow.ptr());
  return g;
}

PyMethodDef forward_pre_def = {
    "auto_forward_pre_hook",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(ForwardPre)), METH_FASTCALL,
    "The automatic mode's forward pre-hook of a model (module, inputs) -> None."};
PyMethodDef optimizer_pre_def = {
    "auto_optimizer_pre_hook",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(OptimizerPre)), METH_FASTCALL,
    "The automatic mode's global optimizer step pre-hook (optimizer, args, kwargs)."};
PyMethodDef optimizer_post_def = {
    "auto_optimizer_post_hook",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(OptimizerPost)), METH_FASTCALL,
    "The automatic mode's global optimizer step post-hook (optimizer, args, kwargs)."};
PyMethodDef backward_def = {
    "backward", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Backward)),
    METH_FASTCALL | METH_KEYWORDS,
    "torch.autograd.backward, watched by trainscope's automatic mode (trainscope.auto)."};

// The objects of the list `objects` whose type is a subclass of `kind` (issubclass, so a
// __subclasscheck__ is honoured), each type asked once: the automatic mode's scan of the
// garbage collector's objects (a few hundred thousand once torch is imported), at C speed.
py::list InstancesOf(const py::list& objects, const py::object& kind) {
  std::unordered_map<PyTypeObject*, bool> is_kind;
  PyTypeObject* last = nullptr;  // objects of one type often come together
  bool last_is = false;
  py::list out;
  const Py_ssize_t n = PyList_GET_SIZE(objects.ptr());
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* o = PyList_GET_ITEM(objects.ptr(), i);
    PyTypeObject* t = Py_TYPE(o);
    if (t != last) {
      auto it = is_kind.find(t);
      if (it == is_kind.end()) {
        const int r = PyObject_IsSubclass(reinterpret_cast<PyObject*>(t), kind.ptr());
        if (r < 0) throw py::error_already_set();
        it = is_kind.emplace(t, r == 1).first;
      }
      last = t;
      last_is = it->second;
    }
    if (last_is) out.append(o);
  }
  return out;
}

}  // namespace

void RegisterAutoGate(py::module_& m) {
  auto intern = [](const char* s) {
    PyObject* p = PyUnicode_InternFromString(s);
    if (p == nullptr) throw py::error_already_set();
    return p;  // kept for the life of the process
  };
  names = Names{
      intern("off"),     intern("hook"),    intern("_saving"),         intern("_pending"),
      intern("_eval"),   intern("_manual"), intern("_known"),          intern("_stepped"),
      intern("_cycle"),  intern("_fast"),   intern("_explicit_steps"), intern("_loss_outputs"),
      intern("_scaled"), intern("roots"),   intern("training"),        intern("_c")};
  m.def(
      "auto_forward_pre_hook",
      [](const py::object& session, const py::object& slow, const py::object& after,
         const py::object& grad_enabled, const py::object& inference_mode) {
        Gate* g = NewGate(session, slow);
        g->after = Py_NewRef(after.ptr());
        g->grad_enabled = Py_NewRef(grad_enabled.ptr());
        g->inference_mode = Py_NewRef(inference_mode.ptr());
        return Bind(&forward_pre_def, g);
      },
      py::arg("session"), py::arg("slow"), py::arg("after"), py::arg("is_grad_enabled"),
      py::arg("is_inference_mode_enabled"),
      "The model's forward pre-hook of an AutoSession, in C: on a quiet step's first training "
      "forward pass the hook's step boundary (then after(module, flags) when its flags are not "
      "0, or are -1: it failed), nothing on the other quiet passes, slow(module, inputs) "
      "otherwise.");
  m.def(
      "auto_optimizer_pre_hook",
      [](const py::object& session, const py::object& slow) {
        return Bind(&optimizer_pre_def, NewGate(session, slow));
      },
      py::arg("session"), py::arg("slow"),
      "An AutoSession's global optimizer step pre-hook, in C: None for a known optimizer's "
      "first step in a quiet step, slow(optimizer, args, kwargs) otherwise.");
  m.def(
      "auto_optimizer_post_hook",
      [](const py::object& session, const py::object& slow) {
        return Bind(&optimizer_post_def, NewGate(session, slow));
      },
      py::arg("session"), py::arg("slow"),
      "An AutoSession's global optimizer step post-hook, in C, once the optimizers of a "
      "training step are known (session._cycle): notes the step, and when all have stepped "
      "sets session._pending; slow(optimizer, args, kwargs) before.");
  m.def("instances_of", &InstancesOf, py::arg("objects"), py::arg("kind"),
        "[o for o in objects if issubclass(type(o), kind)], each type asked once.");
  m.def(
      "auto_backward",
      [](const py::object& session, const py::object& original, const py::object& slow) {
        Gate* g = NewGate(session, slow);
        g->original = Py_NewRef(original.ptr());
        return Bind(&backward_def, g);
      },
      py::arg("session"), py::arg("original"), py::arg("slow"),
      "A wrapper of torch.autograd.backward, in C: original(...) on a quiet step (or when the "
      "session stood down), slow(...) otherwise.");
}

}  // namespace trainscope::python

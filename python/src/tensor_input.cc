#include "tensor_input.h"

#include <pybind11/numpy.h>

#include <cstring>
#include <optional>
#include <string>
#include <utility>

namespace py = pybind11;

namespace trainscope::python {
namespace {

std::string Quote(std::string_view name) { return "tensor '" + std::string(name) + "'"; }

bool InterpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// numpy dtype -> DType; nullopt if trainscope has no such dtype.
std::optional<DType> DTypeFromNumpy(const py::dtype& dt) {
  const char kind = dt.kind();
  const size_t size = static_cast<size_t>(dt.itemsize());
  switch (kind) {
    case 'b':
      return DType::kBool;
    case 'i':
      if (size == 1) return DType::kI8;
      if (size == 2) return DType::kI16;
      if (size == 4) return DType::kI32;
      if (size == 8) return DType::kI64;
      break;
    case 'u':
      if (size == 1) return DType::kU8;
      if (size == 2) return DType::kU16;
      if (size == 4) return DType::kU32;
      if (size == 8) return DType::kU64;
      break;
    case 'f':
      if (size == 2) return DType::kF16;
      if (size == 4) return DType::kF32;
      if (size == 8) return DType::kF64;
      break;
    case 'c':
      if (size == 8) return DType::kComplex64;
      if (size == 16) return DType::kComplex128;
      break;
    case 'V':  // ml_dtypes.bfloat16 registers as a void-kind dtype named "bfloat16"
      if (size == 2 && py::str(dt.attr("name")).cast<std::string>() == "bfloat16") {
        return DType::kBF16;
      }
      break;
    default:
      break;
  }
  return std::nullopt;
}

// DLPack dtype -> DType; nullopt if unsupported.
std::optional<DType> DTypeFromDlpack(const dlpack::DLDataType& t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case dlpack::kDLInt:
      if (t.bits == 8) return DType::kI8;
      if (t.bits == 16) return DType::kI16;
      if (t.bits == 32) return DType::kI32;
      if (t.bits == 64) return DType::kI64;
      break;
    case dlpack::kDLUInt:
      if (t.bits == 8) return DType::kU8;
      if (t.bits == 16) return DType::kU16;
      if (t.bits == 32) return DType::kU32;
      if (t.bits == 64) return DType::kU64;
      break;
    case dlpack::kDLFloat:
      if (t.bits == 16) return DType::kF16;
      if (t.bits == 32) return DType::kF32;
      if (t.bits == 64) return DType::kF64;
      break;
    case dlpack::kDLBfloat:
      if (t.bits == 16) return DType::kBF16;
      break;
    case dlpack::kDLComplex:
      if (t.bits == 64) return DType::kComplex64;
      if (t.bits == 128) return DType::kComplex128;
      break;
    case dlpack::kDLBool:
      if (t.bits == 8) return DType::kBool;
      break;
    default:
      break;
  }
  return std::nullopt;
}

// Clears `strides` when they describe a C-contiguous layout (dims of size 1 may carry any
// stride; an empty tensor is contiguous), so the writer takes its single-memcpy path.
void NormalizeStrides(const std::vector<int64_t>& shape, std::vector<int64_t>* strides) {
  if (strides->empty()) return;
  if (NumElements(shape) == 0) {
    strides->clear();
    return;
  }
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && (*strides)[i] != expected) return;
    expected *= shape[i];
  }
  strides->clear();
}

void StringsFromList(const py::sequence& items, std::string_view name,
                     std::vector<std::string>* storage, TensorView* view) {
  storage->clear();
  storage->reserve(items.size());
  for (py::handle item : items) {
    if (PyUnicode_Check(item.ptr())) {
      Py_ssize_t n = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &n);
      if (utf8 == nullptr) throw py::error_already_set();
      storage->emplace_back(utf8, static_cast<size_t>(n));
    } else if (PyBytes_Check(item.ptr())) {
      storage->emplace_back(PyBytes_AS_STRING(item.ptr()),
                            static_cast<size_t>(PyBytes_GET_SIZE(item.ptr())));
    } else {
      throw py::type_error(Quote(name) + ": a string tensor holds str or bytes elements, got " +
                           py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>());
    }
  }
  view->dtype = DType::kString;
  view->data = nullptr;
  view->shape = {static_cast<int64_t>(storage->size())};
  view->strides.clear();
  view->strings.assign(storage->begin(), storage->end());
}

bool IsListOfStrings(py::handle value) {
  if (!PyList_Check(value.ptr()) && !PyTuple_Check(value.ptr())) return false;
  py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
  if (seq.size() == 0) return false;
  for (py::handle item : seq) {
    if (!PyUnicode_Check(item.ptr()) && !PyBytes_Check(item.ptr())) return false;
  }
  return true;
}

// torch.Tensor and torch.nn.Parameter (exactly these types), and torch.utils.dlpack.to_dlpack,
// a C function: the hot path of the hook. Tensor.__dlpack__ and __dlpack_device__ are Python
// methods that cost about 10 us per tensor together; to_dlpack costs 0.5 us. Looked up once
// torch is imported; other tensor types (subclasses, other libraries) take the generic path.
struct TorchTypes {
  PyObject* tensor = nullptr;
  PyObject* parameter = nullptr;
  PyObject* to_dlpack = nullptr;
};

const TorchTypes& Torch() {
  static TorchTypes t;  // references leaked on purpose: they live as long as the interpreter
  if (t.to_dlpack == nullptr && PyDict_GetItemString(PyImport_GetModuleDict(), "torch")) {
    try {
      py::module_ torch = py::module_::import("torch");
      py::object to_dlpack = py::module_::import("torch.utils.dlpack").attr("to_dlpack");
      t.tensor = py::object(torch.attr("Tensor")).release().ptr();
      t.parameter = py::object(torch.attr("nn").attr("Parameter")).release().ptr();
      t.to_dlpack = to_dlpack.release().ptr();
    } catch (py::error_already_set&) {  // an unusual torch: the generic path serves it
      t = TorchTypes{};
    }
  }
  return t;
}

// Any other object with __dlpack__: a tensor that requires grad is detached, a device the CPU
// cannot read is refused before anything is exported.
py::object GenericDlpackCapsule(py::object obj, std::string_view name) {
  if (py::hasattr(obj, "requires_grad") && py::hasattr(obj, "detach") &&
      py::bool_(obj.attr("requires_grad"))) {
    obj = obj.attr("detach")();
  }
  if (py::hasattr(obj, "__dlpack_device__")) {
    py::tuple dev = obj.attr("__dlpack_device__")();
    int device_type = dev[0].cast<int>();
    if (device_type != dlpack::kDLCPU && device_type != dlpack::kDLCUDAHost) {
      throw py::value_error(
          Quote(name) + " is on a device the CPU cannot read (DLPack device type " +
          std::to_string(device_type) + ", id " + py::str(dev[1]).cast<std::string>() +
          "): move it to the CPU first (t.detach().cpu()); trainscope's writer reads host "
          "memory only");
    }
  }
  return obj.attr("__dlpack__")();
}

}  // namespace

PyTensorInput::~PyTensorInput() {
  if (managed_ != nullptr && managed_->deleter != nullptr) managed_->deleter(managed_);
}

std::unique_ptr<PyTensorInput> TensorFromPython(py::handle value, std::string_view name) {
  auto in = std::make_unique<PyTensorInput>();
  TensorView& v = in->view_;
  py::module_ np = py::module_::import("numpy");

  // Python scalars (bool before int: bool is an int subclass).
  if (PyBool_Check(value.ptr())) {
    in->scalar_[0] = value.ptr() == Py_True ? 1 : 0;
    v = TensorView::Scalar(DType::kBool, in->scalar_);
    return in;
  }
  if (PyLong_Check(value.ptr())) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) {
      int64_t i = x;
      std::memcpy(in->scalar_, &i, sizeof(i));
      v = TensorView::Scalar(DType::kI64, in->scalar_);
      return in;
    }
    unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      throw py::value_error(Quote(name) + ": integer " + py::str(value).cast<std::string>() +
                            " does not fit in 64 bits");
    }
    uint64_t w = u;
    std::memcpy(in->scalar_, &w, sizeof(w));
    v = TensorView::Scalar(DType::kU64, in->scalar_);
    return in;
  }
  if (PyFloat_Check(value.ptr()) && !py::isinstance<py::array>(value)) {
    double d = PyFloat_AS_DOUBLE(value.ptr());
    std::memcpy(in->scalar_, &d, sizeof(d));
    v = TensorView::Scalar(DType::kF64, in->scalar_);
    return in;
  }
  if (IsListOfStrings(value)) {
    in->owner_ = py::reinterpret_borrow<py::object>(value);
    StringsFromList(py::reinterpret_borrow<py::sequence>(value), name, &in->strings_, &v);
    return in;
  }

  // Objects exporting DLPack (torch and friends), unless they are numpy arrays (buffer path).
  const TorchTypes& torch = Torch();
  const auto* type = reinterpret_cast<PyObject*>(Py_TYPE(value.ptr()));
  const bool plain_torch =
      torch.to_dlpack != nullptr && (type == torch.tensor || type == torch.parameter);
  if (plain_torch || (!py::isinstance<py::array>(value) && py::hasattr(value, "__dlpack__"))) {
    py::object obj = py::reinterpret_borrow<py::object>(value);
    py::object capsule;
    if (plain_torch) {
      // to_dlpack exports the memory as it is: a lazily conjugated or negated view is
      // materialised first (Tensor.__dlpack__ refuses those). requires_grad does not matter.
      if (py::bool_(obj.attr("is_conj")()) || py::bool_(obj.attr("is_neg")())) {
        obj = obj.attr("resolve_conj")().attr("resolve_neg")();
      }
      capsule = py::reinterpret_steal<py::object>(PyObject_CallOneArg(torch.to_dlpack, obj.ptr()));
      if (!capsule) throw py::error_already_set();
    } else {
      capsule = GenericDlpackCapsule(obj, name);
    }
    if (!PyCapsule_IsValid(capsule.ptr(), dlpack::kCapsuleName)) {
      throw py::type_error(Quote(name) +
                           ": __dlpack__() did not return an unused 'dltensor' capsule");
    }
    auto* managed = static_cast<dlpack::DLManagedTensor*>(
        PyCapsule_GetPointer(capsule.ptr(), dlpack::kCapsuleName));
    if (managed == nullptr) throw py::error_already_set();
    if (PyCapsule_SetName(capsule.ptr(), dlpack::kUsedCapsuleName) != 0) {
      throw py::error_already_set();
    }
    in->managed_ = managed;  // from here on the destructor calls the producer's deleter
    in->owner_ = obj;
    const dlpack::DLTensor& t = managed->dl_tensor;
    if (t.device.device_type != dlpack::kDLCPU && t.device.device_type != dlpack::kDLCUDAHost) {
      throw py::value_error(Quote(name) + " is not in CPU memory (DLPack device type " +
                            std::to_string(t.device.device_type) +
                            "): move it to the CPU first (t.detach().cpu())");
    }
    std::optional<DType> dtype = DTypeFromDlpack(t.dtype);
    if (!dtype) {
      throw py::type_error(Quote(name) + ": unsupported DLPack dtype (code " +
                           std::to_string(t.dtype.code) + ", bits " + std::to_string(t.dtype.bits) +
                           ", lanes " + std::to_string(t.dtype.lanes) + ")");
    }
    v.dtype = *dtype;
    v.shape.assign(t.shape, t.shape + t.ndim);
    if (t.strides != nullptr) v.strides.assign(t.strides, t.strides + t.ndim);
    NormalizeStrides(v.shape, &v.strides);
    v.data = static_cast<const char*>(t.data) + t.byte_offset;
    return in;
  }

  // Everything else through numpy.
  py::array arr = py::isinstance<py::array>(value) ? py::reinterpret_borrow<py::array>(value)
                                                   : py::array(np.attr("asarray")(value));
  py::dtype dt = arr.dtype();
  const char kind = dt.kind();
  if (kind == 'U' || kind == 'S' || kind == 'O') {
    py::list items = arr.attr("ravel")().attr("tolist")();
    in->owner_ = items;
    StringsFromList(items, name, &in->strings_, &v);
    return in;
  }
  if (!py::bool_(dt.attr("isnative"))) {
    arr = arr.attr("astype")(dt.attr("newbyteorder")("="));
    dt = arr.dtype();
  }
  std::optional<DType> dtype = DTypeFromNumpy(dt);
  if (!dtype) {
    throw py::type_error(Quote(name) + ": numpy dtype " + py::str(dt).cast<std::string>() +
                         " is not supported (use bool, int8-64, uint8-64, float16/32/64, "
                         "bfloat16, complex64/128 or str)");
  }
  const auto itemsize = static_cast<int64_t>(dt.itemsize());
  bool whole_elements = true;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) {
    if (arr.strides(i) % itemsize != 0) whole_elements = false;
  }
  if (!whole_elements) arr = np.attr("ascontiguousarray")(arr);
  v.dtype = *dtype;
  v.shape.resize(static_cast<size_t>(arr.ndim()));
  v.strides.resize(static_cast<size_t>(arr.ndim()));
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) {
    v.shape[static_cast<size_t>(i)] = arr.shape(i);
    v.strides[static_cast<size_t>(i)] = arr.strides(i) / itemsize;
  }
  NormalizeStrides(v.shape, &v.strides);
  v.data = arr.data();
  in->owner_ = std::move(arr);
  return in;
}

std::shared_ptr<const void> KeepaliveHoldingGil(std::unique_ptr<PyTensorInput> input) {
  return std::shared_ptr<const void>(input.release(), [](const void* p) {
    auto* in = static_cast<PyTensorInput*>(const_cast<void*>(p));
    if (!Py_IsInitialized() || InterpreterFinalizing()) return;  // leak rather than crash
    PyGILState_STATE state = PyGILState_Ensure();
    delete in;
    PyGILState_Release(state);
  });
}

}  // namespace trainscope::python

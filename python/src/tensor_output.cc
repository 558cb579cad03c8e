#include "tensor_output.h"

#include <pybind11/numpy.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace py = pybind11;

namespace trainscope::python {
namespace {

std::vector<py::ssize_t> CStrides(const std::vector<int64_t>& shape, size_t itemsize) {
  std::vector<py::ssize_t> strides(shape.size());
  auto stride = static_cast<py::ssize_t>(itemsize);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= static_cast<py::ssize_t>(shape[i]);
  }
  return strides;
}

void MakeReadOnly(py::array& a) { a.attr("setflags")(py::arg("write") = false); }

py::object StringsToNumpy(const Tensor& t) {
  py::list items;
  for (const std::string& s : t.strings) {
    PyObject* u =
        PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
    if (u == nullptr) throw py::error_already_set();
    items.append(py::reinterpret_steal<py::object>(u));
  }
  py::module_ np = py::module_::import("numpy");
  if (items.empty()) return np.attr("array")(items, py::arg("dtype") = "str");
  return np.attr("array")(items);
}

}  // namespace

py::object TensorToNumpy(const Tensor& t) {
  if (t.dtype == DType::kString) return StringsToNumpy(t);
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  const int64_t n = t.num_elements();

  if (t.dtype == DType::kBF16) {
    py::array_t<float> out(shape);
    float* dst = out.mutable_data();
    const auto* src = static_cast<const uint16_t*>(t.data);
    {
      py::gil_scoped_release release;
      for (int64_t i = 0; i < n; ++i) dst[i] = BFloat16ToFloat(src[i]);
    }
    return out;
  }

  py::dtype dt(std::string(DTypeName(t.dtype)));
  const size_t itemsize = DTypeSize(t.dtype);
  if (n == 0 || t.data == nullptr) {
    py::array empty(dt, shape);
    MakeReadOnly(empty);
    return empty;
  }
  if (!t.keepalive) {
    // Nothing owns the bytes beyond this call: copy them.
    py::array copy(dt, shape);
    std::memcpy(copy.mutable_data(), t.data, t.nbytes());
    return copy;
  }
  auto* holder = new std::shared_ptr<const void>(t.keepalive);
  py::capsule base(holder, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  py::array view(dt, shape, CStrides(t.shape, itemsize), t.data, base);
  MakeReadOnly(view);
  return view;
}

}  // namespace trainscope::python

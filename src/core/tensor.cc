#include "trainscope/tensor.h"

#include <cstring>

namespace trainscope {

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool TensorView::is_contiguous() const {
  if (strides.empty()) return true;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

namespace {

// Copies the sub-tensor at dimension `dim` (elements of `esize` bytes).
void CopyDim(const TensorView& v, size_t dim, const char* src, char*& dst, size_t esize) {
  const int64_t n = v.shape[dim];
  const int64_t stride_bytes = v.strides[dim] * static_cast<int64_t>(esize);
  if (dim + 1 == v.shape.size()) {
    if (stride_bytes == static_cast<int64_t>(esize)) {
      std::memcpy(dst, src, static_cast<size_t>(n) * esize);
      dst += n * static_cast<int64_t>(esize);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(dst, src + i * stride_bytes, esize);
      dst += esize;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) CopyDim(v, dim + 1, src + i * stride_bytes, dst, esize);
}

}  // namespace

void CopyToContiguous(const TensorView& v, void* out) {
  const size_t esize = v.element_size();
  if (v.is_contiguous() || v.shape.empty()) {
    if (v.nbytes()) std::memcpy(out, v.data, v.nbytes());
    return;
  }
  if (v.num_elements() == 0) return;
  char* dst = static_cast<char*>(out);
  CopyDim(v, 0, static_cast<const char*>(v.data), dst, esize);
}

TensorView Tensor::view() const {
  TensorView v{dtype, data, shape, {}, {}};
  if (dtype == DType::kString) {
    v.strings.reserve(strings.size());
    for (const auto& s : strings) v.strings.emplace_back(s);
  }
  return v;
}

Tensor Tensor::CopyOf(const TensorView& v) {
  Tensor t;
  t.dtype = v.dtype;
  t.shape = v.shape;
  if (v.dtype == DType::kString) {
    t.strings.assign(v.strings.begin(), v.strings.end());
    return t;
  }
  size_t n = v.nbytes();
  std::shared_ptr<char[]> buf(new char[n ? n : 1]);
  CopyToContiguous(v, buf.get());
  t.data = buf.get();
  t.keepalive = std::shared_ptr<const void>(buf, buf.get());
  return t;
}

}  // namespace trainscope

// Tensor views over borrowed bytes, and tensors read back from a trial.
//
// TensorView does not own its data: the caller keeps `data` alive and unchanged until the call
// that takes the view returns (the writer copies what it needs before returning). A view may be
// strided (strides in elements, as in DLPack); an empty `strides` means C-contiguous.
//
// Tensor owns (or shares) its bytes: values read from a trial point straight into a memory map of
// the event file, kept alive by `keepalive`, so reading a value copies nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/dtype.h"

namespace trainscope {

// Number of elements of a shape (1 for a 0-d shape, 0 if any dim is 0).
int64_t NumElements(const std::vector<int64_t>& shape);
// "[16, 8]"
std::string ShapeToString(const std::vector<int64_t>& shape);

struct TensorView {
  DType dtype = DType::kInvalid;
  const void* data = nullptr;             // borrowed; ignored for kString
  std::vector<int64_t> shape;             // empty = 0-d scalar
  std::vector<int64_t> strides;           // elements; empty = C-contiguous
  std::vector<std::string_view> strings;  // kString only: one per element, borrowed

  int64_t num_elements() const { return NumElements(shape); }
  size_t element_size() const { return DTypeSize(dtype); }
  // True if the elements are laid out C-contiguously (strides empty or equal to the C strides).
  bool is_contiguous() const;
  // Bytes of the contiguous payload (num_elements * element_size).
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * element_size(); }

  static TensorView Scalar(DType t, const void* data) { return {t, data, {}, {}, {}}; }
};

// Copies the elements of `v` C-contiguously into `out` (which must hold v.nbytes() bytes).
// Works for any strides, including negative ones and broadcast (0) strides.
void CopyToContiguous(const TensorView& v, void* out);

// A tensor value read from a trial (or built by a test).
struct Tensor {
  DType dtype = DType::kInvalid;
  std::vector<int64_t> shape;
  const void* data = nullptr;             // C-contiguous, nbytes() bytes, valid while keepalive is
  std::shared_ptr<const void> keepalive;  // owner of `data` (a mapped file or a heap buffer)
  std::vector<std::string> strings;       // kString only

  int64_t num_elements() const { return NumElements(shape); }
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype); }
  TensorView view() const;
  // Makes a tensor that owns a heap copy of `v`'s elements (made contiguous).
  static Tensor CopyOf(const TensorView& v);
};

}  // namespace trainscope

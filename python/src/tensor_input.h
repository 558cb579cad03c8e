// Python values -> TensorView, for the writer and the reduction functions.
//
// Accepted values (TensorFromPython):
// - numpy arrays (any dtype trainscope has; strided and non-native-byte-order views allowed);
//   str/bytes/object arrays become string tensors (flattened to 1-D);
// - any object with __dlpack__ whose memory the CPU can read (torch CPU tensors incl. bfloat16,
//   float16 and bool; strided views allowed): consumed through the DLPack capsule protocol
//   (capsule "dltensor" renamed "used_dltensor", the producer's deleter called when done).
//   A torch tensor that requires grad is detached first (torch.Tensor and nn.Parameter go
//   through torch.utils.dlpack.to_dlpack, a C function, instead of the Python methods
//   __dlpack__/__dlpack_device__). CUDA and other device tensors are
//   rejected with a ValueError saying to move them to the CPU;
// - Python bool / int / float: 0-d bool / int64 / float64;
// - anything numpy.asarray accepts (lists of numbers, lists of str, numpy scalars, buffers).
//
// The resulting PyTensorInput owns (or references) everything its view borrows.
// Thread safety: a PyTensorInput may be read from any thread, but must be created and destroyed
// with the GIL held (destruction drops Python references and may call a DLPack deleter).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlpack_abi.h"
#include "trainscope/tensor.h"

namespace trainscope::python {

class PyTensorInput {
 public:
  PyTensorInput() = default;
  ~PyTensorInput();
  PyTensorInput(const PyTensorInput&) = delete;
  PyTensorInput& operator=(const PyTensorInput&) = delete;

  const TensorView& view() const { return view_; }

 private:
  friend std::unique_ptr<PyTensorInput> TensorFromPython(pybind11::handle, std::string_view);
  TensorView view_;
  pybind11::object owner_;                      // keeps the borrowed memory alive
  dlpack::DLManagedTensor* managed_ = nullptr;  // a consumed DLPack tensor, deleted in the dtor
  std::vector<std::string> strings_;            // storage of a string tensor
  alignas(16) unsigned char scalar_[16] = {};   // storage of a Python scalar
};

// Converts `value`. `name` is used in error messages only. Throws pybind11::type_error or
// pybind11::value_error naming the tensor and the problem. REQUIRES: GIL held.
std::unique_ptr<PyTensorInput> TensorFromPython(pybind11::handle value, std::string_view name);

// A keepalive for TrialWriter::AddTensorNoCopy: owns `input` and destroys it with the GIL held,
// from whichever thread drops the last reference. If the interpreter is finalizing by then, the
// input is leaked instead (touching Python objects then is not allowed).
std::shared_ptr<const void> KeepaliveHoldingGil(std::unique_ptr<PyTensorInput> input);

}  // namespace trainscope::python

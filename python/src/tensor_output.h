// Tensor (read from a trial) -> numpy.
//
// Numeric tensors become a read-only numpy array that views the Tensor's bytes with no copy (the
// bytes of a trial value are a memory map of the event file): its `base` is a PyCapsule that holds
// the Tensor's keepalive, so the map lives as long as the array or any view of it. Exceptions:
// bfloat16 becomes a new float32 array (numpy has no bfloat16; every bf16 value is exactly a
// float32), string tensors become a numpy str array, and a tensor without a keepalive is copied.
#pragma once

#include <pybind11/pybind11.h>

#include "trainscope/tensor.h"

namespace trainscope::python {

// REQUIRES: GIL held.
pybind11::object TensorToNumpy(const Tensor& t);

}  // namespace trainscope::python

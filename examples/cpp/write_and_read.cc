// Writes a trial with the C++ API, then reads it back: the README's C++ example
// (the region between the readme markers is the README's block, checked by
// tests/python/test_install.py).
//
//   write_and_read [trial_dir]      (default /tmp/run1)
//
// Prints what it read and exits 0, or prints the failing call's Status and exits 1. Built against
// the installed package by examples/cpp/CMakeLists.txt (find_package) or with pkg-config.
// [readme-begin]
#include <cstdio>
#include <string>

#include "trainscope/collection.h"
#include "trainscope/trial.h"
#include "trainscope/writer.h"

// Every fallible call returns a Status or a Result<T>: check it (TS_RETURN_IF_ERROR,
// TS_ASSIGN_OR_RETURN) and never call .value() on a Result that is not ok().
trainscope::Status WriteAndRead(const std::string& dir) {
  TS_ASSIGN_OR_RETURN(auto writer, trainscope::TrialWriter::Open(dir, {}));
  float w[4] = {1, 2, 3, 4};
  trainscope::TensorView view;  // borrows w; AddTensor copies the bytes
  view.dtype = trainscope::DType::kF32;
  view.data = w;
  view.shape = {2, 2};
  for (int64_t step = 0; step < 3; ++step) {
    TS_RETURN_IF_ERROR(writer->BeginStep(/*global_step=*/step, trainscope::Mode::kTrain,
                                         /*mode_step=*/step));
    TS_RETURN_IF_ERROR(writer->AddTensor("Net_fc1.weight", view));
    TS_RETURN_IF_ERROR(writer->EndStep());  // returns at once; I/O threads write the step
    w[0] += 1;
  }
  // Readers (trainscope and smdebug) open a trial only once it has a collections file.
  auto collections = trainscope::CollectionManager::WithPyTorchDefaults();
  collections.GetOrCreate("weights")->AddTensorName("Net_fc1.weight");
  TS_RETURN_IF_ERROR(writer->WriteCollections(collections.ToJson(/*num_workers=*/1)));
  TS_RETURN_IF_ERROR(writer->Close());  // drains the queue, writes training_job_end.ts

  TS_ASSIGN_OR_RETURN(auto trial, trainscope::Trial::Open(dir));
  for (int64_t step : trial->Steps()) {
    // A zero-copy view of the event file.
    TS_ASSIGN_OR_RETURN(trainscope::Tensor value, trial->Value("Net_fc1.weight", step));
    const float* v = static_cast<const float*>(value.data);
    std::printf("step %lld: Net_fc1.weight = [%g, %g, %g, %g]\n", static_cast<long long>(step),
                v[0], v[1], v[2], v[3]);
  }
  return trainscope::Status::OK();
}

int main(int argc, char** argv) {
  trainscope::Status status = WriteAndRead(argc > 1 ? argv[1] : "/tmp/run1");
  if (!status.ok()) {
    std::fprintf(stderr, "write_and_read: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
// [readme-end]

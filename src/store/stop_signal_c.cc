// The C interface of the stop signal. Nothing here may throw across the C boundary.
#include "trainscope/stop_signal_c.h"

#include <cstring>
#include <new>

#include "trainscope/stop_signal.h"

struct trainscope_stop_signal {
  trainscope::StopSignal signal;
};

extern "C" {

trainscope_stop_signal* trainscope_stop_signal_open(const char* trial_dir) {
  if (trial_dir == nullptr) return nullptr;
  try {
    return new trainscope_stop_signal{trainscope::StopSignal(trial_dir)};
  } catch (...) {
    return nullptr;
  }
}

int trainscope_stop_signal_check(const trainscope_stop_signal* signal) {
  return signal != nullptr && signal->signal.Check() ? 1 : 0;
}

void trainscope_stop_signal_close(trainscope_stop_signal* signal) { delete signal; }

int trainscope_stop_requested(const char* trial_dir) {
  if (trial_dir == nullptr) return 0;
  try {
    return trainscope::StopSignal::Check(trial_dir) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

long trainscope_stop_reason(const char* trial_dir, char* buf, size_t buf_len) {
  if (trial_dir == nullptr) return -1;
  try {
    auto request = trainscope::StopSignal(trial_dir).Read();
    if (!request.ok()) return -1;
    std::string json = trainscope::StopRequestToJson(*request);
    if (buf != nullptr && json.size() < buf_len) std::memcpy(buf, json.c_str(), json.size() + 1);
    return static_cast<long>(json.size());
  } catch (...) {
    return -1;
  }
}

int trainscope_request_stop(const char* trial_dir, const char* explanation) {
  if (trial_dir == nullptr) return -1;
  try {
    trainscope::StopRequest request;
    request.source = "user";
    request.explanation = explanation != nullptr ? explanation : "stop requested by a person";
    request.time_micros = static_cast<int64_t>(trainscope::Env::Default()->NowMicros());
    return trainscope::StopSignal::Raise(nullptr, trial_dir, request).ok() ? 0 : -1;
  } catch (...) {
    return -1;
  }
}

}  // extern "C"

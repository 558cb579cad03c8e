// Test helper: reads a trial back with the store's own decoders (no reader module) and checks
// every invariant the writer promises.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "store/event_codec.h"
#include "store/index_file.h"
#include "store/record_io.h"
#include "trainscope/crc32c.h"
#include "trainscope/env.h"
#include "trainscope/trial_format.h"

namespace trainscope::testing {

struct ReadTensor {
  DType dtype = DType::kInvalid;
  std::vector<int64_t> shape;
  std::string bytes;                 // numeric
  std::vector<std::string> strings;  // kString
  Mode mode = Mode::kGlobal;
  int64_t mode_step = 0;
  uint64_t content_offset = 0;  // of the tensor bytes in the event file
};

struct ReadStep {
  Mode mode = Mode::kGlobal;
  int64_t mode_step = 0;
  std::map<std::string, ReadTensor> tensors;
  std::map<std::string, std::vector<int64_t>> shapes;
};

// Every file under `dir` (relative paths), recursively.
inline std::vector<std::string> ListFiles(Env* env, const std::string& dir,
                                          const std::string& rel = "") {
  std::vector<std::string> out;
  auto children = env->GetChildren(rel.empty() ? dir : JoinPath(dir, rel));
  if (!children.ok()) return out;
  for (const std::string& c : *children) {
    const std::string r = rel.empty() ? c : rel + "/" + c;
    if (env->IsDirectory(JoinPath(dir, r))) {
      for (std::string& f : ListFiles(env, dir, r)) out.push_back(std::move(f));
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// Reads every index file of `worker`; checks that each refers to a complete event file whose
// records are exactly the indexed ones (no garbage between or after them), with matching
// lengths and payload CRC32Cs. Returns step -> contents. Failures are gtest failures.
inline std::map<int64_t, ReadStep> ReadTrialChecked(Env* env, const std::string& dir,
                                                    const std::string& worker = "worker_0") {
  std::map<int64_t, ReadStep> steps;
  for (const std::string& rel : ListFiles(env, dir)) {
    if (rel.rfind("index/", 0) != 0) continue;
    const std::string base = rel.substr(rel.rfind('/') + 1);
    // A writer killed between writing and renaming leaves its ".tmp": not part of the trial.
    if (base.size() > 4 && base.compare(base.size() - 4, 4, ".tmp") == 0) continue;
    auto name = trial_format::ParseStepFileName(base);
    EXPECT_TRUE(name.has_value()) << rel;
    if (!name || name->worker != worker) continue;
    EXPECT_EQ(rel, trial_format::IndexFilePath(name->step, worker));
    auto text = env->ReadFile(JoinPath(dir, rel));
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    if (!text.ok()) continue;
    auto index = ParseIndexFile(*text, rel);
    EXPECT_TRUE(index.ok()) << index.status().ToString();
    if (!index.ok()) continue;
    ReadStep& step = steps[name->step];
    step.mode = index->mode;
    step.mode_step = index->mode_step;
    for (const auto& s : index->shapes) step.shapes[s.tensorname] = s.shape;
    if (index->tensors.empty()) continue;
    EXPECT_EQ(index->event_file_name, trial_format::EventFilePath(name->step, worker));
    auto region = env->MapFile(JoinPath(dir, index->event_file_name));
    EXPECT_TRUE(region.ok()) << rel << ": " << region.status().ToString();
    if (!region.ok()) continue;
    const std::string_view file = (*region)->view();
    uint64_t expected_offset = 0;
    for (const IndexTensorEntry& e : index->tensors) {
      SCOPED_TRACE(index->event_file_name + " " + e.tensorname);
      EXPECT_EQ(e.start_idx, expected_offset);  // records are back to back
      auto rec = record_io::ParseRecordAt(file, e.start_idx, index->event_file_name);
      EXPECT_TRUE(rec.ok()) << rec.status().ToString();
      if (!rec.ok()) continue;
      EXPECT_EQ(rec->length, e.length);
      EXPECT_TRUE(rec->magic_footer);
      expected_offset = e.start_idx + rec->length;
      EXPECT_TRUE(e.crc32c.has_value());
      EXPECT_EQ(e.crc32c.value_or(0), crc32c::Value(rec->payload.data(), rec->payload.size()));
      auto ev = event_codec::DecodeEvent(rec->payload, "record");
      EXPECT_TRUE(ev.ok()) << ev.status().ToString();
      if (!ev.ok() || ev->values.size() != 1) {
        ADD_FAILURE() << "expected one value";
        continue;
      }
      const auto& v = ev->values[0];
      EXPECT_EQ(ev->step, name->step);
      EXPECT_EQ(v.tag, e.tensorname);
      auto t = event_codec::TensorFromProto(v.tensor, nullptr, "record");
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      auto mode = event_codec::ModeFromPluginData(v.plugin_data, ev->step, "record");
      EXPECT_TRUE(mode.ok());
      if (!t.ok() || !mode.ok()) continue;
      ReadTensor rt;
      rt.dtype = t->dtype;
      rt.shape = t->shape;
      rt.strings = t->strings;
      if (t->dtype != DType::kString && t->nbytes() > 0) {
        rt.bytes.assign(static_cast<const char*>(t->data), t->nbytes());
        rt.content_offset = static_cast<uint64_t>(static_cast<const char*>(t->data) - file.data());
      }
      rt.mode = mode->mode;
      rt.mode_step = mode->mode_step;
      EXPECT_EQ(rt.mode, index->mode);
      EXPECT_EQ(rt.mode_step, index->mode_step);
      step.tensors[e.tensorname] = std::move(rt);
    }
    EXPECT_EQ(expected_offset, file.size()) << "bytes after the last indexed record";
  }
  return steps;
}

}  // namespace trainscope::testing

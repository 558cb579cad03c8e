// FastParseIndexFile: the reader's fast index parser agrees with ParseIndexFile wherever it
// accepts a file, and declines (so ParseIndexFile decides) everything outside its subset.
#include <gtest/gtest.h>

#include "store/index_fast_parser.h"
#include "store/index_file.h"

namespace trainscope {
namespace {

// The fast result equals the full parser's (which must accept too).
void ExpectSame(std::string_view text) {
  SCOPED_TRACE(std::string(text));
  IndexFileView fast;
  ASSERT_TRUE(FastParseIndexFile(text, &fast));
  auto slow = ParseIndexFile(text, "x.json");
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(fast.mode, slow->mode);
  EXPECT_EQ(fast.mode_step, slow->mode_step);
  EXPECT_EQ(fast.event_file_name, slow->event_file_name);
  ASSERT_EQ(fast.tensors.size(), slow->tensors.size());
  for (size_t i = 0; i < fast.tensors.size(); ++i) {
    EXPECT_EQ(fast.tensors[i].tensorname, slow->tensors[i].tensorname);
    EXPECT_EQ(fast.tensors[i].start_idx, slow->tensors[i].start_idx);
    EXPECT_EQ(fast.tensors[i].length, slow->tensors[i].length);
    EXPECT_EQ(fast.tensors[i].crc32c, slow->tensors[i].crc32c);
  }
  ASSERT_EQ(fast.shapes.size(), slow->shapes.size());
  for (size_t i = 0; i < fast.shapes.size(); ++i) {
    EXPECT_EQ(fast.shapes[i].tensorname, slow->shapes[i].tensorname);
    EXPECT_EQ(fast.shapes[i].originalname, slow->shapes[i].originalname);
    std::vector<int64_t> dims(
        fast.dims.begin() + fast.shapes[i].first_dim,
        fast.dims.begin() + fast.shapes[i].first_dim + fast.shapes[i].num_dims);
    EXPECT_EQ(dims, slow->shapes[i].shape);
  }
}

// Outside the subset: the fast parser declines; `valid` says what the full parser decides.
void ExpectDeclined(std::string_view text, bool valid) {
  SCOPED_TRACE(std::string(text));
  IndexFileView fast;
  EXPECT_FALSE(FastParseIndexFile(text, &fast));
  EXPECT_EQ(ParseIndexFile(text, "x.json").ok(), valid);
}

TEST(IndexFastParserTest, AgreesOnWhatTheWriterWrites) {
  IndexFile f;
  f.mode = Mode::kEval;
  f.mode_step = 12;
  f.event_file_name = "events/000000000030/000000000030_worker_0.tfevents";
  f.tensors.push_back({"Net_fc1.weight", 0, 1124, 3069522219u});
  f.tensors.push_back({"smdebug/reductions/abs_l2/Net_fc1.weight", 1124, 116, std::nullopt});
  f.shapes.push_back({"Net_fc1.weight", "Net_fc1.weight", {16, 8}});
  f.shapes.push_back({"scalar", "orig", {}});
  ExpectSame(EncodeIndexFile(f));
  f.tensors.clear();
  ExpectSame(EncodeIndexFile(f));
  f.shapes.clear();
  ExpectSame(EncodeIndexFile(f));
}

TEST(IndexFastParserTest, AgreesOnSmdebugLayouts) {
  // As smdebug's IndexWriter writes them (json.dumps), and compact, and with extra keys.
  ExpectSame(
      R"({"meta": {"mode": "TRAIN", "mode_step": 2, "event_file_name": "events/000000000002/000000000002_worker_0.tfevents"}, "tensor_payload": [{"tensorname": "smdebug/reductions/mean/x", "start_idx": 0, "length": 112}, {"tensorname": "x", "start_idx": 112, "length": 645}], "shape_payload": [{"tensorname": "x", "originalname": "x", "shape": [16, 8]}]})");
  ExpectSame(
      R"({"meta":{"mode":"GLOBAL","mode_step":-3,"event_file_name":"e"},"tensor_payload":[]})");
  ExpectSame(
      "{\n \"meta\": {\"mode\": \"ModeKeys.PREDICT\", \"mode_step\": 0, \"extra\": null},\n"
      " \"shape_payload\": [{\"tensorname\": \"s\", \"shape\": [0, -1], \"x\": true}],"
      " \"version\": 2}\n");
  // event_file_name: read only when tensors are listed, or when tensor_payload is absent.
  ExpectSame(
      R"({"meta": {"mode": "EVAL", "mode_step": 1, "event_file_name": "/abs"}, "shape_payload": []})");
  ExpectSame(
      R"({"meta": {"mode": "EVAL", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [], "shape_payload": []})");
  ExpectSame(
      R"({"meta": {"mode": "3", "mode_step": 9223372036854775807}, "shape_payload": [{"tensorname": "t", "shape": [-9223372036854775808]}]})");
  ExpectSame(
      R"({"meta": {"mode": "TRAIN", "mode_step": 0, "event_file_name": "e"}, "tensor_payload": [{"length": 4611686018427387904, "start_idx": 0, "tensorname": "", "crc32c": 4294967295}]})");
}

TEST(IndexFastParserTest, DeclinesWhatItDoesNotHandle) {
  const std::string meta = R"("meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"})";
  auto with = [&](const std::string& payload) { return "{" + meta + ", " + payload + "}"; };
  // Valid files outside the subset.
  ExpectDeclined(with(R"("tensor_payload": [{"tensorname": "a\"b", "start_idx": 0, "length": 1}])"),
                 true);
  ExpectDeclined(
      with(R"("tensor_payload": [{"tensorname": "\u00e9", "start_idx": 0, "length": 1}])"), true);
  ExpectDeclined(
      with("\"tensor_payload\": [{\"tensorname\": \"\xc3\xa9\", \"start_idx\": 0, \"length\": 1}]"),
      true);
  ExpectDeclined(R"({"meta": {"mode": "TRAIN", "mode_step": "7"}, "shape_payload": []})", true);
  ExpectDeclined(with(R"("tensor_payload": null, "shape_payload": [])"), true);
  ExpectDeclined(with(R"("shape_payload": [], "other": {"a": [1]})"), true);
  ExpectDeclined(with(R"("shape_payload": [{"tensorname": "t", "originalname": 5, "shape": [1]}])"),
                 true);
  ExpectDeclined(with(R"("shape_payload": [{"tensorname": "t", "shape": ["2"]}])"), true);
  // Invalid files: the full parser reports them.
  ExpectDeclined("", false);
  ExpectDeclined("[1]", false);
  ExpectDeclined(with(R"("tensor_payload": [])") + " x", false);
  ExpectDeclined(with(R"("tensor_payload": [{"tensorname": "a", "start_idx": 01, "length": 1}])"),
                 false);
  ExpectDeclined(with(R"("tensor_payload": [{"tensorname": "a", "start_idx": 1.0, "length": 1}])"),
                 false);
  ExpectDeclined(with(R"("tensor_payload": [{"tensorname": "a", "start_idx": -1, "length": 1}])"),
                 false);
  ExpectDeclined(with(R"("tensor_payload": [{"tensorname": "a", "start_idx": -0, "length": 1}])"),
                 false);
  ExpectDeclined(with(R"("tensor_payload": [{"tensorname": "a", "start_idx": 0}])"), false);
  ExpectDeclined(
      with(
          R"("tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1, "crc32c": 4294967296}])"),
      false);
  ExpectDeclined(
      with(
          R"("tensor_payload": [{"tensorname": "a", "start_idx": 99999999999999999999, "length": 1}])"),
      false);
  ExpectDeclined(
      with(
          R"("tensor_payload": [{"tensorname": "a", "start_idx": 4611686018427387905, "length": 1}])"),
      false);
  ExpectDeclined(
      R"({"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "../x"}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1}]})",
      false);
  ExpectDeclined(
      R"({"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1}]})",
      false);
  ExpectDeclined(R"({"meta": {"mode": "WARMUP", "mode_step": 1}, "shape_payload": []})", false);
  ExpectDeclined(R"({"meta": {}, "shape_payload": []})", false);
  ExpectDeclined(R"({"meta": {"mode": "TRAIN", "mode_step": 1}})", false);
  ExpectDeclined(R"({"meta": {"mode": "TRAIN"}, "shape_payload": []})", false);
}

}  // namespace
}  // namespace trainscope

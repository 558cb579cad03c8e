#include "store/index_file.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

namespace trainscope {
namespace {

IndexFile Sample() {
  IndexFile f;
  f.mode = Mode::kEval;
  f.mode_step = 2;
  f.event_file_name = "events/000000000006/000000000006_worker_0.tfevents";
  f.tensors.push_back({"smdebug/reductions/mean/Net_fc1.weight", 0, 112, 0xdeadbeefu});
  f.tensors.push_back({"Net \"fc1\"\\w\n\x01 \xc3\xa9", 112, 645, std::nullopt});
  f.shapes.push_back({"Net_fc1.weight", "Net_fc1.weight", {16, 8}});
  f.shapes.push_back({"scalar", "orig", {}});
  return f;
}

TEST(IndexFileTest, RoundTrip) {
  const IndexFile f = Sample();
  const std::string json = EncodeIndexFile(f);
  auto r = ParseIndexFile(json, "idx.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString() << "\n" << json;
  EXPECT_EQ(r->mode, Mode::kEval);
  EXPECT_EQ(r->mode_step, 2);
  EXPECT_EQ(r->event_file_name, f.event_file_name);
  ASSERT_EQ(r->tensors.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r->tensors[i].tensorname, f.tensors[i].tensorname);
    EXPECT_EQ(r->tensors[i].start_idx, f.tensors[i].start_idx);
    EXPECT_EQ(r->tensors[i].length, f.tensors[i].length);
    EXPECT_EQ(r->tensors[i].crc32c, f.tensors[i].crc32c);
  }
  ASSERT_EQ(r->shapes.size(), 2u);
  EXPECT_EQ(r->shapes[0].shape, (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(r->shapes[1].originalname, "orig");
  EXPECT_TRUE(r->shapes[1].shape.empty());
  // A second JSON parser agrees (escaping is standard JSON).
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["tensor_payload"][1]["tensorname"].get<std::string>(), f.tensors[1].tensorname);
  EXPECT_EQ(j["tensor_payload"][0]["crc32c"].get<uint64_t>(), 0xdeadbeefu);
}

TEST(IndexFileTest, LayoutMatchesSmdebugJsonDumps) {
  IndexFile f;
  f.mode = Mode::kTrain;
  f.mode_step = 2;
  f.event_file_name = "events/000000000002/000000000002_worker_0.tfevents";
  f.tensors.push_back({"Net_fc1.weight", 0, 112, 7});
  // json.dumps order and separators (smdebug's IndexWriter), plus our crc32c key.
  EXPECT_EQ(EncodeIndexFile(f),
            "{\"meta\": {\"mode\": \"TRAIN\", \"mode_step\": 2, \"event_file_name\": "
            "\"events/000000000002/000000000002_worker_0.tfevents\"}, \"tensor_payload\": "
            "[{\"tensorname\": \"Net_fc1.weight\", \"start_idx\": 0, \"length\": 112, "
            "\"crc32c\": 7}], \"shape_payload\": []}");
}

TEST(IndexFileTest, ShapesOnlyHasNoEventFile) {
  IndexFile f;
  f.shapes.push_back({"a", "a", {3}});
  const std::string json = EncodeIndexFile(f);
  EXPECT_EQ(json.find("event_file_name"), std::string::npos);
  auto r = ParseIndexFile(json, "idx.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->event_file_name.empty());
  EXPECT_EQ(r->mode, Mode::kGlobal);
}

TEST(IndexFileTest, AcceptsSmdebugFiles) {
  // As written by smdebug 1.0.34: no crc32c, mode_step may come as a string from other writers.
  auto r = ParseIndexFile(
      R"({"meta": {"mode": "TRAIN", "mode_step": "4", "event_file_name": "events/x.tfevents"},
          "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 20, "extra": 1}],
          "shape_payload": []})",
      "s.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->mode_step, 4);
  EXPECT_FALSE(r->tensors[0].crc32c.has_value());
}

TEST(IndexFileTest, MalformedFilesAreCorruptionNamingThePath) {
  const char* bad[] = {
      "",
      "not json",
      "[]",
      R"({"tensor_payload": []})",
      R"({"meta": {}, "tensor_payload": []})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1}})",
      R"({"meta": {"mode": "TRAINING", "mode_step": 1}, "shape_payload": []})",
      R"({"meta": {"mode": "TRAIN"}, "shape_payload": []})",
      R"({"meta": {"mode": 1, "mode_step": 1}, "shape_payload": []})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1.5}, "shape_payload": []})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1}]})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "/etc/passwd"}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1}]})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "events/../../x"}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1}]})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"tensorname": "a", "start_idx": -1, "length": 1}]})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"tensorname": 5, "start_idx": 0, "length": 1}]})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1, "crc32c": 4294967296}]})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": {}})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1}, "shape_payload": [{"tensorname": "a", "shape": "3"}]})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1}, "shape_payload": [{"tensorname": "a", "shape": [1.5]}]})",
      R"({"meta": {"mode": "TRAIN", "mode_step": 1}, "shape_payload": [7]})",
  };
  for (const char* doc : bad) {
    auto r = ParseIndexFile(doc, "index/000000000/bad.json");
    ASSERT_EQ(r.status().code(), StatusCode::kCorruption) << doc;
    EXPECT_NE(r.status().message().find("index/000000000/bad.json"), std::string::npos);
  }
}

TEST(IndexFileTest, EveryTruncationIsCorruption) {
  const std::string json = EncodeIndexFile(Sample());
  for (size_t len = 0; len < json.size(); ++len) {
    const std::string cut = json.substr(0, len);
    EXPECT_EQ(ParseIndexFile(cut, "t").status().code(), StatusCode::kCorruption) << len;
  }
}

TEST(IndexFileTest, RandomMutationsNeverCrash) {
  const std::string json = EncodeIndexFile(Sample());
  std::mt19937 rng(99);
  int bad = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string m = json;
    m[rng() % m.size()] = static_cast<char>(rng());
    auto r = ParseIndexFile(m, "m");
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
      ++bad;
    }
  }
  EXPECT_GT(bad, 0);
  // Deep nesting does not overflow the stack.
  EXPECT_EQ(ParseIndexFile(std::string(100000, '['), "deep").status().code(),
            StatusCode::kCorruption);
}

TEST(IndexFileTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xff"));
}

}  // namespace
}  // namespace trainscope

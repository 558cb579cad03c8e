#include "trainscope/tensorboard.h"

#include <gtest/gtest.h>

#include "store/event_codec.h"
#include "store/record_io.h"
#include "trainscope/crc32c.h"

namespace trainscope {
namespace {

TEST(TensorBoardTest, CleanTag) {
  EXPECT_EQ(CleanTensorBoardTag("Net_fc1.weight"), "Net_fc1.weight");
  EXPECT_EQ(CleanTensorBoardTag("gradient/Net fc1:0"), "gradient/Net_fc1_0");
  EXPECT_EQ(CleanTensorBoardTag("//lead/slash"), "lead/slash");
  EXPECT_EQ(CleanTensorBoardTag("a-b(c)[d]"), "a-b_c__d_");
  EXPECT_EQ(CleanTensorBoardTag("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(CleanTensorBoardTag("///"), "");
}

TEST(TensorBoardTest, ScalarsAndHistogramsWithRealCrcs) {
  auto env = NewMemEnv();
  auto w = TensorBoardWriter::Open("/tb", env.get());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->FilePath(Mode::kTrain), "");
  ASSERT_TRUE((*w)->AddScalar(Mode::kTrain, "loss value", 0, 2.5, 100.0).ok());
  ASSERT_TRUE((*w)->AddScalar(Mode::kTrain, "loss value", 1, 1.25, 101.0).ok());
  Histogram h;
  h.edges = {-1, 0, 1};
  h.counts = {3, 5};
  h.min = -1;
  h.max = 1;
  h.num = 8;
  h.sum = 0.5;
  h.sum_squares = 6;
  ASSERT_TRUE((*w)->AddHistogram(Mode::kEval, "weights/w", 7, h, 102.0).ok());
  Histogram bad;
  bad.edges = {0, 1};
  EXPECT_EQ((*w)->AddHistogram(Mode::kEval, "bad", 7, bad).code(), StatusCode::kInvalidArgument);
  const std::string train = (*w)->FilePath(Mode::kTrain);
  const std::string eval = (*w)->FilePath(Mode::kEval);
  EXPECT_EQ(train.rfind("/tb/TRAIN/events.out.tfevents.", 0), 0u) << train;
  EXPECT_EQ(eval.rfind("/tb/EVAL/events.out.tfevents.", 0), 0u) << eval;
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_FALSE((*w)->AddScalar(Mode::kTrain, "late", 2, 1.0).ok());

  auto bytes = env->ReadFile(train);
  ASSERT_TRUE(bytes.ok());
  record_io::RecordIterator it(*bytes, train);
  record_io::RecordRef r;
  std::vector<event_codec::EventView> events;
  std::vector<std::string> payloads;
  while (it.Next(&r)) {
    EXPECT_FALSE(r.magic_footer);  // the real masked CRC of the payload
    payloads.emplace_back(r.payload);
  }
  ASSERT_TRUE(it.status().ok()) << it.status().ToString();
  ASSERT_EQ(payloads.size(), 3u);
  for (const std::string& p : payloads) {
    auto ev = event_codec::DecodeEvent(p, train);
    ASSERT_TRUE(ev.ok()) << ev.status().ToString();
    events.push_back(*ev);
  }
  EXPECT_EQ(events[0].file_version.value_or(""), "brain.Event:2");
  EXPECT_EQ(events[1].values[0].tag, "loss_value");
  EXPECT_EQ(events[1].values[0].simple_value, 2.5f);
  EXPECT_EQ(events[1].wall_time, 100.0);
  EXPECT_EQ(events[2].step, 1);
  EXPECT_EQ(events[2].values[0].simple_value, 1.25f);

  auto eb = env->ReadFile(eval);
  ASSERT_TRUE(eb.ok());
  auto rec = record_io::ParseRecordAt(*eb, 0, eval);
  ASSERT_TRUE(rec.ok());
  auto second = record_io::ParseRecordAt(*eb, rec->length, eval);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const std::string hp(second->payload);
  auto hev = event_codec::DecodeEvent(hp, eval);
  ASSERT_TRUE(hev.ok());
  const auto& hv = hev->values[0];
  EXPECT_EQ(hv.kind, event_codec::SummaryValueView::Kind::kHisto);
  EXPECT_EQ(hv.histo.bucket_limit, (std::vector<double>{-1, 0, 1}));
  EXPECT_EQ(hv.histo.bucket, (std::vector<double>{0, 3, 5}));
  EXPECT_EQ(hv.histo.num, 8);
  EXPECT_EQ(hev->step, 7);
}

}  // namespace
}  // namespace trainscope

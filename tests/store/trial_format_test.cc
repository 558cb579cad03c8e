#include "trainscope/trial_format.h"

#include <gtest/gtest.h>

namespace trainscope::trial_format {
namespace {

TEST(TrialFormatTest, Paths) {
  EXPECT_EQ(EventFilePath(2, "worker_0"), "events/000000000002/000000000002_worker_0.tfevents");
  EXPECT_EQ(IndexFilePath(2, "worker_0"), "index/000000000/000000000002_worker_0.json");
  EXPECT_EQ(IndexFolder(999), "index/000000000");
  EXPECT_EQ(IndexFolder(1000), "index/000000001");
  EXPECT_EQ(IndexFilePath(123456789, "w"), "index/000123456/000123456789_w.json");
  EXPECT_EQ(CollectionsFilePath("worker_1"), "collections/000000000/worker_1_collections.json");
}

TEST(TrialFormatTest, ParseStepFileName) {
  auto a = ParseStepFileName("000000000002_worker_0.json");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->step, 2);
  EXPECT_EQ(a->worker, "worker_0");
  auto b = ParseStepFileName("000000001234__replica-0_task-0_device-GPU-0.tfevents");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->step, 1234);
  EXPECT_EQ(b->worker, "_replica-0_task-0_device-GPU-0");
  auto c = ParseStepFileName("000000000007_w.csv");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->step, 7);
  // Round trip with the writers' names.
  const std::string path = EventFilePath(42, "worker_3");
  auto d = ParseStepFileName(path.substr(path.rfind('/') + 1));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->step, 42);
  EXPECT_EQ(d->worker, "worker_3");
}

TEST(TrialFormatTest, ParseRejectsOtherNames) {
  for (const char* bad :
       {"", ".json", "worker_0.json", "_worker_0.json", "000000000002_.json",
        "000000000002_worker_0.json.tmp", "00000000000x_w.json", "000000000002_worker_0.txt",
        "99999999999999999999999_w.json", "000000000002worker.json"}) {
    EXPECT_FALSE(ParseStepFileName(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace trainscope::trial_format

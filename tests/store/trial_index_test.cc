// TrialIndex: interning, folding reductions, value/shape separation, ordering.
#include "store/trial_index.h"

#include <gtest/gtest.h>

namespace trainscope {
namespace {

TEST(TrialIndexTest, FoldsReductionsAndKeepsShapeBesideValue) {
  TrialIndex ix;
  const uint16_t w0 = ix.InternWorker("worker_0");
  const uint32_t f = ix.AddFile(2, w0, Mode::kTrain, 1, "events/000000000002/x.tfevents");
  ix.AddLocation(f, "smdebug/reductions/abs_mean/fc.weight", 0, 100, std::nullopt);
  ix.AddLocation(f, "fc.weight", 100, 400, 1234u);
  const int64_t dims[] = {16, 8};
  ix.AddShape(f, "fc.weight", dims);
  ASSERT_EQ(ix.num_tensors(), 1u);
  auto id = ix.FindTensor("fc.weight");
  ASSERT_TRUE(id.has_value());
  EXPECT_FALSE(ix.FindTensor("smdebug/reductions/abs_mean/fc.weight").has_value());
  auto locs = ix.At(*id, 2);
  ASSERT_EQ(locs.size(), 3u);
  int values = 0, shapes = 0, reds = 0;
  for (const Location& l : locs) {
    if (l.kind == LocationKind::kValue) {
      ++values;
      EXPECT_EQ(l.offset, 100u);
      EXPECT_EQ(ix.RecordLength(l), 400u);
      EXPECT_TRUE(l.flags & Location::kHasCrc);
      EXPECT_EQ(l.crc32c, 1234u);
    } else if (l.kind == LocationKind::kShape) {
      ++shapes;
      auto d = ix.ShapeDims(l);
      EXPECT_EQ(std::vector<int64_t>(d.begin(), d.end()), (std::vector<int64_t>{16, 8}));
    } else {
      ++reds;
      Reduction r = LocationKind::ToReduction(l.kind);
      EXPECT_EQ(r.op, ReductionOp::kMean);
      EXPECT_TRUE(r.abs);
    }
  }
  EXPECT_EQ(values, 1);
  EXPECT_EQ(shapes, 1);
  EXPECT_EQ(reds, 1);
  EXPECT_EQ(ix.tensor_modes(*id), 1u << static_cast<int>(Mode::kTrain));
  EXPECT_TRUE(ix.At(*id, 3).empty());
}

TEST(TrialIndexTest, OutOfOrderFilesAreSortedAndRepeatsReplaced) {
  TrialIndex ix;
  const uint16_t w0 = ix.InternWorker("worker_0");
  const uint16_t w1 = ix.InternWorker("worker_1");
  EXPECT_EQ(ix.InternWorker("worker_0"), w0);
  for (int64_t s : {0, 1, 2, 3}) {
    uint32_t f = ix.AddFile(s, w0, Mode::kGlobal, s, "e0");
    ix.AddLocation(f, "t", static_cast<uint64_t>(s), 10, std::nullopt);
    ix.AddLocation(f, "t", static_cast<uint64_t>(s) + 100, 10, std::nullopt);  // repeat
  }
  // The lagging worker's older steps arrive last.
  for (int64_t s : {1, 0}) {
    uint32_t f = ix.AddFile(s, w1, Mode::kGlobal, s, "e1");
    ix.AddLocation(f, "t", 7, 10, std::nullopt);
  }
  auto id = *ix.FindTensor("t");
  EXPECT_EQ(ix.StepsOf(id), (std::vector<int64_t>{0, 1, 2, 3}));
  auto at1 = ix.At(id, 1);
  ASSERT_EQ(at1.size(), 2u);
  EXPECT_EQ(at1[0].worker, w0);
  EXPECT_EQ(at1[0].offset, 101u);  // the repeated entry replaced the first
  EXPECT_EQ(at1[1].worker, w1);
  EXPECT_EQ(ix.file(at1[1].file).event_file, "e1");
}

TEST(TrialIndexTest, BigRecordLengthsAndSortedNames) {
  TrialIndex ix;
  const uint32_t f = ix.AddFile(0, ix.InternWorker("w"), Mode::kGlobal, 0, "e");
  const uint64_t big = (uint64_t{1} << 33) + 5;
  ix.AddLocation(f, "zeta", 0, big, std::nullopt);
  ix.AddLocation(f, "alpha", 0, 16, std::nullopt);
  ix.AddLocation(f, "smdebug/reductions/max/beta", 0, 16, std::nullopt);
  std::vector<std::string> names;
  for (uint32_t id : ix.SortedTensorIds()) names.push_back(ix.tensor_name(id));
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "beta", "zeta"}));
  EXPECT_EQ(ix.RecordLength(ix.At(*ix.FindTensor("zeta"), 0)[0]), big);
  EXPECT_GT(ix.MemoryUsage(), 0u);
}

}  // namespace
}  // namespace trainscope

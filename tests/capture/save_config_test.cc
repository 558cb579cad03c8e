#include "trainscope/save_config.h"

#include <gtest/gtest.h>

#include "trainscope/reduction_config.h"

namespace trainscope {
namespace {

std::vector<int64_t> SavedSteps(const SaveConfigMode& m, int64_t upto) {
  std::vector<int64_t> out;
  for (int64_t s = 0; s < upto; ++s) {
    if (m.ShouldSave(s)) out.push_back(s);
  }
  return out;
}

TEST(SaveConfigModeTest, DefaultSavesEvery500StepsFromZero) {
  SaveConfigMode m;
  EXPECT_EQ(SavedSteps(m, 1501), (std::vector<int64_t>{0, 500, 1000, 1500}));
}

TEST(SaveConfigModeTest, IntervalCountsFromZeroNotFromStart) {
  SaveConfigMode m{.save_interval = 3, .start_step = 4, .end_step = 13};
  // smdebug: start <= step < end and step % interval == 0.
  EXPECT_EQ(SavedSteps(m, 20), (std::vector<int64_t>{6, 9, 12}));
}

TEST(SaveConfigModeTest, SaveStepsAreAddedToTheInterval) {
  SaveConfigMode m{.save_interval = 10, .start_step = 0, .end_step = 15, .save_steps = {3, 17}};
  EXPECT_EQ(SavedSteps(m, 25), (std::vector<int64_t>{0, 3, 10, 17}));
}

TEST(SaveConfigModeTest, EndStepZeroSwitchesOff) {
  SaveConfigMode m{.save_interval = 1, .start_step = 0, .end_step = 0};
  EXPECT_TRUE(SavedSteps(m, 10).empty());
}

TEST(SaveConfigModeTest, ValidateSaysWhatToChange) {
  SaveConfigMode bad_interval{.save_interval = -5};
  Status s = bad_interval.Validate("collection 'weights'");
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("collection 'weights'"), std::string::npos);
  EXPECT_NE(s.message().find("save_interval is -5"), std::string::npos);
  EXPECT_NE(s.message().find(">= 1"), std::string::npos);

  EXPECT_FALSE((SaveConfigMode{.save_interval = 0}).Validate().ok());
  EXPECT_FALSE((SaveConfigMode{.start_step = -1}).Validate().ok());
  EXPECT_FALSE((SaveConfigMode{.end_step = -2}).Validate().ok());
  Status steps = (SaveConfigMode{.save_steps = {1, -3}}).Validate();
  EXPECT_NE(steps.message().find("save_steps contains -3"), std::string::npos);
  EXPECT_TRUE((SaveConfigMode{.save_interval = 1, .end_step = 0}).Validate().ok());
}

TEST(SaveConfigTest, PerModeDecisions) {
  SaveConfig c;
  c.set_mode(Mode::kTrain, SaveConfigMode{.save_interval = 2});
  c.set_mode(Mode::kEval, SaveConfigMode{.save_interval = 3});
  EXPECT_FALSE(c.complete());
  EXPECT_FALSE(c.ShouldSave(Mode::kPredict, 0));  // unset mode: nothing
  EXPECT_TRUE(c.ShouldSave(Mode::kTrain, 4));
  EXPECT_FALSE(c.ShouldSave(Mode::kTrain, 3));
  EXPECT_TRUE(c.ShouldSave(Mode::kEval, 3));
  EXPECT_FALSE(c.ShouldSave(Mode::kEval, 4));
}

TEST(SaveConfigTest, MergeDefaultsFillsOnlyUnsetModes) {
  SaveConfig c;
  c.set_mode(Mode::kTrain, SaveConfigMode{.save_interval = 2});
  SaveConfig defaults;
  defaults.set_mode(Mode::kTrain, SaveConfigMode{.save_interval = 7});
  defaults.set_mode(Mode::kEval, SaveConfigMode{.save_interval = 9});
  c.MergeDefaults(defaults);
  ASSERT_TRUE(c.complete());
  EXPECT_EQ(c.mode(Mode::kTrain)->save_interval, 2);
  EXPECT_EQ(c.mode(Mode::kEval)->save_interval, 9);
  EXPECT_EQ(c.mode(Mode::kPredict)->save_interval, 500);  // neither set: smdebug's default
  EXPECT_EQ(c.mode(Mode::kGlobal)->save_interval, 500);
}

TEST(SaveConfigTest, ValidateNamesTheMode) {
  SaveConfig c(SaveConfigMode{.save_interval = 1});
  c.set_mode(Mode::kEval, SaveConfigMode{.save_interval = -1});
  Status s = c.Validate("save_config");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mode EVAL"), std::string::npos) << s.message();
}

TEST(ReductionConfigTest, ParseRoutesTokensToSmdebugLists) {
  auto c = ReductionConfig::Parse(" min, abs_max ,l2_norm,abs_l1_norm, mean,,nan_count,l1", true);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->reductions, (std::vector<ReductionOp>{ReductionOp::kMin, ReductionOp::kMean,
                                                     ReductionOp::kNanCount}));
  EXPECT_EQ(c->abs_reductions, (std::vector<ReductionOp>{ReductionOp::kMax}));
  EXPECT_EQ(c->norms, (std::vector<ReductionOp>{ReductionOp::kL2, ReductionOp::kL1}));
  EXPECT_EQ(c->abs_norms, (std::vector<ReductionOp>{ReductionOp::kL1}));
  EXPECT_TRUE(c->save_raw_tensor);
  // smdebug's join order: reductions, norms, abs reductions, abs norms.
  EXPECT_EQ(c->ReductionsString(), "min,mean,nan_count,l2_norm,l1_norm,abs_max,abs_l1_norm");
  EXPECT_EQ(c->All().size(), 7u);
  EXPECT_EQ(c->All()[3], (Reduction{ReductionOp::kL2, false}));
  EXPECT_EQ(c->All()[6], (Reduction{ReductionOp::kL1, true}));
}

TEST(ReductionConfigTest, UnknownReductionUsesParseReductionMessage) {
  auto c = ReductionConfig::Parse("mean,median");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), ParseReduction("median").status().message());
}

TEST(ReductionConfigTest, ValidateRejectsNormsInTheWrongList) {
  ReductionConfig c;
  c.reductions = {ReductionOp::kL2};
  EXPECT_NE(c.Validate().message().find("put it in norms"), std::string::npos);
  ReductionConfig d;
  d.abs_norms = {ReductionOp::kMean};
  EXPECT_NE(d.Validate().message().find("norms can only be l1 or l2"), std::string::npos);
}

TEST(ReductionConfigTest, ParseForListChecksTheList) {
  EXPECT_EQ(*ParseReductionForList("norms", "l2"), ReductionOp::kL2);
  EXPECT_EQ(*ParseReductionForList("abs_norms", "l1_norm"), ReductionOp::kL1);
  EXPECT_EQ(*ParseReductionForList("reductions", "zero_fraction"), ReductionOp::kZeroFraction);
  auto bad = ParseReductionForList("reductions", "medain");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("reductions: unknown reduction 'medain'"),
            std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(ParseReductionForList("norms", "mean").ok());
  EXPECT_FALSE(ParseReductionForList("reductions", "l2").ok());
  EXPECT_FALSE(ParseReductionForList("reductions", "abs_mean").ok());
}

}  // namespace
}  // namespace trainscope

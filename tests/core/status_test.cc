#include "trainscope/status.h"

#include <errno.h>
#include <gtest/gtest.h>

namespace trainscope {
namespace {

TEST(StatusTest, OkIsDefaultAndCheap) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(s.message().empty());
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = Status::Corruption("events/0/x.tfevents: bad length CRC at byte 12");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.ToString(), "Corruption: events/0/x.tfevents: bad length CRC at byte 12");
  Status copy = s;
  EXPECT_EQ(copy, s);
}

TEST(StatusTest, FromErrnoNamesPathAndErrno) {
  Status s = Status::FromErrno("write", "/tmp/trial/x.tmp", ENOSPC);
  EXPECT_EQ(s.code(), StatusCode::kIOError);
  EXPECT_EQ(s.os_errno(), ENOSPC);
  EXPECT_NE(s.message().find("/tmp/trial/x.tmp"), std::string::npos);
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos);
  EXPECT_NE(s.message().find("errno 28"), std::string::npos);
}

TEST(StatusTest, WithContextPrefixesAndKeepsCode) {
  Status s = Status::NotFound("no such file: a").WithContext("opening trial /x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "opening trial /x: no such file: a");
  EXPECT_TRUE(Status::OK().WithContext("x").ok());
}

TEST(StatusTest, DetailAndSubjectSurviveCopiesAndContext) {
  Status plain = Status::NotFound("StepUnavailable: looks like a detail, is not one");
  EXPECT_EQ(plain.detail(), ErrorDetail::kNone);  // the message never sets it
  EXPECT_EQ(plain.subject().step, -1);
  Status s =
      Status::OutOfRange("training ended")
          .WithDetail(ErrorDetail::kNoMoreData, {.step = 9, .mode = Mode::kEval, .last_step = 4});
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(s.message(), "training ended");
  Status with_context = s.WithContext("reading trial /x");
  EXPECT_EQ(with_context.detail(), ErrorDetail::kNoMoreData);
  EXPECT_EQ(with_context.subject().step, 9);
  EXPECT_EQ(with_context.subject().mode, Mode::kEval);
  EXPECT_EQ(with_context.subject().last_step, 4);
  EXPECT_EQ(ErrorDetailName(with_context.detail()), "NoMoreData");
  EXPECT_EQ(ErrorDetailName(ErrorDetail::kNone), "None");
  EXPECT_TRUE(Status::OK().WithDetail(ErrorDetail::kNoMoreData).ok());
}

Result<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Status UseMacros(int x, int* out) {
  TS_ASSIGN_OR_RETURN(int h, Half(x));
  TS_ASSIGN_OR_RETURN(int q, Half(h));
  *out = q;
  return Status::OK();
}

TEST(ResultTest, ValueOrStatusAndMacros) {
  Result<int> r = Half(8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 4);
  Result<int> bad = Half(3);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  int out = 0;
  EXPECT_TRUE(UseMacros(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = UseMacros(6, &out);
  EXPECT_EQ(s.message(), "odd: 3");
}

}  // namespace
}  // namespace trainscope

// FormatTimeUtc and HostName (trainscope/time_format.h): the one implementation of the time stamps
// in stop files, findings, rule statuses and the event log.
#include "trainscope/time_format.h"

#include <gtest/gtest.h>

namespace trainscope {
namespace {

TEST(TimeFormat, UtcWithMicroseconds) {
  EXPECT_EQ(FormatTimeUtc(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatTimeUtc(1795255200123456), "2026-11-21T10:00:00.123456Z");
  // Before the epoch the microseconds still count up within their second.
  EXPECT_EQ(FormatTimeUtc(-1), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(FormatTimeUtc(-1000000), "1969-12-31T23:59:59.000000Z");
}

TEST(TimeFormat, HostNameIsNeverEmpty) { EXPECT_FALSE(HostName().empty()); }

}  // namespace
}  // namespace trainscope

// Wall-clock times as every file of a trial writes them. One implementation for the stop file,
// findings, rule statuses and the event log.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace trainscope {

// "YYYY-MM-DDTHH:MM:SS.ffffffZ" (UTC, microseconds) of `time_micros`, microseconds since the
// epoch (negative: before it).
std::string FormatTimeUtc(int64_t time_micros);

// This machine's host name (gethostname), "localhost" when it has none.
std::string HostName();

}  // namespace trainscope

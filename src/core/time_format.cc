#include "trainscope/time_format.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace trainscope {

std::string FormatTimeUtc(int64_t time_micros) {
  int64_t secs = time_micros / 1000000;
  int64_t micros = time_micros % 1000000;
  if (micros < 0) {
    micros += 1000000;
    secs -= 1;
  }
  const time_t t = static_cast<time_t>(secs);
  struct tm tm_utc;
  gmtime_r(&t, &tm_utc);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm_utc.tm_year + 1900,
                tm_utc.tm_mon + 1, tm_utc.tm_mday, tm_utc.tm_hour, tm_utc.tm_min, tm_utc.tm_sec,
                static_cast<long long>(micros));
  return buf;
}

std::string HostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace trainscope

// Helpers shared by the profiler readers and the timeline merger. Private.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainscope/env.h"
#include "trainscope/metrics_reader.h"

namespace trainscope::reader_util {

// Records a problem in stats (keeping the first 20 messages).
void AddProblem(ReaderStats* stats, std::string msg);

// Calls fn(line, line_number) for each line, '\r' and surrounding blanks trimmed, empty lines
// skipped.
template <typename Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  int64_t n = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    ++n;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (!line.empty()) fn(line, n);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// Every file under `dir` (recursively, at most `max_depth` levels), as paths joined to dir.
// A folder that cannot be listed is skipped.
void ListFilesRecursive(Env* env, const std::string& dir, int max_depth,
                        std::vector<std::string>* out);

}  // namespace trainscope::reader_util

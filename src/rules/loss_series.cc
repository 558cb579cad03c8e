// docs/rules/LossNotDecreasing.md, "Closure evaluations".
#include "rules/loss_series.h"

#include <map>
#include <set>
#include <utility>

namespace trainscope::rules_internal {

std::string IndexedBase(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i == name.size() || i < 2 || name[i - 1] != '_') return name;
  return name.substr(0, i - 1);
}

std::vector<LossPoint> OrderLossTensors(const std::vector<std::string>& names,
                                        const std::vector<ClosureStep>& closures) {
  std::vector<LossPoint> out;
  out.reserve(names.size());
  if (closures.empty()) {
    for (const std::string& n : names) out.push_back({n, n, -1, ""});
    return out;
  }
  const std::set<std::string> selected(names.begin(), names.end());
  std::set<std::string> placed;
  for (const ClosureStep& call : closures) {
    // (base, rank within an evaluation) -> the series, named at its first evaluation.
    std::map<std::pair<std::string, size_t>, std::string> series;
    for (size_t e = 0; e < call.evaluations.size(); ++e) {
      std::map<std::string, size_t> rank;  // base -> outputs of it seen in this evaluation
      for (const std::string& n : call.evaluations[e]) {
        if (!placed.insert(n).second) continue;  // listed before: its first place counts
        const std::string base = IndexedBase(n);
        const size_t r = rank[base]++;
        const std::string& s = series.try_emplace({base, r}, n).first->second;
        if (selected.count(n)) out.push_back({n, s, static_cast<int64_t>(e), call.optimizer});
      }
    }
  }
  for (const std::string& n : names) {
    if (!placed.count(n)) out.push_back({n, n, -1, ""});
  }
  return out;
}

}  // namespace trainscope::rules_internal

#include "rules/builtin.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <map>
#include <utility>

#include "trainscope/tensor_names.h"
#include "trainscope/trial.h"

namespace trainscope::rules_internal {

TensorSelection BuiltinRule::SelectionFromParams(bool all_if_empty,
                                                 std::vector<std::string> default_collections,
                                                 std::vector<std::string> default_regexes) const {
  TensorSelection s;
  s.all_if_empty = all_if_empty;
  s.collections = params().StringList("collection_names");
  s.regexes = params().StringList("tensor_regex");
  if (s.collections.empty() && s.regexes.empty()) {
    s.collections = std::move(default_collections);
    s.regexes = std::move(default_regexes);
  }
  return s;
}

ParamSpec CollectionNamesSpec() {
  return {"collection_names", ParamType::kStringList, "None",
          "collections whose tensors the rule checks (comma-separated)"};
}

ParamSpec TensorRegexSpec(const std::string& default_value) {
  return {"tensor_regex", ParamType::kStringList, default_value,
          "regexes (re.search) of tensor names the rule checks (comma-separated)"};
}

bool IsNumeric(DType t) { return t != DType::kString && t != DType::kInvalid; }

bool IsIntegral(DType t) {
  switch (t) {
    case DType::kI8:
    case DType::kI16:
    case DType::kI32:
    case DType::kI64:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(0, t.num_elements())));
  ForEachElement(t, [&](int64_t i, double v) { out[static_cast<size_t>(i)] = v; });
  return out;
}

void SortInForwardOrder(const Trial& trial, std::vector<std::string>* names) {
  std::map<std::string, size_t, std::less<>> position;
  for (const auto& m : trial.modules()) position.try_emplace(m.name, position.size());
  // Each name's rank looked up once, not at every comparison.
  std::vector<std::pair<size_t, std::string>> ranked;
  ranked.reserve(names->size());
  for (auto& name : *names) {
    auto it = position.find(tensor_names::ModuleOf(name));
    ranked.emplace_back(it == position.end() ? position.size() : it->second, std::move(name));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : NaturalLess(a.second, b.second);
  });
  for (size_t i = 0; i < ranked.size(); ++i) (*names)[i] = std::move(ranked[i].second);
}

bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i]));
    const bool db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
      nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

bool AllClose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan,
              double* max_abs_diff) {
  *max_abs_diff = 0;
  if (a.shape != b.shape) {
    *max_abs_diff = INFINITY;
    return false;
  }
  std::vector<double> bv = ToDoubles(b);
  bool close = true;
  ForEachElement(a, [&](int64_t i, double x) {
    const double y = bv[static_cast<size_t>(i)];
    if (std::isnan(x) || std::isnan(y)) {
      if (!(equal_nan && std::isnan(x) && std::isnan(y))) {
        close = false;
        *max_abs_diff = NAN;
      }
      return;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) {
        close = false;
        *max_abs_diff = INFINITY;
      }
      return;
    }
    const double d = std::fabs(x - y);
    if (!std::isnan(*max_abs_diff)) *max_abs_diff = std::max(*max_abs_diff, d);
    if (d > atol + rtol * std::fabs(y)) close = false;
  });
  return close;
}

UnitLayout LayoutOf(const std::vector<int64_t>& shape) {
  UnitLayout l;
  const int64_t n = NumElements(shape);
  if (shape.empty() || n == 0) return l;
  size_t axis = 1;  // 2-D and 4-D or more
  if (shape.size() == 1) {
    axis = 0;
  } else if (shape.size() == 3) {
    axis = 2;
  }
  l.units = shape[axis];
  l.inner = 1;
  for (size_t k = axis + 1; k < shape.size(); ++k) l.inner *= shape[k];
  l.samples = n / l.units;
  return l;
}

std::string Percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g%%", fraction * 100.0);
  return buf;
}

}  // namespace trainscope::rules_internal

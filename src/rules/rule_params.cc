#include "trainscope/rule_params.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace trainscope {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool IsNone(const std::string& v) {
  std::string t = Trim(v);
  return t.empty() || t == "None" || t == "none" || t == "null";
}

std::optional<double> ParseDouble(const std::string& v) {
  std::string t = Trim(v);
  if (t.empty()) return std::nullopt;
  if (t == "inf" || t == "Infinity" || t == "+inf") return INFINITY;
  if (t == "-inf" || t == "-Infinity") return -INFINITY;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || std::isnan(d)) return std::nullopt;
  return d;
}

std::optional<int64_t> ParseInt(const std::string& v) {
  auto d = ParseDouble(v);
  if (!d || std::floor(*d) != *d || std::fabs(*d) > 9.0e15) return std::nullopt;
  return static_cast<int64_t>(*d);
}

std::optional<bool> ParseBool(const std::string& v) {
  std::string t = Trim(v);
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "true" || t == "1" || t == "yes") return true;
  if (t == "false" || t == "0" || t == "no") return false;
  return std::nullopt;
}

const char* TypeName(ParamType t) {
  switch (t) {
    case ParamType::kDouble:
      return "a number";
    case ParamType::kInt:
      return "an integer";
    case ParamType::kBool:
      return "True or False";
    case ParamType::kString:
      return "a string";
    case ParamType::kStringList:
      return "a list of strings";
    case ParamType::kDoubleList:
      return "a list of numbers";
  }
  return "?";
}

}  // namespace

std::vector<std::string> SplitParamList(const std::string& value) {
  std::string t = Trim(value);
  if (IsNone(t)) return {};
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= t.size()) {
    size_t comma = t.find(',', start);
    if (comma == std::string::npos) comma = t.size();
    std::string item = Trim(t.substr(start, comma - start));
    if (item.size() >= 2 && (item.front() == '\'' || item.front() == '"') &&
        item.back() == item.front()) {
      item = item.substr(1, item.size() - 2);
    }
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

Result<ParsedParams> ParseRuleParams(const std::string& rule, const std::vector<ParamSpec>& specs,
                                     const RuleParams& given) {
  for (const auto& [name, value] : given) {
    bool known = false;
    for (const auto& s : specs) known = known || s.name == name;
    if (!known) {
      std::string valid;
      for (const auto& s : specs) valid += (valid.empty() ? "" : ", ") + s.name;
      if (valid.empty()) valid = "(none)";
      return Status::InvalidArgument("unknown parameter '" + name + "' for rule " + rule +
                                     "; valid parameters: " + valid);
    }
  }
  ParsedParams p;
  for (const auto& s : specs) {
    auto it = given.find(s.name);
    const std::string raw = it == given.end() ? s.default_value : it->second;
    auto fail = [&]() {
      return Status::InvalidArgument("rule " + rule + ": parameter " + s.name + "='" + raw +
                                     "' is not " + TypeName(s.type) + " (" + s.help + ")");
    };
    p.effective_[s.name] = IsNone(raw) ? "None" : Trim(raw);
    switch (s.type) {
      case ParamType::kDouble: {
        if (IsNone(raw)) break;
        auto d = ParseDouble(raw);
        if (!d) return fail();
        p.doubles_[s.name] = *d;
        break;
      }
      case ParamType::kInt: {
        if (IsNone(raw)) break;
        auto i = ParseInt(raw);
        if (!i) return fail();
        p.ints_[s.name] = *i;
        break;
      }
      case ParamType::kBool: {
        if (IsNone(raw)) {
          p.bools_[s.name] = false;
          break;
        }
        auto b = ParseBool(raw);
        if (!b) return fail();
        p.bools_[s.name] = *b;
        p.effective_[s.name] = *b ? "True" : "False";
        break;
      }
      case ParamType::kString:
        break;
      case ParamType::kStringList:
        p.lists_[s.name] = SplitParamList(raw);
        break;
      case ParamType::kDoubleList: {
        std::vector<double> v;
        for (const auto& item : SplitParamList(raw)) {
          auto d = ParseDouble(item);
          if (!d) return fail();
          v.push_back(*d);
        }
        p.double_lists_[s.name] = std::move(v);
        break;
      }
    }
  }
  return p;
}

double ParsedParams::Double(const std::string& name) const {
  auto it = doubles_.find(name);
  return it == doubles_.end() ? NAN : it->second;
}
std::optional<double> ParsedParams::OptDouble(const std::string& name) const {
  auto it = doubles_.find(name);
  if (it == doubles_.end()) return std::nullopt;
  return it->second;
}
int64_t ParsedParams::Int(const std::string& name) const {
  auto it = ints_.find(name);
  return it == ints_.end() ? 0 : it->second;
}
std::optional<int64_t> ParsedParams::OptInt(const std::string& name) const {
  auto it = ints_.find(name);
  if (it == ints_.end()) return std::nullopt;
  return it->second;
}
bool ParsedParams::Bool(const std::string& name) const {
  auto it = bools_.find(name);
  return it != bools_.end() && it->second;
}
const std::string& ParsedParams::String(const std::string& name) const {
  static const std::string kEmpty;
  auto it = effective_.find(name);
  if (it == effective_.end() || it->second == "None") return kEmpty;
  return it->second;
}
bool ParsedParams::IsSet(const std::string& name) const { return !String(name).empty(); }
std::vector<std::string> ParsedParams::StringList(const std::string& name) const {
  auto it = lists_.find(name);
  return it == lists_.end() ? std::vector<std::string>{} : it->second;
}
std::vector<double> ParsedParams::DoubleList(const std::string& name) const {
  auto it = double_lists_.find(name);
  return it == double_lists_.end() ? std::vector<double>{} : it->second;
}

}  // namespace trainscope

#include "trainscope/name_regex.h"

#include <cctype>
#include <optional>

namespace trainscope {

namespace {

// Index just past the character class that starts at p[i] == '['; npos if it does not close.
size_t SkipClass(std::string_view p, size_t i) {
  size_t j = i + 1;
  if (j < p.size() && p[j] == '^') ++j;
  for (; j < p.size(); ++j) {
    if (p[j] == '\\') {
      ++j;
    } else if (p[j] == ']') {
      return j + 1;
    }
  }
  return std::string_view::npos;
}

// Index just past the group that starts at p[i] == '('; npos if it does not close.
size_t SkipGroup(std::string_view p, size_t i) {
  int depth = 0;
  for (size_t j = i; j < p.size(); ++j) {
    const char c = p[j];
    if (c == '\\') {
      ++j;
    } else if (c == '[') {
      j = SkipClass(p, j);
      if (j == std::string_view::npos) return j;
      --j;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0) {
      return j + 1;
    }
  }
  return std::string_view::npos;
}

// The minimum count of the quantifier "{n}", "{n,}" or "{n,m}" at p[i] == '{', and the index
// past it; nullopt when it is not one.
std::optional<std::pair<long, size_t>> BraceQuantifier(std::string_view p, size_t i) {
  size_t j = i + 1;
  long min = 0;
  const size_t digits = j;
  while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j])) != 0) {
    min = min * 10 + (p[j] - '0');
    if (min > 1000000) return std::nullopt;
    ++j;
  }
  if (j == digits) return std::nullopt;
  if (j < p.size() && p[j] == ',') {
    ++j;
    while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j])) != 0) ++j;
  }
  if (j >= p.size() || p[j] != '}') return std::nullopt;
  return std::make_pair(min, j + 1);
}

}  // namespace

RequiredLiteralSet RequiredLiterals(std::string_view p) {
  RequiredLiteralSet branches(1);
  std::string run;           // the literal characters read since the last break
  bool last_in_run = false;  // the last atom read is run's last character
  bool after_caret = false;  // the last thing read is a top-level ^
  bool run_at_start = false;
  auto end_run = [&](bool at_end = false) {
    if (!run.empty()) branches.back().push_back({run, run_at_start, at_end});
    run.clear();
    last_in_run = after_caret = run_at_start = false;
  };
  auto other_atom = [&] { end_run(); };  // an atom that is not one known character
  auto literal = [&](char c) {
    if (run.empty()) run_at_start = after_caret;
    after_caret = false;
    run += c;
    last_in_run = true;
  };
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    switch (c) {
      case '|':
        end_run();
        branches.emplace_back();
        ++i;
        break;
      case '\\': {
        if (i + 1 >= p.size()) return {};
        const char d = p[i + 1];
        if (std::isalnum(static_cast<unsigned char>(d)) == 0) {  // \. \\ \( ...: that character
          literal(d);
        } else if (std::string_view("wWdDsSbBfnrtv").find(d) != std::string_view::npos) {
          other_atom();  // a class, an assertion or a control character
        } else {
          return {};  // \x41, \u0041, \cJ, \0, back-references: not read here
        }
        i += 2;
        break;
      }
      case '[':
        i = SkipClass(p, i);
        if (i == std::string_view::npos) return {};
        other_atom();
        break;
      case '(':
        i = SkipGroup(p, i);
        if (i == std::string_view::npos) return {};
        other_atom();
        break;
      case ')':
        return {};
      case '.':
        other_atom();
        ++i;
        break;
      case '^':
        end_run();
        after_caret = true;
        ++i;
        break;
      case '$':
        end_run(last_in_run);  // the run just read ends the name
        ++i;
        break;
      case '*':
      case '?':  // the atom before may be absent ("x*", "x?"; "*?" is a lazy "*")
        if (last_in_run) run.pop_back();
        end_run();
        ++i;
        break;
      case '+':  // the atom before is there at least once; what follows need not touch it
        end_run();
        ++i;
        break;
      case '{': {
        auto q = BraceQuantifier(p, i);
        if (!q) return {};
        if (q->first == 0 && last_in_run) run.pop_back();
        end_run();
        i = q->second;
        break;
      }
      default:
        literal(c);
        ++i;
        break;
    }
  }
  end_run();
  for (const auto& b : branches) {
    if (b.empty()) return {};  // an alternative any name might match without a literal
  }
  return branches;
}

Result<NameRegex> NameRegex::Compile(std::string pattern) {
  NameRegex r;
  try {
    r.re_ =
        std::make_shared<const std::regex>(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return Status::InvalidArgument(e.what());
  }
  r.literals_ = RequiredLiterals(pattern);
  r.pattern_ = std::move(pattern);
  return r;
}

bool NameRegex::Search(std::string_view name) const {
  if (!literals_.empty()) {
    bool possible = false;
    for (const auto& branch : literals_) {
      bool all = true;
      for (const RequiredLiteral& lit : branch) {
        const bool there = lit.at_start || lit.at_end
                               ? (!lit.at_start || name.starts_with(lit.text)) &&
                                     (!lit.at_end || name.ends_with(lit.text))
                               : name.find(lit.text) != std::string_view::npos;
        if (!there) {
          all = false;
          break;
        }
      }
      if (all) {
        possible = true;
        break;
      }
    }
    if (!possible) return false;
  }
  return std::regex_search(name.begin(), name.end(), *re_);
}

}  // namespace trainscope

// NameRegex: a regular expression searched in tensor names, as Python's re.search and smdebug's
// collections do (ECMAScript syntax: Python's (?!...) lookahead works; lookbehind and
// (?P<name>...) groups do not). One implementation for every module that matches names against
// a collection's include_regex or a user's regex: the hook's planner, the trial reader and the
// rules.
//
// Speed: std::regex_search tries the pattern at every position of the name and costs about a
// microsecond for the collections' usual patterns (".*relu\w*_output"), paid for every new name
// a training makes. A module called thousands of times a step makes thousands of new names a step
// ("lstm1_output_39999"). So Compile() also takes from the pattern the literal text a match must
// hold (RequiredLiterals below), and Search() runs the regex only on names that hold all of it
// for one alternative; others are refused with a few substring searches (memchr speed). The
// answer is always std::regex_search's: the prefilter only skips names the regex cannot match.
//
// Thread safety: a NameRegex is immutable after Compile(); Search() may be called from any thread.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "trainscope/status.h"

namespace trainscope {

// A string a match must contain; at_start: at the name's start (after a top-level ^), at_end: at
// its end (before a top-level $).
struct RequiredLiteral {
  std::string text;
  bool at_start = false;
  bool at_end = false;
  bool operator==(const RequiredLiteral&) const = default;
};
using RequiredLiteralSet = std::vector<std::vector<RequiredLiteral>>;

class NameRegex {
 public:
  // InvalidArgument with std::regex's own description of the error (the caller names the
  // pattern and where it came from).
  static Result<NameRegex> Compile(std::string pattern);

  // True when the pattern matches somewhere in `name` (std::regex_search).
  bool Search(std::string_view name) const;

  const std::string& pattern() const { return pattern_; }
  // The prefilter: empty when the pattern gives none (every name is searched).
  const RequiredLiteralSet& required_literals() const { return literals_; }

 private:
  NameRegex() = default;
  std::string pattern_;
  std::shared_ptr<const std::regex> re_;  // shared: copies of a NameRegex are cheap
  RequiredLiteralSet literals_;
};

// The literal text a match of `pattern` must contain: one list per top-level alternative
// ("a|b"); a name matches only if, for some alternative, it contains every literal of that
// alternative's list (where at_start/at_end say). Only the alternative's top-level characters
// count (not those in groups, character classes or under a quantifier that allows zero: "ab*c"
// requires "a" and "c"). Empty when some alternative requires no literal, or the pattern holds
// something this scan does not read for certain (e.g. an escape such as \x41): no prefilter.
RequiredLiteralSet RequiredLiterals(std::string_view pattern);

}  // namespace trainscope

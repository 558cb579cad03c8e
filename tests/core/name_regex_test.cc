// NameRegex (core/name_regex.h): its literal prefilter never changes std::regex_search's answer.
#include "trainscope/name_regex.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

namespace trainscope {
namespace {

using Lits = std::vector<std::vector<std::string>>;

// The texts of RequiredLiterals(p), without their anchors.
Lits Texts(std::string_view p) {
  Lits out;
  for (const auto& branch : RequiredLiterals(p)) {
    out.emplace_back();
    for (const auto& l : branch) out.back().push_back(l.text);
  }
  return out;
}

TEST(NameRegexTest, RequiredLiteralsOfTheCollectionsPatterns) {
  EXPECT_EQ(Texts(R"(.*relu\w*_output|(^|\.)act\w*_output)"),
            (Lits{{"relu", "_output"}, {"act", "_output"}}));
  EXPECT_EQ(Texts("^(?!gradient).*weight"), (Lits{{"weight"}}));
  EXPECT_EQ(Texts("^gradient"), (Lits{{"gradient"}}));
  EXPECT_EQ(Texts("[Ll]oss_(?!input).*output"), (Lits{{"oss_", "output"}}));
  EXPECT_EQ(Texts(".*embed[A-Za-z_]*[0-9]*_input_0"), (Lits{{"embed", "_input_0"}}));
  EXPECT_EQ(Texts(R"(conv\d+\.weight)"), (Lits{{"conv", ".weight"}}));
}

TEST(NameRegexTest, AnchorsPinTheLiteralNextToThem) {
  using L = RequiredLiteral;
  EXPECT_EQ(RequiredLiterals("^gradient"), (RequiredLiteralSet{{L{"gradient", true, false}}}));
  EXPECT_EQ(RequiredLiterals("^(?![A-Za-z0-9]*Loss_input_0$)[A-Z][A-Za-z0-9]*_input_0$"),
            (RequiredLiteralSet{{L{"_input_0", false, true}}}));
  EXPECT_EQ(RequiredLiterals("^ab*c$"),
            (RequiredLiteralSet{{L{"a", true, false}, L{"c", false, true}}}));
  EXPECT_EQ(RequiredLiterals("^abc$"), (RequiredLiteralSet{{L{"abc", true, true}}}));
  EXPECT_EQ(RequiredLiterals("^a?b"), (RequiredLiteralSet{{L{"b", false, false}}}));
  EXPECT_EQ(RequiredLiterals("a+$"), (RequiredLiteralSet{{L{"a", false, false}}}));
}

TEST(NameRegexTest, QuantifiersThatAllowZeroDropTheirCharacter) {
  EXPECT_EQ(Texts("abc*d"), (Lits{{"ab", "d"}}));
  EXPECT_EQ(Texts("abc?d"), (Lits{{"ab", "d"}}));
  EXPECT_EQ(Texts("abc{0,3}d"), (Lits{{"ab", "d"}}));
  EXPECT_EQ(Texts("abc{2}d"), (Lits{{"abc", "d"}}));
  EXPECT_EQ(Texts("abc+d"), (Lits{{"abc", "d"}}));
  EXPECT_EQ(Texts("ab*?c"), (Lits{{"a", "c"}}));
}

TEST(NameRegexTest, NoPrefilterWhenAnAlternativeNeedsNoLiteral) {
  EXPECT_TRUE(Texts(".*").empty());
  EXPECT_TRUE(Texts("").empty());
  EXPECT_TRUE(Texts("weight|.*").empty());
  EXPECT_TRUE(Texts("a*").empty());
  EXPECT_TRUE(Texts("(weight)").empty());   // inside a group: not read
  EXPECT_TRUE(Texts(R"(\x41bc)").empty());  // an escape the scan does not read
  EXPECT_TRUE(Texts(R"((a)\1)").empty());   // a back-reference
}

TEST(NameRegexTest, InvalidPatternSaysWhy) {
  Result<NameRegex> r = NameRegex::Compile("relu(");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(r.status().message().empty());
}

// Random patterns from the syntax the scan reads (and some it refuses), searched in random
// names: NameRegex::Search must agree with std::regex_search on every pair.
std::string RandomPattern(std::mt19937& g) {
  static const std::vector<std::string> kAtoms = {
      "a",   "b",     "_",    "o",     "ut",     ".",      "\\w",    "\\d",    "\\.",
      "\\_", "[ab]",  "[^a]", "(a|b)", "(?!ab)", "(?=a)",  "(?:ba)", "^",      "$",
      "\\b", "\\x61", "0",    "1",     "relu",   "output", "[0-9]",  "(a)\\1", "\\-",
      "-",   "\\\\",  "}",    "^a",    "b$",     "^relu",  "_0$"};
  static const std::vector<std::string> kQuants = {"",    "",      "",     "*",  "+", "?",
                                                   "{2}", "{0,2}", "{1,}", "*?", "+?"};
  std::uniform_int_distribution<size_t> atoms(0, kAtoms.size() - 1);
  std::uniform_int_distribution<size_t> quants(0, kQuants.size() - 1);
  std::uniform_int_distribution<int> len(1, 6);
  std::string p;
  const int branches = std::uniform_int_distribution<int>(1, 3)(g);
  for (int b = 0; b < branches; ++b) {
    if (b > 0) p += '|';
    for (int i = len(g); i > 0; --i) {
      const std::string& a = kAtoms[atoms(g)];
      p += a;
      if (a.find_first_of("^$") == std::string::npos && a != "\\b") p += kQuants[quants(g)];
    }
  }
  return p;
}

std::string RandomName(std::mt19937& g) {
  static const std::string kChars = "ab_o0ut1.-\\}relupt";
  static const std::vector<std::string> kWords = {"relu", "output", "_output_0", "ab", "ba"};
  std::uniform_int_distribution<int> len(0, 10);
  std::string n;
  for (int i = len(g); i > 0; --i) {
    if (std::uniform_int_distribution<int>(0, 3)(g) == 0) {
      n += kWords[std::uniform_int_distribution<size_t>(0, kWords.size() - 1)(g)];
    } else {
      n += kChars[std::uniform_int_distribution<size_t>(0, kChars.size() - 1)(g)];
    }
  }
  return n;
}

TEST(NameRegexTest, SearchAgreesWithRegexSearchOnRandomPatternsAndNames) {
  std::mt19937 g(20261126);
  int compiled = 0, filtered = 0, pairs = 0;
  for (int k = 0; k < 3000; ++k) {
    const std::string p = RandomPattern(g);
    Result<NameRegex> r = NameRegex::Compile(p);
    if (!r.ok()) continue;  // std::regex refused it: nothing to compare
    ++compiled;
    if (!r->required_literals().empty()) ++filtered;
    const std::regex plain(p, std::regex::ECMAScript);
    for (int j = 0; j < 40; ++j) {
      const std::string n = RandomName(g);
      ASSERT_EQ(r->Search(n), std::regex_search(n, plain)) << "pattern " << p << ", name " << n;
      ++pairs;
    }
  }
  // The test means something only if most patterns compiled and many got a prefilter.
  EXPECT_GT(compiled, 2000);
  EXPECT_GT(filtered, 500);
  EXPECT_GT(pairs, 80000);
}

TEST(NameRegexTest, NamesOfAModuleCalledManyTimesAreRefusedByTheLiterals) {
  Result<NameRegex> r = NameRegex::Compile(R"(.*relu\w*_output|(^|\.)act\w*_output)");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->Search("lstm1_output_39999"));
  EXPECT_TRUE(r->Search("model.relu2_output_0"));
  EXPECT_TRUE(r->Search("act_output_3"));
  EXPECT_FALSE(r->Search("react_output"));  // "act" is there, but not after ^ or '.'
}

}  // namespace
}  // namespace trainscope

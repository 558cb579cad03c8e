// The case files of the data-driven rule tests: <TRAINSCOPE_SOURCE_DIR>/tests/rules/<folder>/
// <Rule>/*.json, listed in path order, and the gtest names and printing of them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace trainscope::rules_test {

struct CaseFile {
  std::string rule;  // the folder: the rule the case is for unless it says "rule"
  std::filesystem::path path;
};

// gtest prints a parameter with PrintTo (else as raw bytes in ctest's listing).
inline void PrintTo(const CaseFile& c, std::ostream* os) {
  *os << c.rule << "/" << c.path.filename().string();
}

// Every <folder>/<Rule>/*.json under tests/rules, sorted by path.
inline std::vector<CaseFile> ListCaseFiles(const std::string& folder) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(TRAINSCOPE_SOURCE_DIR) / "tests" / "rules" / folder;
  std::vector<CaseFile> out;
  std::error_code ec;
  for (const auto& dir : fs::directory_iterator(root, ec)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (f.path().extension() == ".json") out.push_back({dir.path().filename(), f.path()});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const CaseFile& a, const CaseFile& b) { return a.path < b.path; });
  return out;
}

// <Rule>_<file stem>, with every character gtest does not allow replaced by '_'.
inline std::string CaseTestName(const ::testing::TestParamInfo<CaseFile>& info) {
  std::string n = info.param.rule + "_" + info.param.path.stem().string();
  for (auto& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

}  // namespace trainscope::rules_test

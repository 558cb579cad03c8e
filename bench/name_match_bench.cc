// The first sight of a tensor name: the hook's planner matches each new name once against every
// saved collection's regexes (Collection::Matches), then caches the answer. A module called
// thousands of times a step (an LSTMCell unrolled over a sequence) makes thousands of new names a
// step ("lstm1_output_39999"), so this is a hot path there.
//
// Compared: NameRegex::Search (the literal prefilter, then std::regex_search) against plain
// std::regex_search over the same patterns, and against the limit the cache sets once a name has
// been seen (one hash lookup). The patterns are those of `trainscope run --rules default`
// (the PyTorch collections and the rules' collections in its hook configuration).
// Goal: a new name no rule's pattern can match costs within a few times the cached lookup.
#include <benchmark/benchmark.h>

#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "trainscope/name_regex.h"

namespace {

const std::vector<std::string>& Patterns() {
  static const std::vector<std::string> kPatterns = {
      "^(?!gradient).*weight",
      "^(?!gradient).*bias",
      "^gradient",
      "[Ll]oss_(?!input).*output",
      R"(.*relu\w*_output|(^|\.)act\w*_output)",
      R"(.*tanh\w*_input|.*sigmoid\w*_input)",
      R"(.*relu\w*_input)",
      ".*hybridsequential0_input_0|^(?![A-Za-z0-9]*Loss_input_0$)[A-Z][A-Za-z0-9]*_input_0$",
      ".*embed[A-Za-z_]*[0-9]*_input_0"};
  return kPatterns;
}

// The names an unrolled LSTMCell's k-th call makes, and those of a typical layer.
std::vector<std::string> Names(bool unrolled) {
  std::vector<std::string> n;
  for (int k = 0; k < 1000; ++k) {
    if (unrolled) {
      n.push_back("lstm1_output_" + std::to_string(k));
      n.push_back("lstm2_input_0_" + std::to_string(k));
    } else {
      n.push_back("encoder.layers." + std::to_string(k) + ".linear1_output_0");
      n.push_back("gradient/encoder.layers." + std::to_string(k) + ".linear1.weight");
    }
  }
  return n;
}

void BM_NameRegex(benchmark::State& state) {
  std::vector<trainscope::NameRegex> res;
  for (const auto& p : Patterns()) res.push_back(*trainscope::NameRegex::Compile(p));
  const auto names = Names(state.range(0) != 0);
  for (auto _ : state) {
    for (const auto& n : names) {
      bool any = false;
      for (const auto& r : res) any = r.Search(n) || any;
      benchmark::DoNotOptimize(any);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(names.size()));
  state.SetLabel(state.range(0) != 0 ? "unrolled module names" : "layer names");
}

void BM_StdRegex(benchmark::State& state) {
  std::vector<std::regex> res;
  for (const auto& p : Patterns()) {
    res.emplace_back(p, std::regex::ECMAScript | std::regex::optimize);
  }
  const auto names = Names(state.range(0) != 0);
  for (auto _ : state) {
    for (const auto& n : names) {
      bool any = false;
      for (const auto& r : res) any = std::regex_search(n, r) || any;
      benchmark::DoNotOptimize(any);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(names.size()));
  state.SetLabel(state.range(0) != 0 ? "unrolled module names" : "layer names");
}

// The limit: a name seen before costs one lookup in the planner's cache.
void BM_CachedLookup(benchmark::State& state) {
  const auto names = Names(state.range(0) != 0);
  std::unordered_map<std::string, uint64_t> cache;
  for (const auto& n : names) cache.emplace(n, 1);
  for (auto _ : state) {
    for (const auto& n : names) benchmark::DoNotOptimize(cache.find(n));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(names.size()));
}

}  // namespace

BENCHMARK(BM_NameRegex)->Arg(1)->Arg(0);
BENCHMARK(BM_StdRegex)->Arg(1)->Arg(0);
BENCHMARK(BM_CachedLookup)->Arg(1)->Arg(0);
BENCHMARK_MAIN();

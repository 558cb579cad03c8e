// NLPSequenceRatio (docs/rules/NLPSequenceRatio.md): a token value (padding, unknown) makes up
// more than its threshold percentage of the input sequences seen so far. An id tensor with
// fewer than kMinDistinct distinct values is not a token sequence (BERT's token_type_ids, all 0
// for single sentences; segment ids; masks) and is not judged.
#include <map>
#include <set>

#include "rules/builtin.h"

namespace trainscope::rules_internal {
namespace {

// smdebug's MXNet default "embedding0_input_0", widened to PyTorch embedding modules:
// "embedding_input_0", "embed_tokens_input_0", "embeddings.word_embeddings_input_0".
constexpr const char* kDefaultRegex = ".*embed[A-Za-z_]*[0-9]*_input_0";

class NLPSequenceRatio : public BuiltinRule {
 public:
  static constexpr const char* kName = "NLPSequenceRatio";
  // Elements to see before the first check (a single odd batch is not a data set).
  static constexpr int64_t kMinTokens = 100;
  // Distinct ids before an id tensor counts as token sequences (a vocabulary, not a flag).
  static constexpr size_t kMinDistinct = 8;

  static std::vector<ParamSpec> Specs() {
    return {TensorRegexSpec(kDefaultRegex),
            {"token_values", ParamType::kDoubleList, "0", "token ids to count (comma-separated)"},
            {"token_thresholds_percent", ParamType::kDoubleList, "50",
             "largest tolerated share (percent) of each token, in the same order"}};
  }

  explicit NLPSequenceRatio(ParsedParams p) : BuiltinRule(kName, std::move(p)) {
    tokens_ = params().DoubleList("token_values");
    thresholds_ = params().DoubleList("token_thresholds_percent");
    selection_.regexes = params().StringList("tensor_regex");
  }

  Status Validate() const {
    if (tokens_.empty()) return Status::InvalidArgument("NLPSequenceRatio: token_values is empty");
    if (tokens_.size() != thresholds_.size()) {
      return Status::InvalidArgument(
          "NLPSequenceRatio: token_values and token_thresholds_percent must have the same "
          "length, got " +
          std::to_string(tokens_.size()) + " and " + std::to_string(thresholds_.size()));
    }
    if (selection_.regexes.empty()) {
      return Status::InvalidArgument("NLPSequenceRatio: tensor_regex must not be empty");
    }
    return Status::OK();
  }

  Result<Verdict> InvokeAtStep(int64_t step) override {
    TS_ASSIGN_OR_RETURN(auto names, data().Select(selection_, step));
    Verdict v;
    for (const auto& name : names) {
      auto t = data().Value(name, step);
      if (!t.ok()) {
        if (IsNoData(t.status())) continue;
        return t.status();
      }
      if (!IsIntegral(t->dtype)) continue;  // token ids
      if (acc_.size() >= 16 && !acc_.count(name)) continue;
      Acc& a = acc_[name];
      a.counts.resize(tokens_.size(), 0);
      a.reported.resize(tokens_.size(), false);
      ForEachElement(*t, [&](int64_t, double x) {
        for (size_t k = 0; k < tokens_.size(); ++k) {
          if (x == tokens_[k]) ++a.counts[k];
        }
        if (a.distinct.size() < kMinDistinct) a.distinct.insert(x);
      });
      a.total += t->num_elements();
      if (a.total < kMinTokens || a.distinct.size() < kMinDistinct) continue;
      for (size_t k = 0; k < tokens_.size(); ++k) {
        const double pct = 100.0 * static_cast<double>(a.counts[k]) / static_cast<double>(a.total);
        if (pct <= thresholds_[k] || a.reported[k]) continue;
        a.reported[k] = true;  // once per token: the share moves slowly
        RuleFinding f = NewFinding(step);
        f.tensor = name;
        f.value = pct;
        f.threshold = thresholds_[k];
        f.condition = "share of token_value > token_thresholds_percent";
        f.explanation = "token " + Num(tokens_[k]) + " makes up " + Num(pct) + "% of the " +
                        std::to_string(a.total) + " tokens of " + name +
                        " seen so far (more than " + Num(thresholds_[k]) +
                        "%): the sequences are mostly padding or unknowns";
        f.recommendation =
            "bucket or sort sequences by length (or pack them) so batches carry less padding, "
            "lower max_length to the real length distribution, and if the token is <unk>, grow "
            "the vocabulary or fix the tokenizer";
        v.Add(std::move(f));
      }
    }
    return v;
  }

  std::vector<CollectionRequest> RequiredCollections() const override {
    CollectionRequest r;
    r.name = "input_sequence";
    r.include_regex = selection_.regexes;
    r.save_interval = 10;
    return {r};
  }

  size_t StateBytes() const override {
    size_t b = 0;
    for (const auto& [name, a] : acc_)
      b += name.capacity() + a.counts.capacity() * 9 + a.distinct.size() * 40 + 64;
    return b;
  }

 private:
  struct Acc {
    std::vector<int64_t> counts;
    std::vector<bool> reported;
    int64_t total = 0;
    std::set<double> distinct;  // up to kMinDistinct ids seen
  };
  std::vector<double> tokens_, thresholds_;
  TensorSelection selection_;
  std::map<std::string, Acc> acc_;
};

}  // namespace

BuiltinDef NLPSequenceRatioDef() {
  return MakeDef<NLPSequenceRatio>("a token (e.g. padding) dominates the input sequences");
}

}  // namespace trainscope::rules_internal

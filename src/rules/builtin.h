// Shared machinery of the built-in debugging rules (docs/rules/<Rule>.md): parameter handling,
// tensor selection, element access, and the list of built-in rule definitions the registry
// loads.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rules/json_util.h"
#include "rules/rule_eval.h"
#include "trainscope/rule.h"
#include "trainscope/rule_data.h"
#include "trainscope/rule_params.h"
#include "trainscope/rule_registry.h"
#include "trainscope/tensor.h"

namespace trainscope::rules_internal {

// A built-in rule: keeps its parsed parameters and reports them.
class BuiltinRule : public Rule {
 public:
  BuiltinRule(std::string name, ParsedParams params)
      : Rule(std::move(name)), params_(std::move(params)) {}
  RuleParams Parameters() const override { return params_.effective(); }

 protected:
  const ParsedParams& params() const { return params_; }
  // collection_names + tensor_regex, or the defaults when neither is given.
  TensorSelection SelectionFromParams(bool all_if_empty,
                                      std::vector<std::string> default_collections = {},
                                      std::vector<std::string> default_regexes = {}) const;

 private:
  ParsedParams params_;
};

// The common smdebug parameters.
ParamSpec CollectionNamesSpec();
ParamSpec TensorRegexSpec(const std::string& default_value = "None");

// Parses parameters, constructs R(params) and calls its Validate(). R must have
// `static constexpr const char* kName`, `static std::vector<ParamSpec> Specs()`,
// a constructor from ParsedParams and `Status Validate() const`.
template <typename R>
Result<std::unique_ptr<Rule>> MakeBuiltin(const RuleParams& given) {
  TS_ASSIGN_OR_RETURN(ParsedParams p, ParseRuleParams(R::kName, R::Specs(), given));
  auto rule = std::make_unique<R>(std::move(p));
  TS_RETURN_IF_ERROR(rule->Validate());
  return std::unique_ptr<Rule>(std::move(rule));
}

// A built-in rule's registry entry.
struct BuiltinDef {
  RuleInfo info;  // default_collections are filled by the registry
  RuleFactory factory;
};

template <typename R>
BuiltinDef MakeDef(std::string summary) {
  BuiltinDef d;
  d.info.name = R::kName;
  d.info.summary = std::move(summary);
  d.info.params = R::Specs();
  d.factory = &MakeBuiltin<R>;
  return d;
}

// One per built-in rule (each in its own debug_<rule>.cc).
BuiltinDef VanishingGradientDef();
BuiltinDef ExplodingTensorDef();
BuiltinDef LossNotDecreasingDef();
BuiltinDef OverfitDef();
BuiltinDef OvertrainingDef();
BuiltinDef SimilarAcrossRunsDef();
BuiltinDef TensorVarianceDef();
BuiltinDef UnchangedTensorDef();
BuiltinDef CheckInputImagesDef();
BuiltinDef NLPSequenceRatioDef();
BuiltinDef PoorWeightInitializationDef();
BuiltinDef SaturatedActivationDef();
BuiltinDef DeadReluDef();
BuiltinDef WeightUpdateRatioDef();
BuiltinDef AllZeroDef();
BuiltinDef ClassImbalanceDef();
BuiltinDef ConfusionDef();
BuiltinDef StalledTrainingRuleDef();

// ---- element access ----

// Calls f(index, value_as_double) for every element of a numeric tensor (C order). Complex
// elements give their magnitude. Does nothing for strings.
template <typename F>
void ForEachElement(const Tensor& t, F&& f) {
  const int64_t n = t.num_elements();
  const void* d = t.data;
  switch (t.dtype) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) f(i, static_cast<double>(static_cast<const float*>(d)[i]));
      break;
    case DType::kF64:
      for (int64_t i = 0; i < n; ++i) f(i, static_cast<const double*>(d)[i]);
      break;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) f(i, double{HalfToFloat(static_cast<const uint16_t*>(d)[i])});
      break;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i)
        f(i, double{BFloat16ToFloat(static_cast<const uint16_t*>(d)[i])});
      break;
    case DType::kI8:
      for (int64_t i = 0; i < n; ++i) f(i, double(static_cast<const int8_t*>(d)[i]));
      break;
    case DType::kI16:
      for (int64_t i = 0; i < n; ++i) f(i, double(static_cast<const int16_t*>(d)[i]));
      break;
    case DType::kI32:
      for (int64_t i = 0; i < n; ++i) f(i, double(static_cast<const int32_t*>(d)[i]));
      break;
    case DType::kI64:
      for (int64_t i = 0; i < n; ++i) f(i, double(static_cast<const int64_t*>(d)[i]));
      break;
    case DType::kU8:
      for (int64_t i = 0; i < n; ++i) f(i, double(static_cast<const uint8_t*>(d)[i]));
      break;
    case DType::kU16:
      for (int64_t i = 0; i < n; ++i) f(i, double(static_cast<const uint16_t*>(d)[i]));
      break;
    case DType::kU32:
      for (int64_t i = 0; i < n; ++i) f(i, double(static_cast<const uint32_t*>(d)[i]));
      break;
    case DType::kU64:
      for (int64_t i = 0; i < n; ++i) f(i, double(static_cast<const uint64_t*>(d)[i]));
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) f(i, static_cast<const uint8_t*>(d)[i] ? 1.0 : 0.0);
      break;
    case DType::kComplex64:
      for (int64_t i = 0; i < n; ++i) {
        const float* c = static_cast<const float*>(d) + 2 * i;
        f(i, std::hypot(double{c[0]}, double{c[1]}));
      }
      break;
    case DType::kComplex128:
      for (int64_t i = 0; i < n; ++i) {
        const double* c = static_cast<const double*>(d) + 2 * i;
        f(i, std::hypot(c[0], c[1]));
      }
      break;
    case DType::kString:
    case DType::kInvalid:
      break;
  }
}

bool IsNumeric(DType t);
bool IsIntegral(DType t);  // integer or bool types

// Elements as doubles (a copy).
std::vector<double> ToDoubles(const Tensor& t);

// Natural order: "layers.2" < "layers.10".
bool NaturalLess(const std::string& a, const std::string& b);

// Sorts module input/output tensor names ("encoder.1_input_0") in the order their modules ran,
// as the trial records it (Trial::modules(), _meta.modules); names whose module it does not
// record (or all, in a trial that records none) follow in natural order.
void SortInForwardOrder(const Trial& trial, std::vector<std::string>* names);

// numpy.allclose(a, b, rtol, atol, equal_nan): |a - b| <= atol + rtol * |b| everywhere, and same
// shape. *max_abs_diff receives the largest |a - b| (NaN pairs count as 0 when equal_nan).
bool AllClose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan,
              double* max_abs_diff);

// Units of an activation tensor, for DeadRelu and SaturatedActivation: rank 1 (F): F units, one
// sample; rank 2 (N, F): units on axis 1; rank 3 (N, T, F): units on the last axis; rank >= 4
// (N, C, ...): units on axis 1 (channels), samples = N x spatial positions.
struct UnitLayout {
  int64_t units = 0;
  int64_t samples = 0;  // per unit
  // unit of flat element index i
  int64_t inner = 1;  // product of dims after the unit axis
  int64_t unit_of(int64_t i) const { return (i / inner) % units; }
};
UnitLayout LayoutOf(const std::vector<int64_t>& shape);

// Per-unit counts accumulated over consecutive steps until enough samples are seen.
struct UnitActivity {
  std::vector<int64_t> active;  // per unit
  int64_t samples = 0;          // per unit
  std::vector<int64_t> shape;   // of the tensors accumulated (a change restarts)
  void Reset() {
    active.assign(active.size(), 0);
    samples = 0;
  }
  size_t bytes() const { return active.capacity() * sizeof(int64_t) + shape.capacity() * 8; }
};

// Text helpers for findings.
using rules_internal::Num;
std::string Percent(double fraction);  // 0.5 -> "50%"

}  // namespace trainscope::rules_internal

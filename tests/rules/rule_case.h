// Data-driven rule cases (tests/rules/cases/<Rule>/*.json, format in tests/rules/cases/README.md):
// a case is a series of steps with generated tensors and the verdict expected. RunCase writes the
// steps one by one as a real trial with TrialWriter, lets a real RuleRunner follow it (polling
// after each step, on a fake clock), and returns what the rule reported (events.jsonl and
// status.json, read back from disk).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "trainscope/reductions.h"
#include "trainscope/rule.h"
#include "trainscope/rule_output_format.h"
#include "trainscope/rule_registry.h"
#include "trainscope/rule_runner.h"
#include "trainscope/trial.h"
#include "trainscope/writer.h"

namespace trainscope::rules_test {

using Json = nlohmann::ordered_json;

// A fresh folder, removed at destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ts_rules_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The collections file smdebug's PyTorch hook writes for the built-in collections, plus `extra`
// (name -> include regexes), and the keys of `meta` (an object, e.g. trainscope's
// _meta.parameters and _meta.modules, docs/formats/trial.md) under _meta when it is not null.
inline std::string CollectionsJson(const std::map<std::string, std::vector<std::string>>& extra,
                                   const nlohmann::json& meta = nullptr) {
  std::map<std::string, std::vector<std::string>> all = {
      {"weights", {"^(?!gradient).*weight"}},
      {"biases", {"^(?!gradient).*bias"}},
      {"gradients", {"^gradient"}},
      {"losses", {"[Ll]oss_(?!input).*output"}},
  };
  for (const auto& [k, v] : extra) all[k] = v;
  nlohmann::json colls = nlohmann::json::object();
  for (const auto& [name, regexes] : all) {
    colls[name] = {{"name", name},
                   {"include_regex", regexes},
                   {"tensor_names", nlohmann::json::array()},
                   {"reduction_config", nullptr},
                   {"save_config", nullptr},
                   {"save_histogram", false}};
  }
  nlohmann::json j = {{"collections", colls}, {"_meta", {{"num_workers", 1}}}};
  if (!meta.is_null()) j["_meta"].update(meta);
  return j.dump();
}

// ---------------------------------------------------------------------------------------------
// Tensor generation.

// Units of an activation-like shape, as the rules see them (builtin.h LayoutOf).
inline int64_t UnitOf(const std::vector<int64_t>& shape, int64_t i, int64_t* units) {
  size_t axis = shape.size() == 1 ? 0 : shape.size() == 2 ? 1 : shape.size() == 3 ? 2 : 1;
  int64_t inner = 1;
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  *units = shape[axis];
  return (i / inner) % shape[axis];
}

struct GenContext {
  std::mt19937_64* rng;
  int64_t k;                                                // index of the step in its group
  int64_t n;                                                // steps in the group
  std::map<std::string, std::vector<double>>* step_values;  // tensors of this step so far
};

struct Generated {
  std::vector<double> values;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
};

inline Generated Generate(const Json& spec, GenContext& c) {
  Generated g;
  if (spec.is_number()) {
    g.values = {spec.get<double>()};
    return g;
  }
  if (spec.contains("shape")) g.shape = spec["shape"].get<std::vector<int64_t>>();
  if (spec.contains("dtype")) {
    auto d = DTypeFromName(spec["dtype"].get<std::string>());
    EXPECT_TRUE(d.has_value()) << spec.dump();
    if (d) g.dtype = *d;
  }
  const int64_t n = NumElements(g.shape);
  // "fixed" (or "frozen_from": k, from the k-th step of the group on): the same values at every
  // step, drawn from a generator seeded by the spec itself, less the keys that only shift the
  // values (so two trials whose specs differ only in add_per_step start from the same values).
  // "fixed": <number> seeds it with that number (two specs that differ only by modifiers then
  // share their values).
  Json seed_spec = spec;
  seed_spec.erase("add_per_step");
  const bool numbered = spec.contains("fixed") && spec["fixed"].is_number();
  std::mt19937_64 own(numbered ? spec["fixed"].get<uint64_t>()
                               : std::hash<std::string>{}(seed_spec.dump()));
  const bool fixed =
      numbered ||
      (spec.contains("fixed") && spec["fixed"].is_boolean() && spec["fixed"].get<bool>()) ||
      (spec.contains("frozen_from") && c.k >= spec["frozen_from"].get<int64_t>());
  std::mt19937_64* rng = fixed ? &own : c.rng;
  auto normal = [&](double m, double s) {
    std::normal_distribution<double> d(m, s);
    return d(*rng);
  };
  auto uniform = [&](double lo, double hi) {
    std::uniform_real_distribution<double> d(lo, hi);
    return d(*rng);
  };
  const double t = c.n > 1 ? static_cast<double>(c.k) / static_cast<double>(c.n - 1) : 0.0;
  if (spec.contains("value")) {
    g.values.assign(static_cast<size_t>(n), spec["value"].get<double>());
  } else if (spec.contains("values")) {
    g.values = spec["values"].get<std::vector<double>>();
    if (!spec.contains("shape")) g.shape = {static_cast<int64_t>(g.values.size())};
  } else if (spec.contains("series")) {  // one scalar per step of the group
    auto s = spec["series"].get<std::vector<double>>();
    g.values = {s[static_cast<size_t>(std::min<int64_t>(c.k, static_cast<int64_t>(s.size()) - 1))]};
  } else if (spec.contains("exp_decay")) {
    const Json& e = spec["exp_decay"];
    const double a = e["start"], b = e["end"], tau = e["tau"];
    g.values = {b + (a - b) * std::exp(-static_cast<double>(c.k) / tau)};
  } else if (spec.contains("linear")) {
    const Json& e = spec["linear"];
    g.values = {e["start"].get<double>() + (e["end"].get<double>() - e["start"].get<double>()) * t};
  } else if (spec.contains("normal")) {
    const double m = spec["normal"][0], s = spec["normal"][1];
    for (int64_t i = 0; i < n; ++i) g.values.push_back(normal(m, s));
  } else if (spec.contains("uniform")) {
    const double lo = spec["uniform"][0], hi = spec["uniform"][1];
    for (int64_t i = 0; i < n; ++i) g.values.push_back(uniform(lo, hi));
  } else if (spec.contains("tokens")) {  // token ids: `token` with probability `fraction`
    const Json& e = spec["tokens"];
    const double token = e["token"], fraction = e["fraction"], vocab = e["vocab"];
    for (int64_t i = 0; i < n; ++i) {
      g.values.push_back(uniform(0, 1) < fraction ? token : std::floor(uniform(1, vocab)));
    }
    if (!spec.contains("dtype")) g.dtype = DType::kI64;
  } else if (spec.contains("classes")) {  // class ids drawn with probabilities `probs`
    std::vector<double> probs = spec["classes"]["probs"].get<std::vector<double>>();
    std::discrete_distribution<int> d(probs.begin(), probs.end());
    for (int64_t i = 0; i < n; ++i) g.values.push_back(d(*rng));
    if (!spec.contains("dtype")) g.dtype = DType::kI64;
  } else if (spec.contains("predict")) {
    // Predictions of the labels tensor `of`: right with probability `accuracy` (per class in
    // `class_accuracy`), else a uniformly drawn other class (or `wrong_as`).
    const Json& e = spec["predict"];
    const auto& labels = c.step_values->at(e["of"].get<std::string>());
    const int classes = e["classes"];
    g.shape = {static_cast<int64_t>(labels.size())};
    for (double l : labels) {
      double acc = e.value("accuracy", 1.0);
      const std::string key = std::to_string(static_cast<int>(l));
      if (e.contains("class_accuracy") && e["class_accuracy"].contains(key)) {
        acc = e["class_accuracy"][key];
      }
      if (uniform(0, 1) < acc) {
        g.values.push_back(l);
      } else if (e.contains("wrong_as")) {
        g.values.push_back(e["wrong_as"].get<double>());
      } else {
        double p = std::floor(uniform(0, classes - 1));
        if (p >= l) p += 1;
        g.values.push_back(p);
      }
    }
    if (!spec.contains("dtype")) g.dtype = DType::kI64;
  } else if (spec.contains("copy")) {
    g.values = c.step_values->at(spec["copy"].get<std::string>());
  } else {
    ADD_FAILURE() << "tensor spec without a generator: " << spec.dump();
  }
  if (g.shape.empty() && g.values.size() > 1) g.shape = {static_cast<int64_t>(g.values.size())};
  // Modifiers.
  auto& x = g.values;
  if (spec.contains("scale")) {
    for (auto& v : x) v *= spec["scale"].get<double>();
  }
  if (spec.contains("scale_per_step")) {
    const double f = std::pow(spec["scale_per_step"].get<double>(), static_cast<double>(c.k));
    for (auto& v : x) v *= f;
  }
  if (spec.contains("add_per_step")) {
    for (auto& v : x) v += spec["add_per_step"].get<double>() * static_cast<double>(c.k);
  }
  if (spec.contains("noise")) {  // multiplicative
    const double s = spec["noise"];
    for (auto& v : x) v *= 1.0 + normal(0, s);
  }
  if (spec.contains("dead_units")) {  // the first fraction of units never positive
    const double f = spec["dead_units"];
    for (size_t i = 0; i < x.size(); ++i) {
      int64_t units = 1;
      const int64_t u = UnitOf(g.shape, static_cast<int64_t>(i), &units);
      if (static_cast<double>(u) < f * static_cast<double>(units)) x[i] = -std::fabs(x[i]) - 0.1;
    }
  }
  if (spec.contains("saturate_units")) {  // the first fraction of units at +-value
    const double f = spec["saturate_units"]["fraction"], val = spec["saturate_units"]["value"];
    for (size_t i = 0; i < x.size(); ++i) {
      int64_t units = 1;
      const int64_t u = UnitOf(g.shape, static_cast<int64_t>(i), &units);
      if (static_cast<double>(u) < f * static_cast<double>(units)) {
        x[i] = (uniform(0, 1) < 0.5 ? -val : val) + normal(0, 1);
      }
    }
  }
  if (spec.value("relu", false)) {
    for (auto& v : x) v = std::max(0.0, v);
  }
  if (spec.contains("symmetric")) {  // every unit of a row equal to the row's first
    const int64_t units = g.shape.back();
    for (size_t i = 0; i < x.size(); ++i) x[i] = x[i - i % static_cast<size_t>(units)];
  }
  if (spec.contains("zero_from") && c.k >= spec["zero_from"].get<int64_t>()) {
    for (auto& v : x) v = 0;
  }
  if (spec.contains("nan_from") && c.k >= spec["nan_from"].get<int64_t>() && !x.empty()) {
    x[x.size() / 2] = NAN;
  }
  if (spec.contains("inf_from") && c.k >= spec["inf_from"].get<int64_t>() && !x.empty()) {
    x[0] = INFINITY;
  }
  return g;
}

// Bytes of `values` as `dtype`.
inline std::string Encode(const std::vector<double>& v, DType dtype) {
  std::string out(v.size() * DTypeSize(dtype), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    char* p = out.data() + i * DTypeSize(dtype);
    switch (dtype) {
      case DType::kF32: {
        float f = static_cast<float>(v[i]);
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::kF64:
        std::memcpy(p, &v[i], 8);
        break;
      case DType::kI64: {
        int64_t x = static_cast<int64_t>(v[i]);
        std::memcpy(p, &x, 8);
        break;
      }
      case DType::kI32: {
        int32_t x = static_cast<int32_t>(v[i]);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::kU8: {
        uint8_t x = static_cast<uint8_t>(v[i]);
        std::memcpy(p, &x, 1);
        break;
      }
      case DType::kF16: {
        uint16_t h = FloatToHalf(static_cast<float>(v[i]));
        std::memcpy(p, &h, 2);
        break;
      }
      default:
        ADD_FAILURE() << "dtype not supported by the case generator: " << DTypeName(dtype);
        return out;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing a case's steps.

struct StepPlan {
  int64_t step = 0;
  Mode mode = Mode::kGlobal;
  int64_t mode_step = 0;
  const Json* tensors = nullptr;   // name -> spec
  const Json* closures = nullptr;  // the index's meta.closure_evaluations, or nullptr
  // The index's meta.model_calls: a number for each step, or a list (the k-th step's); nullptr.
  const Json* model_calls = nullptr;
  int64_t k = 0, n = 1;     // index in its group
  double idle_seconds = 0;  // > 0: no step, the clock moves on
  double seconds = 1;       // clock advance before the step
};

inline std::vector<StepPlan> PlanSteps(const Json& steps) {
  std::vector<StepPlan> plan;
  std::map<Mode, int64_t> mode_steps;
  int64_t next = 0;
  for (const Json& g : steps) {
    if (g.contains("idle_seconds")) {
      StepPlan p;
      p.idle_seconds = g["idle_seconds"];
      plan.push_back(p);
      continue;
    }
    int64_t begin = next, end = next + 1, every = g.value("every", int64_t{1});
    if (g.contains("range")) {
      begin = g["range"][0];
      end = g["range"][1];
    } else if (g.contains("step")) {
      begin = g["step"];
      end = begin + 1;
    } else if (g.contains("count")) {
      end = begin + g["count"].get<int64_t>();
    }
    const Mode mode = ModeFromName(g.value("mode", std::string("GLOBAL"))).value_or(Mode::kGlobal);
    const int64_t n = (end - begin + every - 1) / every;
    for (int64_t s = begin, k = 0; s < end; s += every, ++k) {
      StepPlan p;
      p.step = s;
      p.mode = mode;
      p.mode_step = mode_steps[mode]++;
      p.tensors = &g["tensors"];
      if (g.contains("closure_evaluations")) p.closures = &g["closure_evaluations"];
      if (g.contains("model_calls")) p.model_calls = &g["model_calls"];
      p.k = k;
      p.n = n;
      p.seconds = g.value("seconds_per_step", 1.0);
      plan.push_back(p);
    }
    next = end;
  }
  return plan;
}

// Writes one planned step (raw values and/or saved reductions).
inline void WriteStep(TrialWriter& w, const StepPlan& p, std::mt19937_64& rng) {
  ASSERT_TRUE(w.BeginStep(p.step, p.mode, p.mode_step).ok());
  std::map<std::string, std::vector<double>> values;
  GenContext c{&rng, p.k, p.n, &values};
  for (const auto& [name, spec] : p.tensors->items()) {
    if (spec.is_object() && spec.contains("only_steps")) {
      auto only = spec["only_steps"].get<std::vector<int64_t>>();
      if (std::find(only.begin(), only.end(), p.step) == only.end()) continue;
    }
    Generated g = Generate(spec, c);
    values[name] = g.values;
    const std::string bytes = Encode(g.values, g.dtype);
    TensorView v{g.dtype, bytes.data(), g.shape, {}, {}};
    const bool raw = !spec.is_object() || spec.value("raw", true);
    if (raw) {
      ASSERT_TRUE(w.AddTensor(name, v).ok()) << name;
    }
    if (spec.is_object() && spec.contains("reductions")) {
      for (const auto& tok : spec["reductions"]) {
        auto r = ParseReduction(tok.get<std::string>());
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        auto value = ComputeReduction(v, *r);
        ASSERT_TRUE(value.ok());
        const double d = *value;
        ASSERT_TRUE(
            w.AddTensor(ReductionTensorName(name, *r), TensorView::Scalar(DType::kF64, &d)).ok());
      }
    }
  }
  if (p.closures != nullptr) {
    std::vector<ClosureStep> closures;
    for (const Json& c : *p.closures) {
      closures.push_back(
          ClosureStep{c["optimizer"].get<std::string>(),
                      c["evaluations"].get<std::vector<std::vector<std::string>>>()});
    }
    ASSERT_TRUE(w.SetClosureSteps(std::move(closures)).ok());
  }
  if (p.model_calls != nullptr) {
    const Json& calls = p.model_calls->is_array() ? p.model_calls->at(p.k) : *p.model_calls;
    if (calls.get<int64_t>() >= 2) {
      ASSERT_TRUE(w.SetModelCalls(calls.get<int64_t>()).ok());
    }
  }
  ASSERT_TRUE(w.EndStep().ok());
}

inline std::unique_ptr<TrialWriter> OpenWriter(const std::string& dir) {
  WriterOptions o;
  o.quiet = true;
  auto w = TrialWriter::Open(dir, o);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? std::move(w).value() : nullptr;
}

inline TrialOptions FastTrialOptions() {
  TrialOptions o;
  o.end_delay = std::chrono::milliseconds(0);
  o.refresh_interval = std::chrono::hours(1);  // the runner refreshes explicitly
  return o;
}

// Writes a whole trial (the "other" trial of SimilarAcrossRuns cases).
inline void WriteWholeTrial(const std::string& dir, const Json& spec, uint64_t seed,
                            const std::string& collections) {
  auto w = OpenWriter(dir);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->WriteCollections(collections).ok());
  std::mt19937_64 rng(seed);
  for (const StepPlan& p : PlanSteps(spec["steps"])) {
    if (p.idle_seconds > 0) continue;
    WriteStep(*w, p, rng);
  }
  ASSERT_TRUE(w->Close().ok());
}

// ---------------------------------------------------------------------------------------------
// Running a case.

struct CaseOutcome {
  bool created = false;
  std::string create_error;
  std::vector<RuleFinding> findings;  // from events.jsonl
  Json status;                        // status.json
  RuleState state;                    // runner's view
};

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::map<std::string, std::string> ParamsOf(const Json& j, const std::string& other) {
  std::map<std::string, std::string> out;
  if (!j.contains("params")) return out;
  for (const auto& [k, v] : j["params"].items()) {
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    if (s == "$OTHER") s = other;
    out[k] = s;
  }
  return out;
}

inline CaseOutcome RunCase(const Json& c, const std::string& rule_name) {
  CaseOutcome out;
  TempDir tmp;
  const std::string base = tmp.path() + "/trial";
  const std::string other = tmp.path() + "/other";
  std::map<std::string, std::vector<std::string>> extra;
  if (c.contains("collections")) {
    for (const auto& [k, v] : c["collections"].items())
      extra[k] = v.get<std::vector<std::string>>();
  }
  // A case's "parameters", "modules" and "environments" are the trial's _meta keys of those names.
  Json meta = nullptr;
  for (const char* key : {"parameters", "modules", "environments"}) {
    if (c.contains(key)) meta[key] = c[key];
  }
  const std::string collections = CollectionsJson(extra, meta);
  const uint64_t seed = c.value("seed", uint64_t{1});
  if (c.contains("other_trial")) {
    WriteWholeTrial(other, c["other_trial"], c["other_trial"].value("seed", seed), collections);
  }
  auto rule = CreateRule(rule_name, ParamsOf(c, other));
  if (!rule.ok()) {
    out.create_error = rule.status().ToString();
    return out;
  }
  out.created = true;

  auto writer = OpenWriter(base);
  if (writer == nullptr) return out;
  EXPECT_TRUE(writer->WriteCollections(collections).ok());
  auto trial = Trial::Open(base, FastTrialOptions());
  EXPECT_TRUE(trial.ok()) << trial.status().ToString();
  if (!trial.ok()) return out;

  int64_t clock_us = 1'700'000'000'000'000;  // fake wall clock
  RunnerOptions ro;
  ro.now_micros = [&clock_us]() { return clock_us; };
  ro.status_interval = std::chrono::milliseconds(0);
  RuleRunner runner(std::shared_ptr<Trial>(std::move(trial).value()), ro);
  EXPECT_TRUE(runner.AddRule(std::move(rule).value()).ok());

  std::mt19937_64 rng(seed);
  bool done = false;
  for (const StepPlan& p : PlanSteps(c["steps"])) {
    if (p.idle_seconds > 0) {
      clock_us += static_cast<int64_t>(p.idle_seconds * 1e6);
    } else {
      clock_us += static_cast<int64_t>(p.seconds * 1e6);
      WriteStep(*writer, p, rng);
      EXPECT_TRUE(writer->Flush().ok());
    }
    auto polled = runner.Poll();
    EXPECT_TRUE(polled.ok()) << polled.status().ToString();
    done = polled.ok() && *polled;
    if (done) break;
  }
  EXPECT_TRUE(writer->Close().ok());
  for (int i = 0; i < 500 && !done; ++i) {
    auto polled = runner.Poll();
    EXPECT_TRUE(polled.ok()) << polled.status().ToString();
    done = polled.ok() && *polled;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(done) << "the runner did not finish after the end marker";

  const std::string dir = runner.RuleOutputDir(rule_name);
  std::stringstream events(ReadText(dir + "/" + std::string(rule_output_format::kEventsFile)));
  for (std::string line; std::getline(events, line);) {
    if (line.empty()) continue;
    auto f = RuleFindingFromJson(line);
    EXPECT_TRUE(f.ok()) << f.status().ToString() << " in " << line;
    if (f.ok()) out.findings.push_back(*f);
  }
  out.status = Json::parse(ReadText(dir + "/" + std::string(rule_output_format::kStatusFile)),
                           nullptr, false);
  out.state = runner.states().at(0);
  return out;
}

}  // namespace trainscope::rules_test

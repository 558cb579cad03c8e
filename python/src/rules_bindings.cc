// trainscope._core.rules: the C++ rules for trainscope.rules (python/trainscope/rules/builtin.py).
//
// A RuleHandle owns one rule, the C++ Trial it reads (opened by path) and its RuleData. Calls
// release the GIL while the rule runs. Verdicts come back as tuples
// (code, message, condition_met, end_of_rule, [finding JSON lines]) so that Python decides which
// smdebug exception a "no data" code becomes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <memory>
#include <string>

#include "status_py.h"
#include "trainscope/rule.h"
#include "trainscope/rule_data.h"
#include "trainscope/rule_registry.h"
#include "trainscope/rule_runner.h"
#include "trainscope/trial.h"

namespace py = pybind11;

namespace trainscope::python {
namespace {

using VerdictTuple = std::tuple<std::string, std::string, bool, bool, std::vector<std::string>>;

VerdictTuple ToTuple(const Result<Verdict>& v, int64_t step, Rule& rule, RuleData& data) {
  if (!v.ok()) {
    return {std::string(StatusCodeName(v.status().code())), v.status().message(), false, false, {}};
  }
  std::vector<std::string> findings;
  for (RuleFinding f : v->findings) {
    if (f.step < 0) f.step = step;
    if (f.rule.empty()) f.rule = rule.name();
    if (f.step >= 0 && !f.mode) {
      auto [mode, mode_step] = data.StepMode(f.step);
      f.mode = mode;
      f.mode_step = mode_step;
    }
    if (f.time_micros == 0) f.time_micros = data.NowMicros();
    findings.push_back(RuleFindingToJson(f));
  }
  return {"OK", "", v->condition_met, v->end_of_rule, std::move(findings)};
}

class RuleHandle {
 public:
  RuleHandle(std::unique_ptr<Rule> rule, std::shared_ptr<Trial> trial)
      : trial_(std::move(trial)),
        data_(std::make_unique<RuleData>(trial_)),
        rule_(std::move(rule)) {
    ThrowIfError(rule_->Bind(data_.get()));
  }

  const std::string& name() const { return rule_->name(); }

  VerdictTuple InvokeAtStep(int64_t step) {
    Result<Verdict> v = Status::Internal("unset");
    {
      py::gil_scoped_release release;
      v = Guard([&]() -> Result<Verdict> {
        Status refreshed = trial_->Refresh();
        if (!refreshed.ok() && refreshed.code() != StatusCode::kUnavailable) return refreshed;
        return EvaluateRuleAtStep(*rule_, *data_, step);
      });
    }
    return ToTuple(v, step, *rule_, *data_);
  }

  VerdictTuple Tick(int64_t now_micros) {
    Result<Verdict> v = Status::Internal("unset");
    {
      py::gil_scoped_release release;
      v = Guard([&] { return rule_->OnTick(now_micros); });
    }
    return ToTuple(v, -1, *rule_, *data_);
  }

  VerdictTuple Finish(int64_t last_step) {
    Result<Verdict> v = Status::Internal("unset");
    {
      py::gil_scoped_release release;
      v = Guard([&] { return rule_->Finish(last_step); });
    }
    return ToTuple(v, last_step, *rule_, *data_);
  }

  RuleParams Parameters() const { return rule_->Parameters(); }
  std::vector<CollectionRequest> RequiredCollections() const {
    return rule_->RequiredCollections();
  }

 private:
  template <typename F>
  Result<Verdict> Guard(F&& f) {
    try {
      return f();
    } catch (const std::exception& e) {
      return Status::Internal("rule " + rule_->name() + " threw: " + e.what());
    }
  }

  std::shared_ptr<Trial> trial_;
  std::unique_ptr<RuleData> data_;
  std::unique_ptr<Rule> rule_;
};

py::dict CollectionToDict(const CollectionRequest& r) {
  py::dict d;
  d["name"] = r.name;
  d["include_regex"] = r.include_regex;
  d["save_interval"] = r.save_interval;
  d["start_step"] = r.start_step;
  d["end_step"] = r.end_step;
  d["reductions"] = r.reductions;
  d["save_raw_tensor"] = r.save_raw_tensor;
  return d;
}

py::list CollectionsToList(const std::vector<CollectionRequest>& reqs) {
  py::list l;
  for (const auto& r : reqs) l.append(CollectionToDict(r));
  return l;
}

const char* ParamTypeName(ParamType t) {
  switch (t) {
    case ParamType::kDouble:
      return "float";
    case ParamType::kInt:
      return "int";
    case ParamType::kBool:
      return "bool";
    case ParamType::kString:
      return "str";
    case ParamType::kStringList:
      return "list[str]";
    case ParamType::kDoubleList:
      return "list[float]";
  }
  return "?";
}

}  // namespace

void RegisterRules(py::module_& m) {
  py::module_ rules = m.def_submodule("rules", "trainscope's C++ rules (trainscope.rules).");

  py::class_<RuleHandle>(rules, "RuleHandle",
                         "One C++ rule bound to the trial it reads. Not thread-safe.")
      .def_property_readonly("name", &RuleHandle::name)
      .def("invoke_at_step", &RuleHandle::InvokeAtStep, py::arg("step"),
           "(code, message, condition_met, end_of_rule, findings as JSON lines)")
      .def("tick", &RuleHandle::Tick, py::arg("now_micros"))
      .def("finish", &RuleHandle::Finish, py::arg("last_step"))
      .def("parameters", &RuleHandle::Parameters)
      .def("required_collections",
           [](const RuleHandle& h) { return CollectionsToList(h.RequiredCollections()); });

  rules.def(
      "create_rule",
      [](const std::string& name, const RuleParams& params, const std::string& trial_path) {
        std::unique_ptr<Rule> rule = ValueOrThrow(CreateRule(name, params));
        TrialOptions o;
        o.end_delay = std::chrono::milliseconds(0);
        o.refresh_interval = std::chrono::hours(1);  // invoke_at_step refreshes explicitly
        std::shared_ptr<Trial> trial;
        {
          py::gil_scoped_release release;
          auto opened = Trial::OpenWhenReady(trial_path, o, std::chrono::seconds(60));
          if (!opened.ok()) ThrowIfError(opened.status());
          trial = std::shared_ptr<Trial>(std::move(opened).value());
        }
        return std::make_unique<RuleHandle>(std::move(rule), std::move(trial));
      },
      py::arg("name"), py::arg("params"), py::arg("trial_path"),
      "Creates the rule `name` with string parameters on the trial at `trial_path`. ValueError "
      "for a bad or unknown parameter; NotFoundError for an unknown rule.");

  rules.def("rule_names", &RuleNames, "Every registered rule, sorted.");

  rules.def(
      "describe_rule",
      [](const std::string& name) {
        RuleInfo info = ValueOrThrow(DescribeRule(name));
        py::dict d;
        d["name"] = info.name;
        d["summary"] = info.summary;
        d["kind"] = info.kind;
        py::list params;
        for (const auto& p : info.params) {
          py::dict pd;
          pd["name"] = p.name;
          pd["type"] = ParamTypeName(p.type);
          pd["default"] = p.default_value;
          pd["help"] = p.help;
          params.append(pd);
        }
        d["params"] = params;
        d["default_collections"] = CollectionsToList(info.default_collections);
        return d;
      },
      py::arg("name"));

  rules.def(
      "hook_collection_config",
      [](const std::vector<std::string>& names, const std::vector<RuleParams>& params) {
        std::vector<CollectionRequest> all;
        for (size_t i = 0; i < names.size(); ++i) {
          auto rule =
              ValueOrThrow(CreateRule(names[i], i < params.size() ? params[i] : RuleParams{}));
          auto reqs = rule->RequiredCollections();
          all.insert(all.end(), reqs.begin(), reqs.end());
        }
        return CollectionRequestsToHookJson(all);
      },
      py::arg("names"), py::arg("params"),
      "smdebug's CollectionConfigurations JSON that saves what these rules need.");
}

}  // namespace trainscope::python

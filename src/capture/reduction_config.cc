#include "trainscope/reduction_config.h"

#include <algorithm>

namespace trainscope {
namespace {

bool IsNorm(ReductionOp op) { return op == ReductionOp::kL1 || op == ReductionOp::kL2; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

void AppendUnique(std::vector<Reduction>* out, Reduction r) {
  if (std::find(out->begin(), out->end(), r) == out->end()) out->push_back(r);
}

}  // namespace

Result<ReductionConfig> ReductionConfig::Parse(std::string_view comma_list, bool save_raw_tensor,
                                               bool save_shape) {
  ReductionConfig c;
  c.save_raw_tensor = save_raw_tensor;
  c.save_shape = save_shape;
  while (true) {
    const size_t comma = comma_list.find(',');
    const std::string_view token = Trim(comma_list.substr(0, comma));
    if (!token.empty()) {
      TS_ASSIGN_OR_RETURN(Reduction r, ParseReduction(token));
      auto& list = IsNorm(r.op) ? (r.abs ? c.abs_norms : c.norms)
                                : (r.abs ? c.abs_reductions : c.reductions);
      if (std::find(list.begin(), list.end(), r.op) == list.end()) list.push_back(r.op);
    }
    if (comma == std::string_view::npos) break;
    comma_list.remove_prefix(comma + 1);
  }
  return c;
}

std::string ReductionConfig::ReductionsString() const {
  std::string out;
  auto add = [&out](std::string_view prefix, ReductionOp op, std::string_view suffix) {
    if (!out.empty()) out += ',';
    out.append(prefix).append(ReductionOpName(op)).append(suffix);
  };
  for (auto op : reductions) add("", op, "");
  for (auto op : norms) add("", op, "_norm");
  for (auto op : abs_reductions) add("abs_", op, "");
  for (auto op : abs_norms) add("abs_", op, "_norm");
  return out;
}

std::vector<Reduction> ReductionConfig::All() const {
  std::vector<Reduction> out;
  for (auto op : reductions) AppendUnique(&out, {op, false});
  for (auto op : norms) AppendUnique(&out, {op, false});
  for (auto op : abs_reductions) AppendUnique(&out, {op, true});
  for (auto op : abs_norms) AppendUnique(&out, {op, true});
  return out;
}

Status ReductionConfig::Validate(std::string_view what) const {
  const std::string owner(what);
  for (auto* list : {&reductions, &abs_reductions}) {
    for (auto op : *list) {
      if (IsNorm(op)) {
        return Status::InvalidArgument(
            owner + ": '" + std::string(ReductionOpName(op)) + "' is a norm: put it in " +
            (list == &reductions ? "norms" : "abs_norms") + " (or write '" +
            std::string(ReductionOpName(op)) + "_norm' in a reductions string)");
      }
    }
  }
  for (auto* list : {&norms, &abs_norms}) {
    for (auto op : *list) {
      if (!IsNorm(op)) {
        return Status::InvalidArgument(owner + ": '" + std::string(ReductionOpName(op)) +
                                       "' is not a norm: norms can only be l1 or l2; put it in " +
                                       (list == &norms ? "reductions" : "abs_reductions"));
      }
    }
  }
  return Status::OK();
}

Result<ReductionOp> ParseReductionForList(std::string_view list, std::string_view name) {
  const bool norm_list = list == "norms" || list == "abs_norms";
  std::string_view n = Trim(name);
  if (norm_list && n.size() > 5 && n.substr(n.size() - 5) == "_norm") n.remove_suffix(5);
  auto op = ReductionOpFromName(n);
  if (!op) {
    auto r = ParseReduction(name);  // for its message listing the valid names
    if (!r.ok()) return Status::InvalidArgument(std::string(list) + ": " + r.status().message());
    return Status::InvalidArgument(std::string(list) + ": '" + std::string(name) +
                                   "' is not a plain reduction name (no abs_ prefix here: use " +
                                   (norm_list ? "abs_norms" : "abs_reductions") + ")");
  }
  if (norm_list != IsNorm(*op)) {
    return Status::InvalidArgument(
        std::string(list) + ": '" + std::string(name) + "' " +
        (norm_list ? "is not a norm: norms can only be l1 or l2; put it in reductions"
                   : "is a norm: put it in norms (or abs_norms)"));
  }
  return *op;
}

}  // namespace trainscope

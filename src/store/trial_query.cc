// Trial::Impl: queries (names, steps, values) and smdebug's exception mapping (see trial.h).
#include <algorithm>
#include <cstring>

#include "store/trial_impl.h"
#include "trainscope/name_regex.h"
#include "trainscope/trial_format.h"

namespace trainscope {

namespace {

Result<NameRegex> CompileRegex(const std::string& pattern, std::string_view what) {
  Result<NameRegex> re = NameRegex::Compile(pattern);
  if (re.ok()) return re;
  return Status::InvalidArgument(
      std::string(what) + " \"" + pattern +
      "\" is not a valid ECMAScript regular expression: " + re.status().message());
}

// The single element of a saved reduction (a 0-d or 1-element tensor) as a double.
Result<double> ScalarValue(const Tensor& t, const std::string& where) {
  if (t.dtype == DType::kString || t.num_elements() != 1 || t.data == nullptr) {
    return Status::Corruption(where + ": a saved reduction must hold one number, found " +
                              std::string(DTypeName(t.dtype)) + " of shape " +
                              ShapeToString(t.shape));
  }
  auto get = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, t.data, sizeof(v));
    return static_cast<double>(v);
  };
  switch (t.dtype) {
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, t.data, 2);
      return static_cast<double>(HalfToFloat(h));
    }
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, t.data, 2);
      return static_cast<double>(BFloat16ToFloat(h));
    }
    case DType::kF32:
      return get(float{});
    case DType::kF64:
      return get(double{});
    case DType::kI8:
      return get(int8_t{});
    case DType::kI16:
      return get(int16_t{});
    case DType::kI32:
      return get(int32_t{});
    case DType::kI64:
      return get(int64_t{});
    case DType::kU8:
      return get(uint8_t{});
    case DType::kU16:
      return get(uint16_t{});
    case DType::kU32:
      return get(uint32_t{});
    case DType::kU64:
      return get(uint64_t{});
    case DType::kBool:
      return get(uint8_t{}) != 0 ? 1.0 : 0.0;
    default:
      break;
  }
  // Complex: reductions of complex tensors reduce |x| (reductions.h); take the magnitude.
  return ComputeReduction(t.view(), Reduction{ReductionOp::kMax, true});
}

}  // namespace

std::string Trial::Impl::Describe(const std::string& tensor, int64_t step, Mode mode) const {
  return "tensor \"" + tensor + "\" at step " + std::to_string(step) +
         (mode == Mode::kGlobal ? "" : " of mode " + std::string(ModeName(mode))) + " in " + path_;
}

// --------------------------------------------------------------------------------------------
// Names and steps

Result<std::vector<std::string>> Trial::Impl::TensorNames(Mode mode, std::optional<int64_t> step,
                                                          const std::string& regex,
                                                          const std::string& collection) {
  if (!regex.empty() && !collection.empty()) {
    return Status::InvalidArgument("TensorNames: pass a regex or a collection, not both");
  }
  std::vector<NameRegex> patterns;
  const CollectionInfo* coll = nullptr;
  if (!regex.empty()) {
    TS_ASSIGN_OR_RETURN(NameRegex re, CompileRegex(regex, "regex"));
    patterns.push_back(std::move(re));
  }
  if (!collection.empty()) {
    for (const CollectionInfo& c : collections_) {
      if (c.name == collection) coll = &c;
    }
    if (coll == nullptr) {
      std::string names;
      for (const CollectionInfo& c : collections_) names += (names.empty() ? "" : ", ") + c.name;
      return Status::NotFound("no collection \"" + collection + "\" in " + path_ +
                              " (collections: " + names + ")");
    }
    for (const std::string& p : coll->include_regex) {
      TS_ASSIGN_OR_RETURN(NameRegex re,
                          CompileRegex(p, "include_regex of collection " + coll->name));
      patterns.push_back(std::move(re));
    }
  }
  TS_RETURN_IF_ERROR(MaybeRefresh());
  std::vector<std::string> names;
  {
    MutexLock l(&mu_);
    std::optional<int64_t> global;
    if (step) {
      global = tracker_.GlobalStep(mode, *step);
      if (!global) return names;
    }
    const uint8_t mode_bit = static_cast<uint8_t>(1u << static_cast<int>(mode));
    for (uint32_t id : index_.SortedTensorIds()) {
      if (global) {
        if (!index_.HasStep(id, *global)) continue;
      } else if (mode != Mode::kGlobal && (index_.tensor_modes(id) & mode_bit) == 0) {
        continue;
      }
      names.push_back(index_.tensor_name(id));
    }
  }
  if (patterns.empty() && coll == nullptr) return names;
  // Filter outside the lock: regex matching is the slow part.
  std::vector<std::string> out;
  for (std::string& n : names) {
    bool keep = coll != nullptr &&
                std::binary_search(coll->tensor_names.begin(), coll->tensor_names.end(), n);
    for (size_t i = 0; !keep && i < patterns.size(); ++i) {
      keep = patterns[i].Search(n);
    }
    if (keep) out.push_back(std::move(n));
  }
  return out;
}

bool Trial::Impl::HasTensor(const std::string& name) {
  {
    MutexLock l(&mu_);
    if (index_.FindTensor(name)) return true;
  }
  (void)MaybeRefresh();  // a query answers with what it can read; Refresh() reports errors
  MutexLock l(&mu_);
  return index_.FindTensor(name).has_value();
}

std::vector<int64_t> Trial::Impl::Steps(Mode mode, bool show_incomplete) {
  (void)MaybeRefresh();  // answers with what it can read (as above)
  MutexLock l(&mu_);
  return tracker_.Steps(mode, show_incomplete);
}

std::vector<Mode> Trial::Impl::Modes() {
  (void)MaybeRefresh();  // answers with what it can read (as above)
  MutexLock l(&mu_);
  return tracker_.Modes();
}

Result<std::pair<Mode, int64_t>> Trial::Impl::ModeOf(int64_t global_step) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      MutexLock l(&mu_);
      if (auto m = tracker_.ModeOf(global_step)) return *m;
    }
    if (attempt == 0) (void)MaybeRefresh();  // answers with what it can read (as above)
  }
  return Status::NotFound("StepUnavailable: global step " + std::to_string(global_step) +
                          " was not saved in " + path_ + " (yet)")
      .WithDetail(ErrorDetail::kStepUnavailable, {.step = global_step, .mode = Mode::kGlobal});
}

Result<int64_t> Trial::Impl::GlobalStep(Mode mode, int64_t mode_step) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      MutexLock l(&mu_);
      if (auto g = tracker_.GlobalStep(mode, mode_step)) return *g;
    }
    if (attempt == 0) (void)MaybeRefresh();  // answers with what it can read (as above)
  }
  return Status::NotFound("StepUnavailable: step " + std::to_string(mode_step) + " of mode " +
                          std::string(ModeName(mode)) + " was not saved in " + path_ + " (yet)")
      .WithDetail(ErrorDetail::kStepUnavailable, {.step = mode_step, .mode = mode});
}

StepState Trial::Impl::HasPassedStep(int64_t step, Mode mode) {
  (void)MaybeRefresh();  // answers with what it can read (as above)
  MutexLock l(&mu_);
  return tracker_.HasPassedStep(step, mode);
}

bool Trial::Impl::loaded_all_steps() const {
  MutexLock l(&mu_);
  return tracker_.loaded_all_steps();
}

bool Trial::Impl::training_ended() {
  return env_->FileExists(JoinPath(path_, trial_format::kEndOfJobFile));
}

int64_t Trial::Impl::last_complete_step() const {
  MutexLock l(&mu_);
  return tracker_.last_complete_step();
}

Result<std::vector<int64_t>> Trial::Impl::TensorSteps(const std::string& tensor, Mode mode,
                                                      bool show_incomplete) {
  (void)MaybeRefresh();  // answers with what it can read (as above)
  MutexLock l(&mu_);
  auto id = index_.FindTensor(tensor);
  if (!id) {
    return Status::NotFound("TensorUnavailable: tensor \"" + tensor + "\" was not saved in " +
                            path_ + " (yet)")
        .WithDetail(ErrorDetail::kTensorUnavailable, {.tensor = tensor});
  }
  std::vector<int64_t> out;
  for (int64_t g : index_.StepsOf(*id)) {
    if (!show_incomplete && !tracker_.IsComplete(g)) continue;
    if (mode == Mode::kGlobal) {
      out.push_back(g);
      continue;
    }
    // The mode step the tensor's own index file gave this step.
    const Location& first = index_.At(*id, g).front();
    const FileRecord& f = index_.file(first.file);
    if (f.mode == mode) out.push_back(f.mode_step);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// --------------------------------------------------------------------------------------------
// Lookups and smdebug's exceptions

Status Trial::Impl::MissError(const std::string& tensor, int64_t step, Mode mode) {
  StepState state;
  bool ended;
  int64_t last_step = -1;
  {
    MutexLock l(&mu_);
    state = tracker_.HasPassedStep(step, mode);
    ended = tracker_.loaded_all_steps();
    auto steps = tracker_.Steps(mode, false);
    if (!steps.empty()) last_step = steps.back();
  }
  const std::string what = Describe(tensor, step, mode);
  const ErrorSubject subject{.tensor = tensor, .step = step, .mode = mode, .last_step = last_step};
  switch (state) {
    case StepState::kAvailable:
      return Status::NotFound("TensorUnavailableForStep: " + what +
                              ": the step exists but this tensor was not saved at it "
                              "(has_reductions=false)")
          .WithDetail(ErrorDetail::kTensorUnavailableForStep, subject);
    case StepState::kUnavailable:
      return Status::NotFound("StepUnavailable: " + what + ": the step was not saved")
          .WithDetail(ErrorDetail::kStepUnavailable, subject);
    case StepState::kNotYetAvailable:
      break;
  }
  if (ended) {
    return Status::OutOfRange("NoMoreData: " + what + ": training ended; the last step is " +
                              std::to_string(last_step))
        .WithDetail(ErrorDetail::kNoMoreData, subject);
  }
  return Status::Unavailable("StepNotYetAvailable: " + what +
                             ": the step is not written yet; wait (WaitForChange) and retry")
      .WithDetail(ErrorDetail::kStepNotYetAvailable, subject);
}

Result<StepEntries> Trial::Impl::Lookup(const std::string& tensor, int64_t step, Mode mode,
                                        const std::string& worker) {
  bool known = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt == 1) (void)MaybeRefresh();  // answers with what it can read (as above)
    MutexLock l(&mu_);
    auto id = index_.FindTensor(tensor);
    if (!id) continue;
    known = true;
    std::optional<int64_t> global = tracker_.GlobalStep(mode, step);
    if (mode == Mode::kGlobal) global = step;
    if (!global) continue;
    std::span<const Location> locs = index_.At(*id, *global);
    if (locs.empty()) continue;
    // Pick the worker: the named one, else the first by name.
    std::optional<uint16_t> chosen;
    for (const Location& loc : locs) {
      const std::string& w = index_.worker_name(loc.worker);
      if (worker.empty() ? (!chosen || w < index_.worker_name(*chosen)) : w == worker) {
        chosen = loc.worker;
      }
    }
    if (!chosen) {
      std::string have;
      for (const Location& loc : locs) {
        const std::string& w = index_.worker_name(loc.worker);
        if (have.find(w) == std::string::npos) have += (have.empty() ? "" : ", ") + w;
      }
      return Status::InvalidArgument("InvalidWorker: worker \"" + worker + "\" did not save " +
                                     Describe(tensor, step, mode) + "; workers that did: " + have)
          .WithDetail(ErrorDetail::kInvalidWorker,
                      {.tensor = tensor, .step = step, .mode = mode, .worker = worker});
    }
    StepEntries e;
    e.tensor = tensor;
    e.step = step;
    e.mode = mode;
    e.global_step = *global;
    e.worker = index_.worker_name(*chosen);
    for (const Location& loc : locs) {
      if (loc.worker != *chosen) continue;
      if (loc.kind == LocationKind::kShape) {
        auto dims = index_.ShapeDims(loc);
        e.shape.assign(dims.begin(), dims.end());
        e.has_shape = true;
        continue;
      }
      if (e.event_file.empty()) e.event_file = index_.file(loc.file).event_file;
      e.entries.push_back(StepEntries::Entry{loc.kind, (loc.flags & Location::kHasCrc) != 0,
                                             loc.crc32c, loc.offset, index_.RecordLength(loc)});
    }
    return e;
  }
  if (!known) {
    return Status::NotFound("TensorUnavailable: tensor \"" + tensor + "\" was not saved in " +
                            path_ + " (yet)")
        .WithDetail(ErrorDetail::kTensorUnavailable, {.tensor = tensor});
  }
  return MissError(tensor, step, mode);
}

Result<std::vector<std::string>> Trial::Impl::TensorWorkers(const std::string& tensor, int64_t step,
                                                            Mode mode) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt == 1) (void)MaybeRefresh();  // answers with what it can read (as above)
    MutexLock l(&mu_);
    auto id = index_.FindTensor(tensor);
    std::optional<int64_t> global =
        mode == Mode::kGlobal ? std::optional<int64_t>(step) : tracker_.GlobalStep(mode, step);
    if (!id || !global) continue;
    std::vector<std::string> out;
    for (const Location& loc : index_.At(*id, *global)) {
      out.push_back(index_.worker_name(loc.worker));
    }
    if (out.empty()) continue;
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  return Status::NotFound("TensorUnavailableForStep: " + Describe(tensor, step, mode) +
                          ": no worker saved it (has_reductions=false)")
      .WithDetail(ErrorDetail::kTensorUnavailableForStep,
                  {.tensor = tensor, .step = step, .mode = mode});
}

Result<Tensor> Trial::Impl::Read(const StepEntries& e, const StepEntries::Entry& entry) {
  if (e.event_file.empty()) {
    return Status::NotFound("TensorUnavailableForStep: " + e.tensor + " at step " +
                            std::to_string(e.global_step) + " (worker " + e.worker +
                            "): its index entry names no event file (has_reductions=false)")
        .WithDetail(ErrorDetail::kTensorUnavailableForStep,
                    {.tensor = e.tensor, .step = e.step, .mode = e.mode, .worker = e.worker});
  }
  RecordSpec spec;
  spec.display_path = e.event_file;
  spec.path = (!e.event_file.empty() && e.event_file[0] == '/') ? e.event_file
                                                                : JoinPath(path_, e.event_file);
  spec.offset = entry.offset;
  spec.length = entry.length;
  if (entry.has_crc) spec.crc32c = entry.crc32c;
  std::string tag = LocationKind::IsReduction(entry.kind)
                        ? ReductionTensorName(e.tensor, LocationKind::ToReduction(entry.kind))
                        : e.tensor;
  spec.expected_tag = tag;
  return values_.Read(spec);
}

Result<Tensor> Trial::Impl::Value(const std::string& tensor, int64_t step, Mode mode,
                                  const std::string& worker) {
  TS_ASSIGN_OR_RETURN(StepEntries e, Lookup(tensor, step, mode, worker));
  const StepEntries::Entry* v = e.Find(LocationKind::kValue);
  if (v == nullptr) {
    const bool red = e.HasReductions();
    return Status::NotFound(
               "TensorUnavailableForStep: " + Describe(tensor, step, mode) + ": only its " +
               std::string(red ? "reductions" : "shape") +
               " were saved, not the raw value (has_reductions=" + (red ? "true" : "false") +
               "); use ReductionValue" + (red ? "" : " or Shape") + ", or save the raw tensor")
        .WithDetail(ErrorDetail::kTensorUnavailableForStep,
                    {.tensor = tensor, .step = step, .mode = mode, .has_reductions = red});
  }
  return Read(e, *v);
}

Result<double> Trial::Impl::ReductionValue(const std::string& tensor, int64_t step, Reduction r,
                                           Mode mode, const std::string& worker) {
  TS_ASSIGN_OR_RETURN(StepEntries e, Lookup(tensor, step, mode, worker));
  if (const StepEntries::Entry* saved = e.Find(LocationKind::OfReduction(r))) {
    TS_ASSIGN_OR_RETURN(Tensor t, Read(e, *saved));
    return ScalarValue(t, e.event_file + ", record at byte " + std::to_string(saved->offset));
  }
  const StepEntries::Entry* v = e.Find(LocationKind::kValue);
  if (v == nullptr) {
    return Status::NotFound(
               "TensorUnavailableForStep: " + Describe(tensor, step, mode) + ": neither the " +
               (r.abs ? "abs_" : "") + std::string(ReductionOpName(r.op)) +
               " reduction nor the raw value was saved, so it cannot be computed (has_reductions=" +
               (e.HasReductions() ? "true" : "false") + ")")
        .WithDetail(
            ErrorDetail::kTensorUnavailableForStep,
            {.tensor = tensor, .step = step, .mode = mode, .has_reductions = e.HasReductions()});
  }
  TS_ASSIGN_OR_RETURN(Tensor t, Read(e, *v));
  return ComputeReduction(t.view(), r);
}

Result<std::vector<std::pair<Reduction, double>>> Trial::Impl::SavedReductions(
    const std::string& tensor, int64_t step, Mode mode, const std::string& worker) {
  TS_ASSIGN_OR_RETURN(StepEntries e, Lookup(tensor, step, mode, worker));
  std::sort(e.entries.begin(), e.entries.end(),
            [](const auto& a, const auto& b) { return a.kind < b.kind; });
  std::vector<std::pair<Reduction, double>> out;
  for (const StepEntries::Entry& entry : e.entries) {
    if (!LocationKind::IsReduction(entry.kind)) continue;
    TS_ASSIGN_OR_RETURN(Tensor t, Read(e, entry));
    TS_ASSIGN_OR_RETURN(double v, ScalarValue(t, e.event_file + ", record at byte " +
                                                     std::to_string(entry.offset)));
    out.emplace_back(LocationKind::ToReduction(entry.kind), v);
  }
  return out;
}

Result<std::vector<int64_t>> Trial::Impl::Shape(const std::string& tensor, int64_t step, Mode mode,
                                                const std::string& worker) {
  TS_ASSIGN_OR_RETURN(StepEntries e, Lookup(tensor, step, mode, worker));
  if (e.has_shape) return e.shape;
  const StepEntries::Entry* v = e.Find(LocationKind::kValue);
  if (v == nullptr) {
    return Status::NotFound("ShapeUnavailableForStep: " + Describe(tensor, step, mode) +
                            ": neither its shape nor its raw value was saved")
        .WithDetail(ErrorDetail::kShapeUnavailableForStep,
                    {.tensor = tensor, .step = step, .mode = mode});
  }
  TS_ASSIGN_OR_RETURN(Tensor t, Read(e, *v));
  return t.shape;
}

std::vector<ClosureStep> Trial::Impl::ClosureSteps(int64_t step, const std::string& worker) {
  (void)MaybeRefresh();  // answers with what it can read (as above)
  MutexLock l(&mu_);
  const std::vector<ClosureStep>* found = nullptr;
  if (worker.empty()) {
    found = index_.Closures(step);
  } else if (auto id = index_.FindWorker(worker)) {
    found = index_.Closures(step, *id);
  }
  return found == nullptr ? std::vector<ClosureStep>() : *found;
}

int64_t Trial::Impl::ModelCalls(int64_t step, const std::string& worker) {
  (void)MaybeRefresh();  // answers with what it can read (as above)
  MutexLock l(&mu_);
  if (worker.empty()) return index_.ModelCalls(step);
  auto id = index_.FindWorker(worker);
  return id ? index_.ModelCalls(step, *id) : 0;
}

}  // namespace trainscope

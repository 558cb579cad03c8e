// Trial: opening a trial, and the public methods (which forward to Trial::Impl).
#include "trainscope/trial.h"

#include <thread>

#include "store/collections_reader.h"
#include "store/trial_impl.h"
#include "trainscope/trial_format.h"

namespace trainscope {

namespace {

constexpr size_t kMaxMappedFiles = 64;

std::string StripTrailingSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

Status MissingCollections(const std::string& path, const std::string& what) {
  return Status::NotFound("MissingCollectionFiles: no debugging data was saved in " + path +
                          ": the job ended (" + std::string(trial_format::kEndOfJobFile) +
                          " exists) " + what)
      .WithDetail(ErrorDetail::kMissingCollectionFiles);
}

}  // namespace

Trial::Impl::Impl(Env* env, std::string path, TrialOptions options,
                  std::vector<std::string> workers, int num_workers,
                  std::vector<CollectionInfo> collections, std::map<std::string, bool> parameters,
                  std::vector<ModuleInfo> modules, std::vector<std::string> environments)
    : env_(env),
      path_(std::move(path)),
      options_(options),
      workers_(std::move(workers)),
      num_workers_(num_workers),
      collections_(std::move(collections)),
      parameters_(std::move(parameters)),
      modules_(std::move(modules)),
      environments_(std::move(environments)),
      scanner_(env, path_, options.range_begin, options.range_end),
      tracker_(num_workers, options.incomplete_step_window),
      values_(env, kMaxMappedFiles, options.verify_checksums) {}

Result<std::unique_ptr<Trial>> Trial::Open(const std::string& path_in, TrialOptions options) {
  Env* env = options.env ? options.env : Env::Default();
  options.env = env;
  const std::string path = StripTrailingSlashes(path_in);
  if (options.range_end >= 0 && options.range_end < options.range_begin) {
    return Status::InvalidArgument("range_end " + std::to_string(options.range_end) +
                                   " is before range_begin " + std::to_string(options.range_begin));
  }
  if (options.incomplete_step_window < 1) {
    return Status::InvalidArgument("incomplete_step_window must be >= 1, not " +
                                   std::to_string(options.incomplete_step_window));
  }
  if (!env->IsDirectory(path)) {
    if (env->FileExists(path)) {
      return Status::InvalidArgument(path + " is a file; a trial is a folder");
    }
    return Status::NotFound("trial folder " + path + " does not exist");
  }
  TS_ASSIGN_OR_RETURN(CollectionsListing listing, FindCollectionsFiles(env, path));
  const bool ended = env->FileExists(JoinPath(path, trial_format::kEndOfJobFile));
  if (listing.paths.empty()) {
    if (ended) return MissingCollections(path, "without writing any collections file");
    return Status::Unavailable("no collections file yet in " + path +
                               "/collections/000000000/ (training has not saved its first "
                               "step); try again later or use Trial::OpenWhenReady");
  }
  TS_ASSIGN_OR_RETURN(std::string text,
                      env->ReadFile(listing.paths[0], trial_format::kMaxCollectionsFileBytes));
  TS_ASSIGN_OR_RETURN(CollectionsFile first, ParseCollectionsFile(text, listing.paths[0]));
  const auto have = static_cast<int>(listing.paths.size());
  if (have < first.num_workers) {
    const std::string what = "only " + std::to_string(have) + " of " +
                             std::to_string(first.num_workers) + " collections files exist";
    if (ended) return MissingCollections(path, "but " + what);
    return Status::Unavailable("waiting for the collections files of every worker in " + path +
                               ": " + what);
  }
  std::vector<std::string> workers = listing.workers;
  std::sort(workers.begin(), workers.end());
  auto impl = std::make_unique<Impl>(env, path, options, std::move(workers), first.num_workers,
                                     std::move(first.collections), std::move(first.parameters),
                                     std::move(first.modules), std::move(first.environments));
  TS_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Trial>(new Trial(std::move(impl)));
}

Result<std::unique_ptr<Trial>> Trial::OpenWhenReady(const std::string& path, TrialOptions options,
                                                    std::chrono::milliseconds timeout,
                                                    std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Env* env = options.env ? options.env : Env::Default();
  for (;;) {
    // A folder that does not exist yet is waited for, like missing collections files.
    auto t = env->FileExists(path) ? Open(path, options)
                                   : Result<std::unique_ptr<Trial>>(Status::Unavailable(
                                         "trial folder " + path + " does not exist yet"));
    if (t.ok() || t.status().code() != StatusCode::kUnavailable) return t;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return Status::Unavailable("gave up after " + std::to_string(timeout.count()) +
                                 " ms: " + t.status().message());
    }
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::max(poll, std::chrono::milliseconds(1)), deadline - now));
  }
}

Trial::Trial(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trial::~Trial() = default;

const std::string& Trial::path() const { return impl_->path_; }
std::string Trial::name() const { return std::string(Basename(impl_->path_)); }

Status Trial::Refresh() { return impl_->Refresh(nullptr); }
Status Trial::MaybeRefresh() { return impl_->MaybeRefresh(); }
Status Trial::WaitForChange(std::chrono::milliseconds timeout) {
  return impl_->WaitForChange(timeout);
}

std::vector<std::string> Trial::workers() const { return impl_->workers_; }
int Trial::num_workers() const { return impl_->num_workers_; }
std::vector<CollectionInfo> Trial::collections() const { return impl_->collections_; }
std::optional<CollectionInfo> Trial::collection(const std::string& name) const {
  for (const CollectionInfo& c : impl_->collections_) {
    if (c.name == name) return c;
  }
  return std::nullopt;
}

std::optional<bool> Trial::ParameterTrainable(const std::string& tensor_name) const {
  auto it = impl_->parameters_.find(tensor_name);
  if (it == impl_->parameters_.end()) return std::nullopt;
  return it->second;
}
bool Trial::records_parameters() const { return !impl_->parameters_.empty(); }

const std::vector<ModuleInfo>& Trial::modules() const { return impl_->modules_; }

const std::vector<std::string>& Trial::environments() const { return impl_->environments_; }

Result<std::vector<std::string>> Trial::TensorNames(Mode mode, std::optional<int64_t> step,
                                                    const std::string& regex,
                                                    const std::string& collection) {
  return impl_->TensorNames(mode, step, regex, collection);
}
bool Trial::HasTensor(const std::string& name) { return impl_->HasTensor(name); }
std::vector<int64_t> Trial::Steps(Mode mode, bool show_incomplete) {
  return impl_->Steps(mode, show_incomplete);
}
std::vector<Mode> Trial::Modes() { return impl_->Modes(); }
Result<Mode> Trial::ModeOf(int64_t global_step) {
  TS_ASSIGN_OR_RETURN(auto m, impl_->ModeOf(global_step));
  return m.first;
}
Result<int64_t> Trial::ModeStep(int64_t global_step) {
  TS_ASSIGN_OR_RETURN(auto m, impl_->ModeOf(global_step));
  return m.second;
}
Result<int64_t> Trial::GlobalStep(Mode mode, int64_t mode_step) {
  return impl_->GlobalStep(mode, mode_step);
}
StepState Trial::HasPassedStep(int64_t step, Mode mode) { return impl_->HasPassedStep(step, mode); }
bool Trial::loaded_all_steps() const { return impl_->loaded_all_steps(); }
bool Trial::training_ended() { return impl_->training_ended(); }
int64_t Trial::last_complete_step() const { return impl_->last_complete_step(); }

Result<std::vector<int64_t>> Trial::TensorSteps(const std::string& tensor, Mode mode,
                                                bool show_incomplete) {
  return impl_->TensorSteps(tensor, mode, show_incomplete);
}
Result<std::vector<std::string>> Trial::TensorWorkers(const std::string& tensor, int64_t step,
                                                      Mode mode) {
  return impl_->TensorWorkers(tensor, step, mode);
}
Result<Tensor> Trial::Value(const std::string& tensor, int64_t step, Mode mode,
                            const std::string& worker) {
  return impl_->Value(tensor, step, mode, worker);
}
Result<double> Trial::ReductionValue(const std::string& tensor, int64_t step, Reduction r,
                                     Mode mode, const std::string& worker) {
  return impl_->ReductionValue(tensor, step, r, mode, worker);
}
Result<std::vector<std::pair<Reduction, double>>> Trial::SavedReductions(
    const std::string& tensor, int64_t step, Mode mode, const std::string& worker) {
  return impl_->SavedReductions(tensor, step, mode, worker);
}
Result<std::vector<int64_t>> Trial::Shape(const std::string& tensor, int64_t step, Mode mode,
                                          const std::string& worker) {
  return impl_->Shape(tensor, step, mode, worker);
}

std::vector<ClosureStep> Trial::ClosureSteps(int64_t step, const std::string& worker) {
  return impl_->ClosureSteps(step, worker);
}

int64_t Trial::ModelCalls(int64_t step, const std::string& worker) {
  return impl_->ModelCalls(step, worker);
}

}  // namespace trainscope

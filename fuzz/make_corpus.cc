// Writes the seed corpora of the fuzz targets: small real files from a trial written by
// TrialWriter (every dtype, reductions, shapes) plus corrupt variants of them, and, given the
// output folder of a real `trainscope run` (rules and profiler on), its rule output, event log,
// stop file, hook and profiler configurations, system metrics and timeline files:
//   build-fuzz/fuzz/make_corpus fuzz/corpus [RUN_OUT]
// (fuzz/README.md says how to make RUN_OUT.) Files over kMaxSeedBytes are cut at a line end.
// Inputs the fuzzers found interesting are added to the same folders by hand (libFuzzer
// -merge=1); files from smdebug's own fixtures (tests/data/smdebug) are copied in as well.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "store/record_io.h"
#include "trainscope/env.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace fs = std::filesystem;
using namespace trainscope;  // NOLINT(build/namespaces): a tool

namespace {

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void Put(const fs::path& p, const std::string& data) { std::ofstream(p, std::ios::binary) << data; }

constexpr size_t kMaxSeedBytes = 8 * 1024;

// At most kMaxSeedBytes of `text`, cut after a newline when it is longer.
std::string Capped(const std::string& text) {
  if (text.size() <= kMaxSeedBytes) return text;
  const size_t nl = text.rfind('\n', kMaxSeedBytes);
  return text.substr(0, nl == std::string::npos ? kMaxSeedBytes : nl + 1);
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += fuzz::kPartSeparator;
    out += parts[i];
  }
  return out;
}

// The regular files under `dir` (recursively) whose name ends in `suffix`, sorted.
std::vector<fs::path> FilesUnder(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Seeds from the output folder of a real `trainscope run`: one per file, named after it.
void SeedsFromRun(const fs::path& run, const fs::path& out) {
  auto seed = [&](const std::string& target, const std::string& name, const std::string& text) {
    if (text.empty()) return;
    fs::create_directories(out / target);
    Put(out / target / ("run_" + name), Capped(text));
  };
  const fs::path rules = run / trial_format::kRuleOutputDir;
  std::string first_findings;
  for (const fs::path& p : FilesUnder(rules, "status.json")) {
    seed("rule_status_fuzz", p.parent_path().filename().string(), Slurp(p));
  }
  for (const fs::path& p : FilesUnder(rules, "events.jsonl")) {
    const std::string text = Slurp(p);
    if (first_findings.empty()) first_findings = Capped(text);
    seed("rule_events_fuzz", p.parent_path().filename().string(), text);
  }
  seed("event_log_fuzz", "events_log", Slurp(rules / "events.log.jsonl"));
  seed("rule_events_fuzz", "events_log", Slurp(rules / "events.log.jsonl"));
  seed("stop_signal_fuzz", "stop_training", Slurp(rules / "stop_training.json"));
  seed("hook_config_fuzz", "hook_config", Slurp(run / ".trainscope" / "hook_config.json"));
  seed("profiler_config_fuzz", "profiler_config",
       Slurp(run / ".trainscope" / "profiler_config.json"));
  seed("collections_fuzz", "collections",
       Slurp(run / trial_format::CollectionsFilePath(trial_format::kDefaultWorker)));
  const auto system = FilesUnder(run / "system", ".json");
  const auto pevents = FilesUnder(run / "framework" / "pevents", ".json");
  const auto torch = FilesUnder(run / "framework" / "pytorch", ".json");
  int n = 0;
  for (const auto* files : {&system, &pevents, &torch}) {
    for (const fs::path& p : *files) {
      seed("file_names_fuzz", std::to_string(n++), p.filename().string());
    }
  }
  for (size_t i = 0; i < system.size() && i < 2; ++i) {
    seed("system_metrics_fuzz", std::to_string(i), Slurp(system[i]));
  }
  for (size_t i = 0; i < pevents.size() && i < 2; ++i) {
    seed("framework_timeline_fuzz", std::to_string(i), Slurp(pevents[i]));
  }
  for (size_t i = 0; i < torch.size() && i < 1; ++i) {
    seed("framework_timeline_fuzz", "torch" + std::to_string(i), Slurp(torch[i]));
  }
  // Each part cut to kMaxSeedBytes, not the whole.
  fs::create_directories(out / "timeline_merge_fuzz");
  Put(out / "timeline_merge_fuzz" / "run_all",
      Join({system.empty() ? "" : Capped(Slurp(system[0])),
            pevents.empty() ? "" : Capped(Slurp(pevents[0])),
            torch.empty() ? "" : Capped(Slurp(torch[0])), first_findings}));
}

int Fail(const Status& s) {
  fprintf(stderr, "%s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: make_corpus OUT_DIR [RUN_OUT]\n");
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path trial = fs::temp_directory_path() / ("ts_corpus_" + std::to_string(getpid()));
  fs::remove_all(trial);
  WriterOptions o;
  o.quiet = true;
  auto w = TrialWriter::Open(trial.string(), o);
  if (!w.ok()) return Fail(w.status());
  const DType types[] = {DType::kF16,  DType::kBF16,      DType::kF32,       DType::kF64,
                         DType::kI8,   DType::kI16,       DType::kI32,       DType::kI64,
                         DType::kU8,   DType::kU16,       DType::kU32,       DType::kU64,
                         DType::kBool, DType::kComplex64, DType::kComplex128};
  std::string bytes(64, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 29 + 3);
  for (int64_t step = 0; step < 2; ++step) {
    if (auto s = (*w)->BeginStep(step, step == 0 ? Mode::kTrain : Mode::kEval, step); !s.ok()) {
      return Fail(s);
    }
    for (DType t : types) {
      std::vector<int64_t> shape = step == 0 ? std::vector<int64_t>{2} : std::vector<int64_t>{};
      TensorView v{t, bytes.data(), shape, {}, {}};
      if (auto s = (*w)->AddTensor(std::string(DTypeName(t)), v); !s.ok()) return Fail(s);
    }
    const float mean = 0.5f;
    (void)(*w)->AddTensor("smdebug/reductions/abs_mean/float32",
                          TensorView::Scalar(DType::kF32, &mean));
    TensorView strings{DType::kString, nullptr, {2}, {}, {"ab", ""}};
    (void)(*w)->AddTensor("strings", strings);
    (void)(*w)->AddShape("float32", {2});
    if (auto s = (*w)->EndStep(); !s.ok()) return Fail(s);
  }
  (void)(*w)->WriteCollections(
      R"({"collections": {"all": {"name": "all", "include_regex": [".*"], "tensor_names": [],)"
      R"( "reduction_config": null, "save_config": null, "save_histogram": true}},)"
      R"( "_meta": {"num_workers": 1}})");
  if (auto s = (*w)->Close(); !s.ok()) return Fail(s);

  const fs::path rec = out / "record_fuzz";
  const fs::path idx = out / "index_fuzz";
  fs::create_directories(rec);
  fs::create_directories(idx);
  for (int64_t step = 0; step < 2; ++step) {
    const std::string s = std::to_string(step);
    const std::string ev = Slurp(trial / trial_format::EventFilePath(step, "worker_0"));
    Put(rec / ("ts_events_step" + s), ev);
    // The first record alone, and damaged copies of it.
    record_io::RecordIterator it(ev, "x");
    record_io::RecordRef r;
    if (it.Next(&r)) {
      const std::string one = ev.substr(0, r.length);
      Put(rec / ("ts_record_step" + s), one);
      Put(rec / ("ts_record_truncated_step" + s), one.substr(0, one.size() - 7));
      std::string flipped = one;
      flipped[flipped.size() / 2] ^= 0x10;
      Put(rec / ("ts_record_flipped_payload_step" + s), flipped);
      std::string header = one;
      header[2] ^= 0x01;
      Put(rec / ("ts_record_bad_length_step" + s), header);
      Put(rec / ("ts_payload_step" + s), std::string(r.payload));
    }
    const std::string ix = Slurp(trial / trial_format::IndexFilePath(step, "worker_0"));
    Put(idx / ("ts_index_step" + s), ix);
    Put(idx / ("ts_index_truncated_step" + s), ix.substr(0, ix.size() / 2));
    std::string bad = ix;
    if (auto p = bad.find("\"length\": "); p != std::string::npos) bad.insert(p + 10, "-");
    Put(idx / ("ts_index_negative_length_step" + s), bad);
  }
  const std::string collections = Slurp(trial / trial_format::CollectionsFilePath("worker_0"));
  Put(idx / "ts_collections", collections);
  fs::create_directories(out / "collections_fuzz");
  Put(out / "collections_fuzz" / "ts_collections", collections);

  // The whole trial, as trial_fuzz cuts its input: collections, then index and events of steps
  // 0 and 1; and the same with step 1's index cut short and its event file missing.
  std::vector<std::string> parts = {collections};
  for (int64_t step = 0; step < 2; ++step) {
    parts.push_back(Slurp(trial / trial_format::IndexFilePath(step, "worker_0")));
    parts.push_back(Slurp(trial / trial_format::EventFilePath(step, "worker_0")));
  }
  fs::create_directories(out / "trial_fuzz");
  Put(out / "trial_fuzz" / "ts_trial", Join(parts));
  parts[3] = parts[3].substr(0, parts[3].size() / 2);
  parts[4].clear();
  Put(out / "trial_fuzz" / "ts_trial_damaged", Join(parts));

  // A real incomplete marker: the writer on a disk that fills up after the first step.
  {
    const fs::path full = trial.string() + "_full";
    fs::remove_all(full);
    FaultInjectionEnv faulty(Env::Default());
    WriterOptions fo;
    fo.quiet = true;
    fo.env = &faulty;
    auto fw = TrialWriter::Open(full.string(), fo);
    if (!fw.ok()) return Fail(fw.status());
    for (int64_t step = 0; step < 3; ++step) {
      // Step 1 fails for want of space; the space is back for step 2 and Close(), which rewrites
      // the marker with its final counts.
      faulty.SetDiskSpaceLeft(step == 1 ? 0 : -1);
      (void)(*fw)->BeginStep(step, Mode::kTrain, step);
      const float x = 1.0f;
      (void)(*fw)->AddTensor("x", TensorView::Scalar(DType::kF32, &x));
      (void)(*fw)->EndStep();
    }
    (void)(*fw)->Close();
    fs::create_directories(out / "incomplete_marker_fuzz");
    Put(out / "incomplete_marker_fuzz" / "ts_marker_disk_full",
        Slurp(full / trial_format::IncompleteMarkerPath("worker_0")));
    // Its file names, and the trial's, for file_names_fuzz.
    fs::create_directories(out / "file_names_fuzz");
    int n = 0;
    for (const fs::path& dir : {trial, full}) {
      for (const fs::path& p : FilesUnder(dir, "")) {
        Put(out / "file_names_fuzz" / ("ts_name_" + std::to_string(n++)), p.filename().string());
      }
    }
    fs::remove_all(full);
  }
  if (argc == 3) SeedsFromRun(argv[2], out);
  fs::remove_all(trial);
  printf("wrote seed corpora under %s\n", out.c_str());
  return 0;
}

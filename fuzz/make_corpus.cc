// Writes the seed corpora of the fuzz targets: small real files from a trial written by
// TrialWriter (every dtype, reductions, shapes) plus corrupt variants of them.
//   build-fuzz/fuzz/make_corpus fuzz/corpus
// Inputs the fuzzers found interesting are added to the same folders by hand (libFuzzer
// -merge=1); files from smdebug's own fixtures (tests/data/smdebug) are copied in as well.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "store/record_io.h"
#include "trainscope/trial_format.h"
#include "trainscope/writer.h"

namespace fs = std::filesystem;
using namespace trainscope;  // NOLINT(build/namespaces): a tool

namespace {

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void Put(const fs::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

int Fail(const Status& s) {
  fprintf(stderr, "%s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_corpus OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path trial = fs::temp_directory_path() / ("ts_corpus_" + std::to_string(getpid()));
  fs::remove_all(trial);
  WriterOptions o;
  o.quiet = true;
  auto w = TrialWriter::Open(trial.string(), o);
  if (!w.ok()) return Fail(w.status());
  const DType types[] = {DType::kF16, DType::kBF16, DType::kF32, DType::kF64, DType::kI8,
                         DType::kI16, DType::kI32,  DType::kI64, DType::kU8,  DType::kU16,
                         DType::kU32, DType::kU64,  DType::kBool, DType::kComplex64,
                         DType::kComplex128};
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
    (void)(*w)->AddTensor("smdebug/reductions/abs_mean/float32", TensorView::Scalar(DType::kF32, &mean));
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
  Put(idx / "ts_collections", Slurp(trial / trial_format::CollectionsFilePath("worker_0")));
  fs::remove_all(trial);
  printf("wrote seed corpora under %s\n", out.c_str());
  return 0;
}

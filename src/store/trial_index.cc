#include "store/trial_index.h"

#include <algorithm>
#include <limits>

namespace trainscope {

namespace {

bool KeyLess(const Location& a, const Location& b) {
  return a.step != b.step ? a.step < b.step : a.worker < b.worker;
}

}  // namespace

uint16_t TrialIndex::InternWorker(std::string_view name) {
  auto it = worker_ids_.find(std::string(name));
  if (it != worker_ids_.end()) return it->second;
  const auto id = static_cast<uint16_t>(workers_.size());
  workers_.emplace_back(name);
  worker_ids_.emplace(std::string(name), id);
  return id;
}

std::optional<uint16_t> TrialIndex::FindWorker(std::string_view name) const {
  auto it = worker_ids_.find(std::string(name));
  if (it == worker_ids_.end()) return std::nullopt;
  return it->second;
}

uint32_t TrialIndex::AddFile(int64_t step, uint16_t worker, Mode mode, int64_t mode_step,
                             std::string event_file) {
  files_.push_back(FileRecord{step, mode_step, std::move(event_file), worker, mode});
  return static_cast<uint32_t>(files_.size() - 1);
}

void TrialIndex::SetClosures(int64_t step, uint16_t worker, std::vector<ClosureStep> closures) {
  closures_[{step, worker}] = std::move(closures);
}

namespace {

// The value at `step` of the first worker by name in a per-(step, worker) record; nullptr if none.
template <typename T>
const T* FirstWorkerAt(const std::map<std::pair<int64_t, uint16_t>, T>& records, int64_t step,
                       const std::vector<std::string>& workers) {
  const T* best = nullptr;
  const std::string* best_worker = nullptr;
  for (auto it = records.lower_bound({step, 0}); it != records.end() && it->first.first == step;
       ++it) {
    const std::string& w = workers[it->first.second];
    if (best == nullptr || w < *best_worker) {
      best = &it->second;
      best_worker = &w;
    }
  }
  return best;
}

template <typename T>
const T* WorkerAt(const std::map<std::pair<int64_t, uint16_t>, T>& records, int64_t step,
                  uint16_t worker) {
  auto it = records.find({step, worker});
  return it == records.end() ? nullptr : &it->second;
}

}  // namespace

const std::vector<ClosureStep>* TrialIndex::Closures(int64_t step) const {
  return FirstWorkerAt(closures_, step, workers_);
}

const std::vector<ClosureStep>* TrialIndex::Closures(int64_t step, uint16_t worker) const {
  return WorkerAt(closures_, step, worker);
}

void TrialIndex::SetModelCalls(int64_t step, uint16_t worker, int64_t calls) {
  model_calls_[{step, worker}] = calls;
}

int64_t TrialIndex::ModelCalls(int64_t step) const {
  const int64_t* calls = FirstWorkerAt(model_calls_, step, workers_);
  return calls == nullptr ? 0 : *calls;
}

int64_t TrialIndex::ModelCalls(int64_t step, uint16_t worker) const {
  const int64_t* calls = WorkerAt(model_calls_, step, worker);
  return calls == nullptr ? 0 : *calls;
}

uint32_t TrialIndex::InternTensor(std::string_view base_name) {
  auto it = tensor_ids_.find(base_name);
  if (it != tensor_ids_.end()) return it->second;
  const std::string& stored = names_.emplace_back(base_name);
  const auto id = static_cast<uint32_t>(tensors_.size());
  tensors_.push_back(TensorRecord{&stored, {}, true, 0});
  tensor_ids_.emplace(std::string_view(stored), id);
  sorted_ids_dirty_ = true;
  return id;
}

uint32_t TrialIndex::InternEntry(std::string_view entry_name) {
  auto it = entries_.find(entry_name);
  if (it != entries_.end()) return it->second;
  uint32_t tensor_id;
  uint8_t kind = LocationKind::kValue;
  if (auto parsed = ParseReductionTensorName(entry_name)) {
    tensor_id = InternTensor(parsed->tensor);
    kind = LocationKind::OfReduction(parsed->reduction);
  } else {
    tensor_id = InternTensor(entry_name);
  }
  // The base name may already be stored (a plain entry); store the entry name only if new.
  auto tit = tensor_ids_.find(entry_name);
  std::string_view key =
      (tit != tensor_ids_.end()) ? tit->first : std::string_view(names_.emplace_back(entry_name));
  const uint32_t packed = (tensor_id << 8) | kind;
  entries_.emplace(key, packed);
  return packed;
}

void TrialIndex::Append(uint32_t tensor_id, Location loc, Mode mode) {
  TensorRecord& t = tensors_[tensor_id];
  t.modes |= static_cast<uint8_t>(1u << static_cast<int>(mode));
  if (!t.locs.empty()) {
    const Location& last = t.locs.back();
    if (last.step == loc.step && last.worker == loc.worker) {
      // Same (step, worker) run: this file's earlier entries. Replace a repeated kind.
      for (auto it = t.locs.rbegin(); it != t.locs.rend(); ++it) {
        if (it->step != loc.step || it->worker != loc.worker) break;
        if (it->kind == loc.kind) {
          *it = loc;
          return;
        }
      }
    } else if (KeyLess(loc, last)) {
      t.sorted = false;
    }
  }
  t.locs.push_back(loc);
}

void TrialIndex::AddLocation(uint32_t file_id, std::string_view entry_name, uint64_t start,
                             uint64_t length, std::optional<uint32_t> crc32c) {
  const uint32_t packed = InternEntry(entry_name);
  const FileRecord& f = files_[file_id];
  Location loc{};
  loc.step = f.step;
  loc.offset = start;
  if (length > std::numeric_limits<uint32_t>::max()) {
    loc.flags |= Location::kBigLength;
    loc.length = static_cast<uint32_t>(big_lengths_.size());
    big_lengths_.push_back(length);
  } else {
    loc.length = static_cast<uint32_t>(length);
  }
  if (crc32c) {
    loc.flags |= Location::kHasCrc;
    loc.crc32c = *crc32c;
  }
  loc.file = file_id;
  loc.worker = f.worker;
  loc.kind = static_cast<uint8_t>(packed & 0xff);
  Append(packed >> 8, loc, f.mode);
}

void TrialIndex::AddShape(uint32_t file_id, std::string_view tensor_name,
                          std::span<const int64_t> dims) {
  // A shape entry names the base tensor; fold a reduction name anyway (never seen in practice).
  const uint32_t packed = InternEntry(tensor_name);
  const FileRecord& f = files_[file_id];
  Location loc{};
  loc.step = f.step;
  loc.offset = dims_.size();
  loc.length = static_cast<uint32_t>(dims.size());
  loc.file = file_id;
  loc.worker = f.worker;
  loc.kind = LocationKind::kShape;
  dims_.insert(dims_.end(), dims.begin(), dims.end());
  Append(packed >> 8, loc, f.mode);
}

std::optional<uint32_t> TrialIndex::FindTensor(std::string_view name) const {
  auto it = tensor_ids_.find(name);
  if (it == tensor_ids_.end()) return std::nullopt;
  return it->second;
}

const std::vector<uint32_t>& TrialIndex::SortedTensorIds() {
  if (sorted_ids_dirty_) {
    sorted_ids_.resize(tensors_.size());
    for (uint32_t i = 0; i < sorted_ids_.size(); ++i) sorted_ids_[i] = i;
    std::sort(sorted_ids_.begin(), sorted_ids_.end(),
              [this](uint32_t a, uint32_t b) { return *tensors_[a].name < *tensors_[b].name; });
    sorted_ids_dirty_ = false;
  }
  return sorted_ids_;
}

void TrialIndex::EnsureSorted(TensorRecord& t) {
  if (t.sorted) return;
  std::stable_sort(t.locs.begin(), t.locs.end(), KeyLess);
  t.sorted = true;
}

std::span<const Location> TrialIndex::At(uint32_t id, int64_t global_step) {
  TensorRecord& t = tensors_[id];
  EnsureSorted(t);
  auto lo = std::lower_bound(t.locs.begin(), t.locs.end(), global_step,
                             [](const Location& l, int64_t s) { return l.step < s; });
  auto hi = lo;
  while (hi != t.locs.end() && hi->step == global_step) ++hi;
  return {t.locs.data() + (lo - t.locs.begin()), static_cast<size_t>(hi - lo)};
}

std::vector<int64_t> TrialIndex::StepsOf(uint32_t id) {
  TensorRecord& t = tensors_[id];
  EnsureSorted(t);
  std::vector<int64_t> out;
  for (const Location& l : t.locs) {
    if (out.empty() || out.back() != l.step) out.push_back(l.step);
  }
  return out;
}

size_t TrialIndex::MemoryUsage() const {
  size_t bytes = 0;
  for (const std::string& s : names_) bytes += sizeof(std::string) + s.capacity();
  // Hash nodes: key, value and a next pointer, plus the bucket array.
  bytes += (entries_.size() + tensor_ids_.size()) * (sizeof(std::string_view) + 16) +
           (entries_.bucket_count() + tensor_ids_.bucket_count()) * sizeof(void*);
  for (const TensorRecord& t : tensors_) bytes += sizeof(t) + t.locs.capacity() * sizeof(Location);
  bytes += sorted_ids_.capacity() * sizeof(uint32_t);
  for (const FileRecord& f : files_) bytes += sizeof(f) + f.event_file.capacity();
  bytes += (files_.capacity() - files_.size()) * sizeof(FileRecord);
  bytes += dims_.capacity() * sizeof(int64_t) + big_lengths_.capacity() * sizeof(uint64_t);
  bytes += model_calls_.size() * (sizeof(std::pair<int64_t, uint16_t>) + sizeof(int64_t) + 48);
  for (const auto& [key, steps] : closures_) {
    bytes += sizeof(key) + 48;  // map node
    for (const ClosureStep& c : steps) {
      bytes += sizeof(c) + c.optimizer.capacity();
      for (const auto& e : c.evaluations) {
        bytes += sizeof(std::vector<std::string>);
        for (const std::string& n : e) bytes += sizeof(std::string) + n.capacity();
      }
    }
  }
  return bytes;
}

}  // namespace trainscope

// TrialIndex: the in-memory index of a trial's tensors, built from its index files.
//
// Layout, chosen to stay small at 10,000 steps x 50 tensors (500k locations):
// - tensor names, entry names ("smdebug/reductions/mean/x") and worker names are interned once;
// - every index file read is one FileRecord (step, worker, mode, event file path), so no
//   location repeats a path;
// - each base tensor holds one vector of 32-byte Locations sorted by (step, worker); a
//   location is the raw value, the saved shape, or one saved reduction (its `kind`). Reduction
//   tensors are folded onto their base tensor. Value and shape are separate kinds, so a saved
//   shape never hides a saved value (smdebug's save_shape bug, fixed).
//
// Entries arrive mostly in step order; an out-of-order file (a lagging worker) marks the
// tensor unsorted and the next lookup sorts it (stable, so one file's entries stay together).
// A repeated entry (same tensor, step, worker and kind) replaces the earlier one.
//
// Thread safety: not thread-safe; the Trial guards it with its mutex. Lookups may sort lazily,
// so even const-looking queries mutate (they are non-const here on purpose).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainscope/modes.h"
#include "trainscope/reductions.h"
#include "trainscope/trial.h"

namespace trainscope {

// What a location holds.
struct LocationKind {
  static constexpr uint8_t kValue = 0;
  static constexpr uint8_t kShape = 1;
  static constexpr uint8_t kFirstReduction = 2;
  static uint8_t OfReduction(Reduction r) {
    return static_cast<uint8_t>(kFirstReduction + 2 * static_cast<int>(r.op) + (r.abs ? 1 : 0));
  }
  static bool IsReduction(uint8_t kind) { return kind >= kFirstReduction; }
  // REQUIRES: IsReduction(kind).
  static Reduction ToReduction(uint8_t kind) {
    int k = kind - kFirstReduction;
    return Reduction{static_cast<ReductionOp>(k / 2), (k % 2) != 0};
  }
};

struct Location {
  int64_t step;     // global step
  uint64_t offset;  // of the framed record in the event file; kShape: first dim in the dims pool
  uint32_t length;  // framed record bytes (kBigLength: index into the big-length table);
                    // kShape: number of dims
  uint32_t crc32c;  // payload CRC32C when flags & kHasCrc
  uint32_t file;    // FileRecord id
  uint16_t worker;  // worker id
  uint8_t kind;     // LocationKind
  uint8_t flags;
  static constexpr uint8_t kHasCrc = 1;
  static constexpr uint8_t kBigLength = 2;
};
static_assert(sizeof(Location) == 32, "keep Location small: the index holds one per entry");

// One index file that was read.
struct FileRecord {
  int64_t step;
  int64_t mode_step;
  std::string event_file;  // as written in meta.event_file_name (relative to the trial root)
  uint16_t worker;
  Mode mode;
};

class TrialIndex {
 public:
  TrialIndex() = default;
  TrialIndex(const TrialIndex&) = delete;
  TrialIndex& operator=(const TrialIndex&) = delete;

  // Interns a worker name (index files may name workers the collections files do not).
  uint16_t InternWorker(std::string_view name);
  const std::string& worker_name(uint16_t id) const { return workers_[id]; }
  std::optional<uint16_t> FindWorker(std::string_view name) const;

  // Registers an index file; returns its id for AddLocation/AddShape.
  uint32_t AddFile(int64_t step, uint16_t worker, Mode mode, int64_t mode_step,
                   std::string event_file);
  const FileRecord& file(uint32_t id) const { return files_[id]; }
  size_t num_files() const { return files_.size(); }

  // A tensor_payload entry of file `file_id`.
  void AddLocation(uint32_t file_id, std::string_view entry_name, uint64_t start, uint64_t length,
                   std::optional<uint32_t> crc32c);
  // A shape_payload entry of file `file_id`.
  void AddShape(uint32_t file_id, std::string_view tensor_name, std::span<const int64_t> dims);

  // The closure record (index meta.closure_evaluations) of `worker` at `step`; a later file for
  // the same step and worker replaces it.
  void SetClosures(int64_t step, uint16_t worker, std::vector<ClosureStep> closures);
  // The record at `step` of the first worker by name that has one; nullptr if none.
  const std::vector<ClosureStep>* Closures(int64_t step) const;
  // The record of `worker` at `step`; nullptr if none.
  const std::vector<ClosureStep>* Closures(int64_t step, uint16_t worker) const;
  // The calls of the model (index meta.model_calls, 2 or more) of `worker` at `step`; a later
  // file for the same step and worker replaces it.
  void SetModelCalls(int64_t step, uint16_t worker, int64_t calls);
  // Those of the first worker by name that has them at `step`; 0 if none.
  int64_t ModelCalls(int64_t step) const;
  // Those of `worker` at `step`; 0 if none.
  int64_t ModelCalls(int64_t step, uint16_t worker) const;

  // Base tensors (reductions folded), by id.
  std::optional<uint32_t> FindTensor(std::string_view name) const;
  size_t num_tensors() const { return tensors_.size(); }
  const std::string& tensor_name(uint32_t id) const { return *tensors_[id].name; }
  // Bit (1 << int(mode)) set for each mode the tensor was saved in.
  uint8_t tensor_modes(uint32_t id) const { return tensors_[id].modes; }
  // Tensor ids sorted by name.
  const std::vector<uint32_t>& SortedTensorIds();

  // Locations of tensor `id` at a global step, all workers, grouped by worker in sort order.
  std::span<const Location> At(uint32_t id, int64_t global_step);
  // Distinct global steps at which tensor `id` has any location, sorted.
  std::vector<int64_t> StepsOf(uint32_t id);
  // Whether tensor `id` has any location at `global_step`.
  bool HasStep(uint32_t id, int64_t global_step) { return !At(id, global_step).empty(); }

  uint64_t RecordLength(const Location& loc) const {
    return (loc.flags & Location::kBigLength) ? big_lengths_[loc.length] : loc.length;
  }
  // REQUIRES: loc.kind == kShape.
  std::span<const int64_t> ShapeDims(const Location& loc) const {
    return {dims_.data() + loc.offset, loc.length};
  }

  // Bytes held by the index (vector capacities and strings), for the benchmark.
  size_t MemoryUsage() const;

 private:
  struct TensorRecord {
    const std::string* name;     // into names_
    std::vector<Location> locs;  // sorted by (step, worker) unless !sorted
    bool sorted = true;
    uint8_t modes = 0;
  };
  // Interned entry name -> (tensor id << 8) | kind.
  uint32_t InternEntry(std::string_view entry_name);
  uint32_t InternTensor(std::string_view base_name);
  void Append(uint32_t tensor_id, Location loc, Mode mode);
  void EnsureSorted(TensorRecord& t);

  std::deque<std::string> names_;  // stable storage for every interned string
  std::unordered_map<std::string_view, uint32_t> entries_;  // entry name -> packed
  std::unordered_map<std::string_view, uint32_t> tensor_ids_;
  std::vector<TensorRecord> tensors_;
  std::vector<uint32_t> sorted_ids_;
  bool sorted_ids_dirty_ = false;
  std::vector<std::string> workers_;
  std::unordered_map<std::string, uint16_t> worker_ids_;
  std::vector<FileRecord> files_;
  // Only the steps that have a closure record (few: LBFGS trainings run tens of steps).
  std::map<std::pair<int64_t, uint16_t>, std::vector<ClosureStep>> closures_;
  // Only the steps that record model calls (a rollout's: reinforcement learning).
  std::map<std::pair<int64_t, uint16_t>, int64_t> model_calls_;
  std::vector<int64_t> dims_;
  std::vector<uint64_t> big_lengths_;
};

}  // namespace trainscope

// A fast, allocation-light parser for the index files the trial reader loads by the thousand.
//
// index_file.h's ParseIndexFile is the authority on the format (it builds a JSON DOM, which is
// too slow for 10,000 files of 50+ entries: most of a trial's open time). FastParseIndexFile
// reads the same format in one pass and returns views into the text. It accepts only a strict
// subset (plain ASCII strings without escapes, integers without fractions or exponents, no
// duplicate keys, every check of ParseIndexFile passed) and returns nullopt for anything else,
// so the caller falls back to ParseIndexFile for the answer or the error. On every input both
// accept, both give the same result (fuzz/index_fuzz.cc checks this).
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "store/index_file.h"
#include "trainscope/modes.h"

namespace trainscope {

struct IndexTensorEntryView {
  std::string_view tensorname;
  uint64_t start_idx = 0;
  uint64_t length = 0;
  std::optional<uint32_t> crc32c;
};

struct IndexShapeEntryView {
  std::string_view tensorname;
  std::string_view originalname;
  uint32_t first_dim = 0;  // into IndexFileView::dims
  uint32_t num_dims = 0;
};

// An index file whose strings point into the parsed text (or into an IndexFile).
struct IndexFileView {
  Mode mode = Mode::kGlobal;
  int64_t mode_step = 0;
  std::string_view event_file_name;
  std::vector<IndexTensorEntryView> tensors;
  std::vector<IndexShapeEntryView> shapes;
  std::vector<int64_t> dims;  // every shape's dims, back to back
  // meta.closure_evaluations: only from ViewOf (the fast parser declines files that have it);
  // nullptr = absent.
  const std::vector<ClosureStep>* closures = nullptr;
  int64_t model_calls = 0;  // meta.model_calls; 0 = absent

  void Clear() {
    tensors.clear();
    shapes.clear();
    dims.clear();
    closures = nullptr;
    model_calls = 0;
  }
};

// Parses `text` into *out (cleared first; its vectors' capacity is reused). Returns false when
// the text is outside the fast subset (then *out is unspecified; use ParseIndexFile).
bool FastParseIndexFile(std::string_view text, IndexFileView* out);

// Views of an IndexFile parsed by ParseIndexFile (which must outlive *out).
void ViewOf(const IndexFile& file, IndexFileView* out);

}  // namespace trainscope

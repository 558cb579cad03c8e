// libFuzzer target: index files and collections files over arbitrary bytes.
// - ParseIndexFile never crashes; every failure is a Status.
// - The reader's FastParseIndexFile never crashes, and wherever it accepts a file,
//   ParseIndexFile accepts it too with the same result (abort otherwise: a differential test).
// - ParseCollectionsFile never crashes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "store/collections_reader.h"
#include "store/index_fast_parser.h"
#include "store/index_file.h"

namespace {

using namespace trainscope;  // NOLINT(build/namespaces): a fuzz driver

void Check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "fast and full index parsers disagree: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto full = ParseIndexFile(text, "fuzz.json");
  IndexFileView fast;
  if (FastParseIndexFile(text, &fast)) {
    Check(full.ok(), "fast accepted what full rejected");
    Check(fast.mode == full->mode, "mode");
    Check(fast.mode_step == full->mode_step, "mode_step");
    Check(fast.event_file_name == full->event_file_name, "event_file_name");
    Check(fast.tensors.size() == full->tensors.size(), "tensor count");
    for (size_t i = 0; i < fast.tensors.size(); ++i) {
      Check(fast.tensors[i].tensorname == full->tensors[i].tensorname, "tensorname");
      Check(fast.tensors[i].start_idx == full->tensors[i].start_idx, "start_idx");
      Check(fast.tensors[i].length == full->tensors[i].length, "length");
      Check(fast.tensors[i].crc32c == full->tensors[i].crc32c, "crc32c");
    }
    Check(fast.shapes.size() == full->shapes.size(), "shape count");
    for (size_t i = 0; i < fast.shapes.size(); ++i) {
      const auto& f = fast.shapes[i];
      const auto& g = full->shapes[i];
      Check(f.tensorname == g.tensorname && f.originalname == g.originalname, "shape names");
      Check(f.num_dims == g.shape.size(), "dims");
      for (size_t k = 0; k < f.num_dims; ++k)
        Check(fast.dims[f.first_dim + k] == g.shape[k], "dim");
    }
  }
  if (full.ok()) {
    IndexFileView view;
    ViewOf(*full, &view);
  }
  (void)ParseCollectionsFile(text, "fuzz_collections.json");
  return 0;
}

// ReadIncompleteMarkers and Trial::Incomplete: the incomplete_<worker>.json markers of a trial
// (docs/formats/trial.md, "Incomplete marker"), read bounded.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "store/trial_impl.h"
#include "trainscope/trial.h"
#include "trainscope/trial_format.h"

namespace trainscope {

namespace {

constexpr size_t kMaxMarkerBytes = 64 << 10;

// Fills m's content fields from the file at m->path: regular files only (opened O_NOFOLLOW |
// O_NONBLOCK, so neither a symlink nor a FIFO is followed or waited on), at most
// kMaxMarkerBytes.
void ReadMarker(IncompleteMarker* m) {
  const int fd = ::open(m->path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    m->problem = errno == ELOOP ? std::string("a symbolic link (refused, not read)")
                                : std::string("cannot open: ") + std::strerror(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    m->problem = "not a regular file (refused, not read)";
    return;
  }
  std::string text(kMaxMarkerBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  if (text.empty()) {
    m->problem = "empty (the disk had no room for its content)";
    return;
  }
  if (text.size() > kMaxMarkerBytes) {
    m->problem = "larger than " + std::to_string(kMaxMarkerBytes) + " bytes (not read)";
    return;
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    m->problem = "not a JSON object";
    return;
  }
  auto int_of = [&](const char* key) -> int64_t {
    auto it = j.find(key);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
  };
  m->readable = true;
  auto fin = j.find("final");
  m->final = fin != j.end() && fin->is_boolean() && fin->get<bool>();
  m->steps_written = int_of("steps_written");
  m->steps_failed = int_of("steps_failed");
  m->steps_dropped = int_of("steps_dropped");
  m->first_lost_step = int_of("first_lost_step");
  auto err = j.find("first_error");
  if (err != j.end() && err->is_string()) m->first_error = err->get<std::string>();
}

}  // namespace

Result<std::vector<IncompleteMarker>> ReadIncompleteMarkers(const std::string& trial_dir) {
  DIR* d = ::opendir(trial_dir.c_str());
  if (d == nullptr) return Status::FromErrno("list", trial_dir, errno);
  std::vector<IncompleteMarker> out;
  const std::string_view prefix = trial_format::kIncompletePrefix;
  const std::string_view suffix = trial_format::kIncompleteSuffix;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.size() <= prefix.size() + suffix.size() || name.substr(0, prefix.size()) != prefix ||
        name.substr(name.size() - suffix.size()) != suffix) {
      continue;
    }
    IncompleteMarker m;
    m.worker = std::string(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
    m.path =
        trial_dir + (trial_dir.empty() || trial_dir.back() == '/' ? "" : "/") + std::string(name);
    out.push_back(std::move(m));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const IncompleteMarker& a, const IncompleteMarker& b) {
    return a.worker < b.worker;
  });
  for (IncompleteMarker& m : out) ReadMarker(&m);
  return out;
}

Result<std::vector<IncompleteMarker>> Trial::Incomplete() const {
  return ReadIncompleteMarkers(impl_->path_);
}

std::vector<std::string> Trial::DamagedIndexFiles() const { return impl_->Damaged(); }

}  // namespace trainscope

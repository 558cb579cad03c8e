#include "profiler/proc_stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <deque>
#include <unordered_set>

namespace trainscope::proc {
namespace {

// Splits off the next whitespace-separated token of *s.
std::string_view NextToken(std::string_view* s) {
  size_t i = 0;
  while (i < s->size() && ((*s)[i] == ' ' || (*s)[i] == '\t')) ++i;
  size_t j = i;
  while (j < s->size() && (*s)[j] != ' ' && (*s)[j] != '\t' && (*s)[j] != '\n') ++j;
  std::string_view tok = s->substr(i, j - i);
  s->remove_prefix(j);
  return tok;
}

template <typename T>
bool ToNumber(std::string_view tok, T* out) {
  if (tok.empty()) return false;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), *out);
  return ec == std::errc() && p == tok.data() + tok.size();
}

// Calls fn(line) for each line of text (without the '\n').
template <typename Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    fn(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

bool ParseProcStat(std::string_view text, CpuStat* out) {
  out->total = CpuTimes();
  out->cores.clear();
  bool found_total = false;
  ForEachLine(text, [&](std::string_view line) {
    if (!StartsWith(line, "cpu")) return;
    std::string_view rest = line;
    std::string_view label = NextToken(&rest);
    CpuTimes t;
    uint64_t* fields[] = {&t.user,   &t.nice, &t.system,  &t.idle,
                          &t.iowait, &t.irq,  &t.softirq, &t.steal};
    for (uint64_t* f : fields) {
      std::string_view tok = NextToken(&rest);
      if (tok.empty()) break;  // older kernels print fewer fields
      if (!ToNumber(tok, f)) return;
    }
    if (label == "cpu") {
      out->total = t;
      found_total = true;
      return;
    }
    size_t core = 0;
    if (!ToNumber(label.substr(3), &core) || core > 65535) return;
    if (out->cores.size() <= core) out->cores.resize(core + 1);
    out->cores[core] = t;
  });
  return found_total;
}

bool ParseMemInfo(std::string_view text, MemInfo* out) {
  uint64_t total = 0, avail = 0, free = 0, buffers = 0, cached = 0;
  bool has_total = false, has_avail = false;
  ForEachLine(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = line.substr(0, colon);
    std::string_view rest = line.substr(colon + 1);
    uint64_t kb = 0;
    if (!ToNumber(NextToken(&rest), &kb)) return;
    if (key == "MemTotal") {
      total = kb;
      has_total = true;
    } else if (key == "MemAvailable") {
      avail = kb;
      has_avail = true;
    } else if (key == "MemFree") {
      free = kb;
    } else if (key == "Buffers") {
      buffers = kb;
    } else if (key == "Cached") {
      cached = kb;
    }
  });
  if (!has_total) return false;
  out->total_bytes = total * 1024;
  out->available_bytes = (has_avail ? avail : free + buffers + cached) * 1024;
  if (out->available_bytes > out->total_bytes) out->available_bytes = out->total_bytes;
  return true;
}

bool ParseDiskStats(std::string_view text, DiskTotals* out) {
  struct Dev {
    std::string_view name;
    uint64_t sectors_read, sectors_written;
  };
  std::vector<Dev> devs;
  ForEachLine(text, [&](std::string_view line) {
    std::string_view rest = line;
    NextToken(&rest);  // major
    NextToken(&rest);  // minor
    std::string_view name = NextToken(&rest);
    uint64_t f[7];  // fields 4..10
    for (uint64_t& v : f) {
      if (!ToNumber(NextToken(&rest), &v)) return;
    }
    devs.push_back({name, f[2], f[6]});  // field 6 = sectors read, field 10 = sectors written
  });
  if (devs.empty()) return false;
  std::unordered_set<std::string_view> names;
  for (const Dev& d : devs) names.insert(d.name);
  static constexpr std::string_view kSkipped[] = {"loop", "ram", "zram", "dm-",
                                                  "md",   "sr",  "fd",   "nbd"};
  *out = DiskTotals();
  for (const Dev& d : devs) {
    bool skip = false;
    for (std::string_view p : kSkipped) skip = skip || StartsWith(d.name, p);
    if (skip) continue;
    // A partition: strip trailing digits (and then an optional 'p'); is the rest a device?
    std::string_view base = d.name;
    while (!base.empty() && base.back() >= '0' && base.back() <= '9') base.remove_suffix(1);
    if (base.size() < d.name.size()) {
      if (names.count(base)) continue;
      if (!base.empty() && base.back() == 'p' && names.count(base.substr(0, base.size() - 1))) {
        continue;
      }
    }
    out->read_bytes += d.sectors_read * 512;
    out->write_bytes += d.sectors_written * 512;
  }
  return true;
}

bool ParseNetDev(std::string_view text, NetTotals* out) {
  *out = NetTotals();
  bool any = false;
  ForEachLine(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;  // the two header lines
    std::string_view name = line.substr(0, colon);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    std::string_view rest = line.substr(colon + 1);
    uint64_t v[9];  // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes
    for (uint64_t& x : v) {
      if (!ToNumber(NextToken(&rest), &x)) return;
    }
    any = true;
    if (name == "lo") return;
    out->rx_bytes += v[0];
    out->tx_bytes += v[8];
  });
  return any;
}

std::optional<uint64_t> ParseSchedstatRunDelay(std::string_view text) {
  const size_t sp = text.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(sp + 1);
  const size_t end = rest.find_first_of(" \n");
  uint64_t v = 0;
  if (!ToNumber(rest.substr(0, end), &v)) return std::nullopt;
  return v;
}

bool ParsePidStat(std::string_view text, PidStat* out) {
  std::string_view rest = text;
  if (!ToNumber(NextToken(&rest), &out->pid)) return false;
  size_t close = text.rfind(')');
  if (close == std::string_view::npos) return false;
  rest = text.substr(close + 1);
  // After ')': state(3) ppid(4) pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  // utime(14) stime(15) cutime cstime priority nice num_threads itrealvalue starttime vsize
  // rss(24).
  std::string_view tok;
  uint64_t utime = 0, stime = 0;
  for (int field = 3; field <= 24; ++field) {
    tok = NextToken(&rest);
    if (tok.empty()) return false;
    if (field == 4 && !ToNumber(tok, &out->ppid)) return false;
    if (field == 14 && !ToNumber(tok, &utime)) return false;
    if (field == 15 && !ToNumber(tok, &stime)) return false;
    if (field == 24 && !ToNumber(tok, &out->rss_pages)) return false;
  }
  out->cpu_ticks = utime + stime;
  return true;
}

std::optional<uint64_t> ParseCgroupMemoryMax(std::string_view text) {
  std::string_view rest = text;
  uint64_t v = 0;
  if (ToNumber(NextToken(&rest), &v)) return v;
  return std::nullopt;
}

std::optional<double> ParseCgroupCpuMax(std::string_view text) {
  std::string_view rest = text;
  uint64_t quota = 0, period = 0;
  if (!ToNumber(NextToken(&rest), &quota)) return std::nullopt;  // "max"
  if (!ToNumber(NextToken(&rest), &period) || period == 0) return std::nullopt;
  return static_cast<double>(quota) / static_cast<double>(period);
}

std::optional<uint64_t> ParseCgroupCpuUsageUsec(std::string_view text) {
  std::optional<uint64_t> out;
  ForEachLine(text, [&](std::string_view line) {
    std::string_view rest = line;
    if (NextToken(&rest) != "usage_usec") return;
    uint64_t v = 0;
    if (ToNumber(NextToken(&rest), &v)) out = v;
  });
  return out;
}

std::optional<std::string> ParseCgroupV2Path(std::string_view text) {
  std::optional<std::string> out;
  ForEachLine(text, [&](std::string_view line) {
    if (StartsWith(line, "0::")) out = std::string(line.substr(3));
  });
  return out;
}

// ---------------------------------------------------------------------------------------------

ProcReader::ProcReader(std::string proc_root, std::string cgroup_root, int root_pid,
                       int64_t rescan_interval_us)
    : proc_root_(std::move(proc_root)),
      cgroup_root_(std::move(cgroup_root)),
      root_pid_(root_pid),
      rescan_interval_us_(rescan_interval_us) {
  ticks_per_s_ = ::sysconf(_SC_CLK_TCK);
  if (ticks_per_s_ <= 0) ticks_per_s_ = 100;
  page_size_ = ::sysconf(_SC_PAGESIZE);
  if (page_size_ <= 0) page_size_ = 4096;
  stat_path_ = proc_root_ + "/stat";
  meminfo_path_ = proc_root_ + "/meminfo";
  diskstats_path_ = proc_root_ + "/diskstats";
  netdev_path_ = proc_root_ + "/net/dev";
  buf_.resize(1 << 16);
}

ProcReader::~ProcReader() {
  for (KeptFile* f : {&stat_, &meminfo_, &diskstats_, &netdev_, &cg_mem_max_, &cg_mem_cur_,
                      &cg_cpu_max_, &cg_cpu_stat_}) {
    if (f->fd >= 0) ::close(f->fd);
  }
  for (auto& [pid, fd] : member_fds_) ::close(fd);
}

namespace {

// Reads all of fd from offset 0 into *buf (grown as needed); returns the length or -1.
ssize_t PreadAll(int fd, std::string* buf) {
  size_t off = 0;
  for (;;) {
    if (off == buf->size()) buf->resize(buf->size() * 2);
    ssize_t n = ::pread(fd, buf->data() + off, buf->size() - off, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) return static_cast<ssize_t>(off);
    off += static_cast<size_t>(n);
  }
}

}  // namespace

bool ProcReader::ReadKept(KeptFile* f, const std::string& path) {
  if (f->absent || path.empty()) return false;
  if (f->fd < 0) {
    f->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
      f->absent = true;
      return false;
    }
  }
  ssize_t n = PreadAll(f->fd, &buf_);
  if (n < 0) return false;
  buf_len_ = static_cast<size_t>(n);
  return true;
}

bool ProcReader::ReadPidStat(int pid, PidStat* out) {
  auto it = member_fds_.find(pid);
  int fd;
  if (it == member_fds_.end()) {
    std::string path = proc_root_ + "/" + std::to_string(pid) + "/stat";
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    member_fds_.emplace(pid, fd);
  } else {
    fd = it->second;
  }
  ssize_t n = PreadAll(fd, &buf_);
  if (n <= 0 || !ParsePidStat(std::string_view(buf_.data(), static_cast<size_t>(n)), out)) {
    ::close(fd);  // the process is gone (ESRCH) or its file unreadable
    member_fds_.erase(pid);
    return false;
  }
  return true;
}

void ProcReader::ScanProcessTree() {
  DIR* dir = ::opendir(proc_root_.c_str());
  if (dir == nullptr) return;
  // Only processes not seen by the previous scan have their stat read (the parent of a process
  // does not change, except by reparenting, which only moves processes out of a tree): a scan of a
  // machine with hundreds of processes costs one getdents pass plus the newcomers.
  std::unordered_map<int, int> listed;  // pid -> ppid
  listed.reserve(known_ppid_.size() + 16);
  std::string path;
  while (struct dirent* e = ::readdir(dir)) {
    int pid = 0;
    std::string_view name(e->d_name);
    if (!ToNumber(name, &pid) || pid <= 0) continue;
    if (auto it = known_ppid_.find(pid); it != known_ppid_.end()) {
      listed.emplace(pid, it->second);
      continue;
    }
    path.assign(proc_root_).append("/").append(name).append("/stat");
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = PreadAll(fd, &scan_buf_);
    ::close(fd);
    PidStat st;
    if (n > 0 && ParsePidStat(std::string_view(scan_buf_.data(), static_cast<size_t>(n)), &st)) {
      listed.emplace(pid, st.ppid);
    }
  }
  ::closedir(dir);
  known_ppid_.swap(listed);

  std::unordered_map<int, std::vector<int>> children;
  children.reserve(known_ppid_.size());
  for (const auto& [pid, ppid] : known_ppid_) children[ppid].push_back(pid);
  // Breadth-first from the root; members found before stay members while they live (a worker
  // whose parent exits is reparented away from the tree but still belongs to the training).
  std::unordered_set<int> members;
  std::deque<int> queue = {root_pid_};
  for (const auto& [pid, fd] : member_fds_) {
    if (known_ppid_.count(pid)) queue.push_back(pid);
  }
  while (!queue.empty()) {
    int p = queue.front();
    queue.pop_front();
    if (!known_ppid_.count(p) || !members.insert(p).second) continue;
    auto it = children.find(p);
    if (it == children.end()) continue;
    for (int c : it->second) queue.push_back(c);
  }
  // Close the kept files of processes that left; open those of newcomers.
  for (auto it = member_fds_.begin(); it != member_fds_.end();) {
    if (!members.count(it->first)) {
      ::close(it->second);
      it = member_fds_.erase(it);
    } else {
      ++it;
    }
  }
  for (int p : members) {
    if (member_fds_.count(p)) continue;
    path.assign(proc_root_).append("/").append(std::to_string(p)).append("/stat");
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) member_fds_.emplace(p, fd);
  }
}

void ProcReader::ReadProcessTree(uint64_t now_us, RawSnapshot* out) {
  if (root_pid_ <= 0) return;
  if (!scanned_ || now_us < last_scan_us_ ||
      now_us - last_scan_us_ >= static_cast<uint64_t>(rescan_interval_us_)) {
    ScanProcessTree();
    scanned_ = true;
    last_scan_us_ = now_us;
  }
  std::vector<int> pids;
  pids.reserve(member_fds_.size());
  for (auto& [pid, fd] : member_fds_) pids.push_back(pid);
  int count = 0;
  for (int pid : pids) {
    PidStat st;
    if (!ReadPidStat(pid, &st)) continue;
    ++count;
    out->process_cpu_ticks += st.cpu_ticks;
    out->process_rss_pages += st.rss_pages;
    out->member_ticks[pid] = st.cpu_ticks;
    if (!schedstat_absent_) {
      // Opened and read each time: a few members, every sampling interval.
      const std::string path = proc_root_ + "/" + std::to_string(pid) + "/schedstat";
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        if (errno == ENOENT && pid == root_pid_) schedstat_absent_ = true;  // no schedstat here
        continue;
      }
      const ssize_t n = PreadAll(fd, &scan_buf_);
      ::close(fd);
      if (n <= 0) continue;
      if (auto w =
              ParseSchedstatRunDelay(std::string_view(scan_buf_.data(), static_cast<size_t>(n)))) {
        out->member_wait_ns[pid] = *w;
      }
    }
  }
  out->process_count = count;
}

void ProcReader::ResolveCgroupDir() {
  cgroup_resolved_ = true;
  std::string self = proc_root_ + "/self/cgroup";
  int fd = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  std::optional<std::string> rel;
  if (fd >= 0) {
    ssize_t n = PreadAll(fd, &buf_);
    ::close(fd);
    if (n > 0) rel = ParseCgroupV2Path(std::string_view(buf_.data(), static_cast<size_t>(n)));
  }
  std::vector<std::string> candidates;
  if (rel && *rel != "/") candidates.push_back(cgroup_root_ + *rel);
  candidates.push_back(cgroup_root_);
  // v2 only: memory.current, or cgroup.controllers beside cpu.stat (v1 has neither).
  for (const std::string& dir : candidates) {
    bool v2 = ::access((dir + "/memory.current").c_str(), R_OK) == 0 ||
              (::access((dir + "/cgroup.controllers").c_str(), F_OK) == 0 &&
               ::access((dir + "/cpu.stat").c_str(), R_OK) == 0);
    if (v2) {
      cgroup_dir_ = dir;
      break;
    }
  }
  if (cgroup_dir_.empty()) return;
  cg_mem_max_path_ = cgroup_dir_ + "/memory.max";
  cg_mem_cur_path_ = cgroup_dir_ + "/memory.current";
  cg_cpu_max_path_ = cgroup_dir_ + "/cpu.max";
  cg_cpu_stat_path_ = cgroup_dir_ + "/cpu.stat";
}

void ProcReader::Read(uint64_t now_us, RawSnapshot* out) {
  *out = RawSnapshot();
  out->timestamp_us = now_us;
  auto view = [this] { return std::string_view(buf_.data(), buf_len_); };
  if (ReadKept(&stat_, stat_path_)) {
    CpuStat cpu;
    if (ParseProcStat(view(), &cpu)) out->cpu = std::move(cpu);
  }
  if (ReadKept(&meminfo_, meminfo_path_)) {
    MemInfo mem;
    if (ParseMemInfo(view(), &mem)) out->mem = mem;
  }
  if (ReadKept(&diskstats_, diskstats_path_)) {
    DiskTotals disk;
    if (ParseDiskStats(view(), &disk)) out->disk = disk;
  }
  if (ReadKept(&netdev_, netdev_path_)) {
    NetTotals net;
    if (ParseNetDev(view(), &net)) out->net = net;
  }
  ReadProcessTree(now_us, out);
  if (!cgroup_resolved_) ResolveCgroupDir();
  if (!cgroup_dir_.empty()) {
    if (ReadKept(&cg_mem_max_, cg_mem_max_path_)) {
      out->cgroup_memory_max_present = true;
      out->cgroup_memory_max = ParseCgroupMemoryMax(view());
    }
    if (ReadKept(&cg_mem_cur_, cg_mem_cur_path_)) {
      out->cgroup_memory_current = ParseCgroupMemoryMax(view());
    }
    if (ReadKept(&cg_cpu_max_, cg_cpu_max_path_)) {
      out->cgroup_cpu_limit_cores = ParseCgroupCpuMax(view());
    }
    if (ReadKept(&cg_cpu_stat_, cg_cpu_stat_path_)) {
      out->cgroup_cpu_usage_usec = ParseCgroupCpuUsageUsec(view());
    }
  }
}

std::string ProcReader::DescribeSources() const {
  std::string s = "proc root " + proc_root_;
  auto add = [&s](const char* what, const KeptFile& f) {
    if (f.absent) s.append(", no ").append(what);
  };
  add("stat", stat_);
  add("meminfo", meminfo_);
  add("diskstats", diskstats_);
  add("net/dev", netdev_);
  s.append(cgroup_dir_.empty() ? ", no cgroup v2" : ", cgroup v2 " + cgroup_dir_);
  return s;
}

}  // namespace trainscope::proc

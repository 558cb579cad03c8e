#include "cli/table.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trainscope::cli {
namespace {

bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

// Width in terminal columns (UTF-8 continuation bytes do not count).
size_t DisplayWidth(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string Cut(const std::string& s, size_t max) {
  if (DisplayWidth(s) <= max || max < 5) return s;
  size_t keep = max - 1;
  size_t head = keep / 2, tail = keep - head;
  return s.substr(0, head) + "…" + s.substr(s.size() - tail);
}

}  // namespace

std::string Table::Render(size_t max_width) const {
  const size_t ncol = header_.size();
  std::vector<size_t> width(ncol, 0);
  std::vector<bool> numeric(ncol, true);
  auto cells = rows_;
  for (auto& r : cells) {
    r.resize(ncol);
    for (size_t i = 0; i < ncol; ++i) {
      r[i] = Cut(r[i], max_width);
      width[i] = std::max(width[i], DisplayWidth(r[i]));
      if (!r[i].empty() && !LooksNumeric(r[i])) numeric[i] = false;
    }
  }
  for (size_t i = 0; i < ncol; ++i) width[i] = std::max(width[i], DisplayWidth(header_[i]));
  std::string out;
  auto emit = [&](const std::vector<std::string>& r) {
    std::string line;
    for (size_t i = 0; i < ncol; ++i) {
      const std::string& c = i < r.size() ? r[i] : std::string();
      size_t pad = width[i] - DisplayWidth(c);
      if (numeric[i] && &r != &header_) {
        line.append(pad, ' ').append(c);
      } else {
        line.append(c);
        if (i + 1 < ncol) line.append(pad, ' ');
      }
      if (i + 1 < ncol) line.append("  ");
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.append(line).append("\n");
  };
  emit(header_);
  size_t total = 0;
  for (size_t i = 0; i < ncol; ++i) total += width[i] + (i + 1 < ncol ? 2 : 0);
  out.append(std::string(total, '-')).append("\n");
  for (const auto& r : cells) emit(r);
  return out;
}

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  double a = std::fabs(v);
  if (v == std::floor(v) && a < 1e9) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else if (a != 0 && (a < 1e-3 || a >= 1e6)) {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.4g", v);
  }
  return buf;
}

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string FormatDuration(double s) {
  char buf[64];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%.1f s", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%d min %d s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%d h %d min", static_cast<int>(s) / 3600,
                  (static_cast<int>(s) % 3600) / 60);
  }
  return buf;
}

bool StdoutIsTerminal() { return ::isatty(STDOUT_FILENO) != 0; }

}  // namespace trainscope::cli

#include "cli/table.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

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

// The first `n` code points of `s` (UTF-8).
size_t PrefixBytes(const std::string& s, size_t n) {
  size_t i = 0, seen = 0;
  while (i < s.size()) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (seen == n) break;
      ++seen;
    }
    ++i;
  }
  return i;
}

}  // namespace

std::vector<std::string> WrapText(const std::string& text, size_t width) {
  width = std::max<size_t>(width, 1);
  if (DisplayWidth(text) <= width) return {text};
  std::vector<std::string> lines;
  std::string cur;
  size_t cur_w = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t space = text.find(' ', pos);
    if (space == std::string::npos) space = text.size();
    std::string word = text.substr(pos, space - pos);
    pos = space + 1;
    if (word.empty()) continue;
    size_t w = DisplayWidth(word);
    while (w > width) {  // longer than a line: break inside it
      if (cur_w > 0) {
        lines.push_back(cur);
        cur.clear();
        cur_w = 0;
      }
      const size_t cut = PrefixBytes(word, width);
      lines.push_back(word.substr(0, cut));
      word = word.substr(cut);
      w -= width;
    }
    if (word.empty()) continue;
    if (cur_w > 0 && cur_w + 1 + w > width) {
      lines.push_back(cur);
      cur.clear();
      cur_w = 0;
    }
    if (cur_w > 0) {
      cur += ' ';
      ++cur_w;
    }
    cur += word;
    cur_w += w;
  }
  if (cur_w > 0 || lines.empty()) lines.push_back(cur);
  return lines;
}

std::string Table::Render(size_t max_width, size_t total_width) const {
  const size_t ncol = header_.size();
  max_width = std::max<size_t>(max_width, 1);
  std::vector<size_t> width(ncol, 0);
  std::vector<bool> numeric(ncol, true);
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows_) {
    std::vector<std::string> r(ncol);
    for (size_t i = 0; i < ncol && i < row.size(); ++i) r[i] = EscapeForTerminal(row[i]);
    cells.push_back(std::move(r));
  }
  for (const auto& r : cells) {
    for (size_t i = 0; i < ncol; ++i) {
      width[i] = std::max(width[i], std::min(max_width, DisplayWidth(r[i])));
      if (!r[i].empty() && !LooksNumeric(r[i])) numeric[i] = false;
    }
  }
  for (size_t i = 0; i < ncol; ++i) width[i] = std::max(width[i], DisplayWidth(header_[i]));
  // The last column's wrap width: what the others leave of total_width.
  std::vector<size_t> wrap(ncol, max_width);
  if (total_width > 0 && ncol > 0) {
    size_t others = 0;
    for (size_t i = 0; i + 1 < ncol; ++i) others += width[i] + 2;
    const size_t left = total_width > others ? total_width - others : 0;
    wrap[ncol - 1] = std::min(max_width, std::max<size_t>(left, 30));
    width[ncol - 1] = DisplayWidth(header_[ncol - 1]);
    for (const auto& r : cells) {
      width[ncol - 1] =
          std::max(width[ncol - 1], std::min(wrap[ncol - 1], DisplayWidth(r[ncol - 1])));
    }
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& r, bool header) {
    std::vector<std::vector<std::string>> lines(ncol);
    size_t nlines = 1;
    for (size_t i = 0; i < ncol; ++i) {
      lines[i] = WrapText(i < r.size() ? r[i] : std::string(), wrap[i]);
      nlines = std::max(nlines, lines[i].size());
    }
    for (size_t k = 0; k < nlines; ++k) {
      std::string line;
      for (size_t i = 0; i < ncol; ++i) {
        const std::string c = k < lines[i].size() ? lines[i][k] : std::string();
        const size_t cw = DisplayWidth(c);
        const size_t pad = width[i] > cw ? width[i] - cw : 0;
        if (numeric[i] && !header) {
          line.append(pad, ' ').append(c);
        } else {
          line.append(c);
          if (i + 1 < ncol) line.append(pad, ' ');
        }
        if (i + 1 < ncol) line.append("  ");
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out.append(line).append("\n");
    }
  };
  emit(header_, true);
  size_t total = 0;
  for (size_t i = 0; i < ncol; ++i) total += width[i] + (i + 1 < ncol ? 2 : 0);
  out.append(std::string(total, '-')).append("\n");
  for (const auto& r : cells) emit(r, false);
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
    std::snprintf(buf, sizeof(buf), "%d min %d s", static_cast<int>(s) / 60,
                  static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%d h %d min", static_cast<int>(s) / 3600,
                  (static_cast<int>(s) % 3600) / 60);
  }
  return buf;
}

size_t OutputWidth() {
  struct winsize ws {};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return std::max<size_t>(ws.ws_col, 60);
  }
  return 100;
}

bool StdoutIsTerminal() { return ::isatty(STDOUT_FILENO) != 0; }

}  // namespace trainscope::cli

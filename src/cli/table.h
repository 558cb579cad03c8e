// Plain-text tables and number formatting for the command line.
// Thread safety: a Table is used by one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainscope/terminal_escape.h"

namespace trainscope::cli {

// A table printed with aligned columns; numeric-looking cells are right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t size() const { return rows_.size(); }
  // Renders with two spaces between columns and a rule under the header. Every cell is passed
  // through EscapeForTerminal first. A cell wider than `max_width` is wrapped onto further lines
  // (at spaces where it can, else inside a word), never cut: the end of a message is often the
  // part that says what to do. With `total_width` > 0, the last column is wrapped narrower, so
  // that a line stays within `total_width` columns (the last column keeps at least 30).
  std::string Render(size_t max_width = 80, size_t total_width = 0) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// EscapeForTerminal lives in core (core/terminal_escape.h), shared with the hook's messages.
using ::trainscope::EscapeForTerminal;
// `text` wrapped into lines of at most `width` display columns, breaking at spaces where it can
// (the spaces at a break are dropped) and inside a word longer than `width`. Never empty.
std::vector<std::string> WrapText(const std::string& text, size_t width);

// Compact number: 0.000123 -> "1.23e-04", 12.5 -> "12.5", 1234567 -> "1.23e+06", NaN -> "nan".
std::string FormatNumber(double v);
// "1.5 KiB", "3.2 MiB".
std::string FormatBytes(double bytes);
// "0.8 s", "2 min 3 s".
std::string FormatDuration(double seconds);
// Columns to fit tables into: the terminal's width when stdout is a terminal (at least 60), else
// 100.
size_t OutputWidth();
// True if stdout is a terminal (colours and live status lines only then).
bool StdoutIsTerminal();

}  // namespace trainscope::cli

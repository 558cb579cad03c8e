// Plain-text tables and number formatting for the command line.
// Thread safety: a Table is used by one thread.
#pragma once

#include <string>
#include <vector>

namespace trainscope::cli {

// A table printed with aligned columns; numeric-looking cells are right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t size() const { return rows_.size(); }
  // Renders with two spaces between columns and a rule under the header. Cells longer than
  // `max_width` are cut in the middle with "…".
  std::string Render(size_t max_width = 80) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Compact number: 0.000123 -> "1.23e-04", 12.5 -> "12.5", 1234567 -> "1.23e+06", NaN -> "nan".
std::string FormatNumber(double v);
// "1.5 KiB", "3.2 MiB".
std::string FormatBytes(double bytes);
// "0.8 s", "2 min 3 s".
std::string FormatDuration(double seconds);
// True if stdout is a terminal (colours and live status lines only then).
bool StdoutIsTerminal();

}  // namespace trainscope::cli

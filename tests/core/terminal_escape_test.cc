// EscapeForTerminal (core/terminal_escape.h): what the CLI and the hook print of trial data.
#include "trainscope/terminal_escape.h"

#include <gtest/gtest.h>

namespace trainscope {
namespace {

TEST(TerminalEscapeTest, ControlCharactersAreShownNotSent) {
  EXPECT_EQ(EscapeForTerminal("bad\x1b[2J\x1b]0;t\x07 red\nline\t\r\x7f"),
            "bad\\x1b[2J\\x1b]0;t\\x07 red\\nline\\t\\r\\x7f");
  EXPECT_EQ(EscapeForTerminal("\xc2\x9b"
                              "31m"),
            "\\u009b31m");                                              // C1 CSI
  EXPECT_EQ(EscapeForTerminal("\xff\xc3"), "\\xff\\xc3");               // not UTF-8
  const std::string printable = "loss \xc3\xa9t\xc3\xa9 \xe2\x9c\x93";  // passes unchanged
  EXPECT_EQ(EscapeForTerminal(printable), printable);
  EXPECT_EQ(EscapeForTerminal(std::string_view("a\0b", 3)), "a\\x00b");
}

}  // namespace
}  // namespace trainscope

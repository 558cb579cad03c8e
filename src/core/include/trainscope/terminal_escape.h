// EscapeForTerminal: text from a trial or a rule made safe to print on a terminal. One
// implementation for every module that prints such text (the CLI, the hook's messages).
#pragma once

#include <string>
#include <string_view>

namespace trainscope {

// `text` safe to print on a terminal: control characters (C0, DEL, C1) and bytes that are not
// UTF-8 are shown as escapes ("\x1b", "\n", "\u009b", "\xff") instead of being sent, so data
// from a trial (tensor names, rule messages) cannot move the cursor, clear the screen or set the
// window title. Printable UTF-8 passes unchanged.
std::string EscapeForTerminal(std::string_view text);

}  // namespace trainscope

#pragma once
// Text from the user (config keys and values, file names) as it may appear in a message: control
// characters are escaped, so that a key holding a newline or a terminal escape sequence cannot
// forge log lines or repaint the terminal ("a\nb" is shown as a\nb, ESC as \x1b).
#include <string>
#include <string_view>

namespace zt {

std::string printable(std::string_view text);

}  // namespace zt

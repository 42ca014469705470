#pragma once
// The one exception type zerotrain throws for bad input or failed operations.
// main() catches it, logs the message once, and exits (or aborts the job) non-zero.
#include <fmt/format.h>
#include <stdexcept>
#include <string>

#include "core/printable.hpp"

namespace zt {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The message is one line: control characters that came in with the arguments (a key or a file
// name holding a newline) are escaped.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(printable(fmt::format(f, std::forward<Args>(args)...)));
}

// Input that does not fit the run (token files of another tokenizer than the model's, ...): a
// training run refuses it with exit status 2, as it does a config error; a damaged or unreadable
// file gives 1.
class BadInput : public Error {
public:
  using Error::Error;
};

template <typename... Args>
[[noreturn]] void refuse(fmt::format_string<Args...> f, Args&&... args) {
  throw BadInput(printable(fmt::format(f, std::forward<Args>(args)...)));
}

// Runs `what`, prefixing the message of a zt::Error it throws with `key` (the config key its input
// came from: "training.init_from: DIR: ...").
template <typename F>
auto with_key(const char* key, F&& what) {
  try {
    return what();
  } catch (const Error& e) {
    fail("{}: {}", key, e.what());
  }
}

}  // namespace zt

#pragma once
// The one exception type zerotrain throws for bad input or failed operations.
// main() catches it, logs the message once, and exits (or aborts the job) non-zero.
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace zt {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace zt

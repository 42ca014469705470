#pragma once
// A target that carries no loss: the data marks targets a loss mask excludes with it (a prompt
// token, a separator), and the loss and its gradient skip them (PyTorch's ignore_index, llm.c's -1).
#include <cstdint>

namespace zt {

constexpr int32_t kIgnoredTarget = -1;

}  // namespace zt

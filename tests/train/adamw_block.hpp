#pragma once
// The DeepSpeed optimizer block of a reference run's AdamW, its settings read by the names the
// fixture scripts record them under (lr, beta1, beta2, eps, weight_decay).
#include <functional>
#include <nlohmann/json.hpp>

namespace zt::test {

inline nlohmann::json adamw_block(const std::function<nlohmann::json(const char* name)>& value) {
  return {{"type", "AdamW"},
          {"params",
           {{"lr", value("lr")},
            {"betas", {value("beta1"), value("beta2")}},
            {"eps", value("eps")},
            {"weight_decay", value("weight_decay")}}}};
}

}  // namespace zt::test

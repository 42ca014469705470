#pragma once
// A record of tokens already made, as axolotl reads pre-tokenized rows: {"input_ids": [...],
// "labels": [...], "attention_mask": [...]}. labels (optional) says which tokens count: -100 for
// one that does not, else the token's own id (zerotrain trains each token to predict the next, as
// transformers shifts the labels); attention_mask (optional) 0 for padding, which is dropped. The
// first token never counts (nothing before it predicts it).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace zt {

struct TokenRecord {
  std::vector<int32_t> ids;
  std::vector<uint8_t> counted;
};

// Fails (zt::Error) naming the field and the position that is wrong.
TokenRecord token_record_of(const nlohmann::ordered_json& record);

}  // namespace zt

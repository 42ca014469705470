#include "tokenize/token_record.hpp"

#include "core/error.hpp"

namespace zt {
namespace {

using json = nlohmann::ordered_json;
constexpr int64_t kIgnoredLabel = -100;

// An array of integers of `size` elements (any size when negative).
std::vector<int64_t> integers(const json& record, const char* key, int64_t size) {
  const json& list = record.at(key);
  if (!list.is_array()) fail("{}: expected an array of integers, got {}", key, list.type_name());
  if (size >= 0 && int64_t(list.size()) != size)
    fail("{}: {} values for the {} of input_ids", key, list.size(), size);
  std::vector<int64_t> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_number_integer()) fail("{}[{}]: expected an integer, got {}", key, i, list[i].dump());
    out.push_back(list[i].get<int64_t>());
  }
  return out;
}

std::vector<int64_t> optional_integers(const json& record, const char* key, int64_t size) {
  auto it = record.find(key);
  if (it == record.end() || it->is_null()) return {};
  return integers(record, key, size);
}

}  // namespace

TokenRecord token_record_of(const json& record) {
  const std::vector<int64_t> ids = integers(record, "input_ids", -1);
  const std::vector<int64_t> labels = optional_integers(record, "labels", int64_t(ids.size()));
  const std::vector<int64_t> mask = optional_integers(record, "attention_mask", int64_t(ids.size()));
  TokenRecord out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] > INT32_MAX) fail("input_ids[{}]: {} is no token id", i, ids[i]);
    if (!mask.empty() && mask[i] != 0 && mask[i] != 1) fail("attention_mask[{}]: expected 0 or 1, got {}", i, mask[i]);
    if (!labels.empty() && labels[i] != kIgnoredLabel && labels[i] != ids[i])
      fail("labels[{}]: {} is neither -100 nor the token's id {}: each token's label is the token itself (the "
           "model learns to predict it from those before)",
           i, labels[i], ids[i]);
    if (!mask.empty() && mask[i] == 0) continue;
    out.counted.push_back(!out.ids.empty() && (labels.empty() || labels[i] != kIgnoredLabel));
    out.ids.push_back(int32_t(ids[i]));
  }
  if (out.ids.empty()) fail("input_ids: no tokens{}", ids.empty() ? "" : " outside the padding");
  return out;
}

}  // namespace zt

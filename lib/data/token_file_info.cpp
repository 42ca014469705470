#include "data/token_file_info.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "data/llmc_format.hpp"

namespace zt {

namespace {

constexpr const char* kFormat = "zerotrain token file";
constexpr int kVersion = 1;

nlohmann::json parse_info(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot read it", path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: not valid JSON ({}): the record of the token file beside it is damaged; tokenize again", path,
         e.what());
  }
}

}  // namespace

std::string token_file_info_json(const TokenFileInfo& info) {
  const nlohmann::json mask = info.loss_mask.empty() ? nlohmann::json(nullptr) : nlohmann::json(info.loss_mask);
  nlohmann::json j = {{"format", kFormat},
                      {"version", kVersion},
                      {"tokens", info.tokens},
                      {"token_bytes", info.token_bytes},
                      {"loss_mask", mask},
                      {"tokenizer", to_json(info.tokenizer)}};
  if (!info.sample_index.empty()) j["samples"] = {{"index", info.sample_index}, {"count", info.samples}};
  return j.dump(2) + "\n";
}

std::optional<TokenFileInfo> read_token_file_info(const std::string& token_path, int64_t tokens) {
  const std::string path = llmc::info_path_of(token_path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  const nlohmann::json j = parse_info(path);
  if (!j.is_object() || j.value("format", "") != kFormat)
    fail("{}: not a zerotrain token file record (expected \"format\": \"{}\"), yet it lies beside the token file {}",
         path, kFormat, token_path);
  if (!j.contains("version") || !j.at("version").is_number_integer() || j.at("version").get<int>() > kVersion)
    fail("{}: version {} of the token file record; this zerotrain reads version {}", path,
         j.contains("version") ? j.at("version").dump() : "(none)", kVersion);
  TokenFileInfo info;
  if (!j.contains("tokens") || !j.at("tokens").is_number_integer()) fail("{}: tokens: expected an integer", path);
  info.tokens = j.at("tokens").get<int64_t>();
  if (info.tokens != tokens)
    fail("{}: records {} tokens, but {} holds {}: it belongs to another token file (tokenize again, or remove it)",
         path, info.tokens, token_path, tokens);
  info.token_bytes = j.value("token_bytes", 0);
  if (j.contains("loss_mask") && j.at("loss_mask").is_string()) info.loss_mask = j.at("loss_mask").get<std::string>();
  if (j.contains("samples")) {
    const nlohmann::json& samples = j.at("samples");
    if (!samples.is_object() || !samples.contains("index") || !samples.at("index").is_string() ||
        !samples.contains("count") || !samples.at("count").is_number_integer())
      fail("{}: samples: expected {{\"index\": NAME, \"count\": N}}", path);
    info.sample_index = samples.at("index").get<std::string>();
    info.samples = samples.at("count").get<int64_t>();
  }
  if (!j.contains("tokenizer")) fail("{}: records no tokenizer", path);
  info.tokenizer = tokenizer_identity_from_json(j.at("tokenizer"), path);
  return info;
}

}  // namespace zt

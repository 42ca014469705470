// Conversations render as the models' own chat templates render them (transformers'
// apply_chat_template on tokenizer_config.json), encode to the same ids, and the ids that count
// are exactly the assistants' answers with their end-of-turn token.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "tokenizer/chat_format.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace zt;

namespace {

// Messages written as {"role", "content"} objects.
std::vector<ChatMessage> messages_of(const nlohmann::json& list) {
  std::vector<ChatMessage> out;
  for (const nlohmann::json& m : list)
    out.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>(), std::nullopt});
  return out;
}

}  // namespace

TEST_CASE("chat renders as apply_chat_template, and only answers count", "[tokenizer]") {
  const auto fixture = test::read_fixture("chat.json");
  for (const char* name : {"llama3", "qwen3"}) {
    SECTION(name) {
      const Tokenizer tokenizer = Tokenizer::load(test::fixture_path(std::string("trimmed/") + name));
      const auto format = chat_format_of(tokenizer);
      REQUIRE(format.has_value());
      CHECK(chat_format_name(*format) == name);
      const auto& expected = fixture["tokenizers"][name];
      for (size_t c = 0; c < fixture["conversations"].size(); ++c) {
        INFO(name << " conversation " << c);
        const auto segments = render_chat(*format, messages_of(fixture["conversations"][c]),
                                          tokenizer.config_string("bos_token"));
        std::string rendered;
        std::vector<TextSegment> views;
        for (const ChatSegment& s : segments) {
          rendered += s.text;
          views.push_back({s.text, s.template_text, s.counted});
        }
        CHECK(rendered == expected["rendered"][c].get<std::string>());
        std::vector<int32_t> ids;
        std::vector<uint8_t> counted;
        tokenizer.encode(views, ids, counted);
        CHECK(ids == expected["ids"][c].get<std::vector<int32_t>>());
        CHECK(counted == expected["counted"][c].get<std::vector<uint8_t>>());
      }
    }
  }
}

TEST_CASE("special tokens in messages are text, the template's are tokens", "[tokenizer]") {
  const Tokenizer tokenizer = Tokenizer::load(test::fixture_path("trimmed/qwen3"));
  const auto segments = render_chat(ChatFormat::ChatMl, messages_of(R"([{"role": "user", "content": "<|im_end|>"},
      {"role": "assistant", "content": "ok"}])"_json), "");
  std::vector<TextSegment> views;
  for (const ChatSegment& s : segments) views.push_back({s.text, s.template_text, s.counted});
  std::vector<int32_t> ids;
  std::vector<uint8_t> counted;
  tokenizer.encode(views, ids, counted);
  const int32_t im_end = *tokenizer.token_id("<|im_end|>");
  CHECK(std::count(ids.begin(), ids.end(), im_end) == 2);  // the user's <|im_end|> is text
  CHECK(tokenizer.decode(ids) == "<|im_start|>user\n<|im_end|><|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n");
}

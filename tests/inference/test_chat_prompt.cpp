// generate --chat's prompt: the ids of transformers' apply_chat_template(add_generation_prompt=True)
// with each model's own template (tests/fixtures/tokenizer/chat.json, made by
// scripts/chat_fixtures.py), id for id as `zerotrain tokenize` writes a conversation: Qwen2.5's
// default system message, Llama 3.1's date line, --system in their place; the template's
// end-of-turn token stops generation; what has no chat format is refused.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../tokenizer/fixtures.hpp"
#include "core/error.hpp"
#include "inference/text_codec.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace zt;

namespace {

// The fixture's prompt p for a format: its messages are [user "Say hello."] and
// [system "You are terse.", user "Say hello."].
std::vector<int32_t> expected_prompt(const nlohmann::json& format, size_t p) {
  return format["prompt_ids"][p].get<std::vector<int32_t>>();
}

}  // namespace

TEST_CASE("chat prompts are apply_chat_template's with the generation prompt, nothing before them",
          "[inference][chat]") {
  const auto fixture = test::read_fixture("chat.json");
  REQUIRE(fixture["prompts"][0].size() == 1);
  REQUIRE(fixture["prompts"][1][0]["content"] == "You are terse.");
  // The format told by the tokenizer's template.
  const auto dir = std::filesystem::temp_directory_path() / "zt_test_chat_prompt_formats";
  for (const char* name : {"llama3", "llama3.1", "qwen2.5", "qwen3", "llama2", "mistral", "gemma"}) {
    INFO(name);
    const auto& format = fixture["formats"][name];
    const TextCodec codec = TextCodec::tokenizer(test::chat_tokenizer(format, dir));
    CHECK(codec.chat_prompt("Say hello.", std::nullopt, "") == expected_prompt(format, 0));
    CHECK(codec.chat_prompt("Say hello.", "You are terse.", "") == expected_prompt(format, 1));
  }
  std::filesystem::remove_all(dir);
  // What the fixture shows: Qwen2.5's default system message and Llama 3.1's date line, which
  // --system replaces and follows.
  CHECK(fixture["formats"]["qwen2.5"]["prompts"][0].get<std::string>().find(
            "You are Qwen, created by Alibaba Cloud.") != std::string::npos);
  CHECK(fixture["formats"]["qwen2.5"]["prompts"][1].get<std::string>().find("You are Qwen") == std::string::npos);
  CHECK(fixture["formats"]["llama3.1"]["prompts"][1].get<std::string>().find(
            "Today Date: 26 Jul 2024\n\nYou are terse.") != std::string::npos);
}

TEST_CASE("a chat's answer ends at the template's end-of-turn token", "[inference][chat]") {
  for (const auto& [name, end_of_turn] : std::map<std::string, std::string>{{"llama3", "<|eot_id|>"},
                                                                            {"llama3.1", "<|eot_id|>"},
                                                                            {"qwen2.5", "<|im_end|>"},
                                                                            {"qwen3", "<|im_end|>"},
                                                                            {"gemma", "<end_of_turn>"}}) {
    INFO(name);
    const std::string path = test::fixture_path("trimmed/" + name);
    const Tokenizer tokenizer = Tokenizer::load(path);
    const TextCodec codec = TextCodec::tokenizer(path);
    CHECK(codec.ends_text(*tokenizer.token_id(end_of_turn)));
    const char* start_of_turn = name.starts_with("llama") ? "<|start_header_id|>"
                                : name == "gemma"         ? "<start_of_turn>"
                                                          : "<|im_start|>";
    CHECK_FALSE(codec.ends_text(*tokenizer.token_id(start_of_turn)));
  }
  // Gemma's texts end with <eos>, its eos_token.
  const std::string gemma = test::fixture_path("trimmed/gemma");
  CHECK(TextCodec::tokenizer(gemma).ends_text(*Tokenizer::load(gemma).token_id("<eos>")));
  // Llama 2's and Mistral's answers end with </s>.
  const std::string llama2 = test::fixture_path("trimmed/llama2");
  CHECK(TextCodec::tokenizer(llama2).ends_text(*Tokenizer::load(llama2).token_id("</s>")));
  // Llama 3.1's turn that awaits a tool's result.
  const std::string llama31 = test::fixture_path("trimmed/llama3.1");
  CHECK(TextCodec::tokenizer(llama31).ends_text(*Tokenizer::load(llama31).token_id("<|eom_id|>")));
}

TEST_CASE("a chat prompt without a chat format is refused, saying what to give", "[inference][chat]") {
  const TextCodec gpt2 = TextCodec::tokenizer(test::fixture_path("trimmed/gpt2"));
  CHECK_THROWS_WITH(gpt2.chat_prompt("Hi", std::nullopt, ""),
                    Catch::Contains("has no chat template or chat tokens to tell its format by: name one with "
                                    "--chat-format (chatml, qwen2.5, qwen3, llama3, llama3.1, llama2, mistral, "
                                    "gemma)"));
  CHECK_THROWS_WITH(gpt2.chat_prompt("Hi", std::nullopt, "llama3"),
                    Catch::Contains("has no <|start_header_id|> token"));
  const TextCodec qwen = TextCodec::tokenizer(test::fixture_path("trimmed/qwen2.5"));
  CHECK_THROWS_WITH(
      qwen.chat_prompt("Hi", std::nullopt, "vicuna"),
      "--chat-format vicuna: expected one of chatml, qwen2.5, qwen3, llama3, llama3.1, llama2, mistral, gemma");
  // A format named over the template's: ChatML without Qwen2.5's default system message.
  const std::vector<int32_t> chatml = qwen.chat_prompt("Say hello.", std::nullopt, "chatml");
  const auto fixture = test::read_fixture("chat.json");
  CHECK(chatml == expected_prompt(fixture["formats"]["qwen3"], 0));
  // A chat template that is none of the formats: named, and --chat-format asked for.
  const auto dir = std::filesystem::temp_directory_path() / "zt_test_chat_prompt_template";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(test::fixture_path("trimmed/qwen2.5/tokenizer.json"), dir / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"chat_template": "{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}"})";
  CHECK_THROWS_WITH(TextCodec::tokenizer(dir.string()).chat_prompt("Hi", std::nullopt, ""),
                    Catch::StartsWith("--chat: the tokenizer's chat template (") &&
                        Catch::EndsWith(") is none of the formats zerotrain renders: name one with --chat-format "
                                        "(chatml, qwen2.5, qwen3, llama3, llama3.1, llama2, mistral, gemma)"));
  CHECK(TextCodec::tokenizer(dir.string()).chat_prompt("Say hello.", std::nullopt, "chatml") == chatml);
  std::filesystem::remove_all(dir);
  CHECK_THROWS_WITH(TextCodec::bytes().chat_prompt("Hi", std::nullopt, ""),
                    "--chat: a model that reads bytes has no chat format; give --tokenizer");
}

// A record of a data file as a document: the conversation layouts (messages, ShareGPT, Alpaca) give
// the same messages, and a bad record is named by its field.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../tokenizer/fixtures.hpp"
#include "core/error.hpp"
#include "tokenize/chat_record.hpp"
#include "tokenizer/chat_format.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace zt;

TEST_CASE("ShareGPT and Alpaca records give the conversation of the messages layout", "[tokenizer]") {
  const auto openai = document_of_record(R"({"messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
      {"role": "user", "content": "Q2\nmore"}, {"role": "assistant", "content": "A2"}]})"_json);
  const auto sharegpt = document_of_record(R"({"conversations": [{"from": "system", "value": "Be brief."},
      {"from": "human", "value": "Q1"}, {"from": "gpt", "value": "A1"},
      {"from": "human", "value": "Q2\nmore"}, {"from": "gpt", "value": "A2"}]})"_json);
  const auto alpaca = document_of_record(
      R"({"system": "Be brief.", "history": [["Q1", "A1"]], "instruction": "Q2", "input": "more", "output": "A2"})"_json);
  auto roles_and_text = [](const Document& d) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& m : d.messages) out.emplace_back(m.role, m.content);
    return out;
  };
  CHECK(openai.chat);
  CHECK(roles_and_text(sharegpt) == roles_and_text(openai));
  CHECK(roles_and_text(alpaca) == roles_and_text(openai));
  const auto text = document_of_record(R"({"text": "plain", "id": 3})"_json);
  CHECK_FALSE(text.chat);
  CHECK(text.text == "plain");
}

TEST_CASE("bad records name the field", "[tokenizer]") {
  auto error_of = [](const char* record) {
    try {
      document_of_record(nlohmann::json::parse(record));
    } catch (const zt::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of(R"({"txt": "x"})") == "no \"text\", \"messages\", \"conversations\" or \"instruction\"/\"output\" field");
  CHECK(error_of(R"({"text": 3})") == "text: expected a string, got number");
  CHECK(error_of(R"({"messages": [{"role": "user"}]})") == "messages[0].content: missing");
  CHECK(error_of(R"({"messages": [{"role": "user", "content": "hi"}]})") ==
        "the conversation has no assistant message: nothing to train on");
  CHECK(error_of(R"({"conversations": [{"from": "bot", "value": "x"}]})") ==
        "conversations[0].from: \"bot\" is none of human, user, gpt, assistant, system");
  CHECK(error_of(R"([1])") == "expected a JSON object, got array");
  CHECK_THROWS_WITH(render_chat(ChatFormat::ChatMl, {{"tool", "x", std::nullopt}}, ""),
                    "messages[0].role: \"tool\" is not rendered (system, user or assistant)");
  const Tokenizer gpt2 = Tokenizer::load(test::fixture_path("trimmed/gpt2"));
  CHECK_FALSE(chat_format_of(gpt2).has_value());
  CHECK_THROWS_WITH(check_chat_format(ChatFormat::Llama3, gpt2), Catch::Contains("has no <|start_header_id|> token"));
}

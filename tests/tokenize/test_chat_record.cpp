// A record of a data file as a document: the conversation layouts (messages, ShareGPT, Alpaca,
// TRL's prompt-completion) give the same messages, roles by the names LLaMA-Factory, ms-swift and
// ShareGPT use, tool calls and results, which answers count (--train-on, the "loss" flags), tokens
// already made (axolotl's rows), and a bad record is named by its field.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../tokenizer/fixtures.hpp"
#include "core/error.hpp"
#include "tokenize/chat_record.hpp"
#include "tokenizer/chat_format.hpp"
#include "tokenizer/template_json.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace zt;
using ordered = nlohmann::ordered_json;

namespace {

Document read(const char* record, RecordOptions options = {}) {
  return document_of_record(ordered::parse(record), options);
}

std::vector<std::pair<std::string, std::string>> roles_and_text(const Document& d) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& m : d.conversation.messages) out.emplace_back(m.role, m.content);
  return out;
}

std::vector<bool> answers_counted(const Document& d) {
  std::vector<bool> out;
  for (const auto& m : d.conversation.messages)
    if (m.role == "assistant") out.push_back(*m.loss);
  return out;
}

std::string calls_of(const ChatMessage& m) {
  std::string out;
  for (const ToolCall& c : m.tool_calls) out += c.name + template_json(c.arguments) + ";";
  return out;
}

std::string error_of(const char* record, RecordOptions options = {}) {
  try {
    read(record, options);
  } catch (const zt::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("ShareGPT, Alpaca and prompt-completion records give the conversation of the messages layout",
          "[tokenizer]") {
  const auto openai = read(R"({"messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
      {"role": "user", "content": "Q2\nmore"}, {"role": "assistant", "content": "A2"}]})");
  const auto sharegpt = read(R"({"conversations": [{"from": "system", "value": "Be brief."},
      {"from": "human", "value": "Q1"}, {"from": "gpt", "value": "A1"},
      {"from": "human", "value": "Q2\nmore"}, {"from": "gpt", "value": "A2"}]})");
  const auto sharegpt_system_field = read(R"({"system": "Be brief.", "conversations": [
      {"from": "user", "value": "Q1"}, {"from": "bot", "value": "A1"},
      {"from": "human", "value": "Q2\nmore"}, {"from": "model", "value": "A2"}]})");
  const auto alpaca = read(
      R"({"system": "Be brief.", "history": [["Q1", "A1"]], "instruction": "Q2", "input": "more", "output": "A2"})");
  // OpenAI's developer role is the system role.
  const auto developer = read(R"({"messages": [{"role": "developer", "content": "Be brief."},
      {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"},
      {"role": "user", "content": "Q2\nmore"}, {"role": "assistant", "content": "A2"}]})");
  const auto prompt_completion = read(R"({"prompt": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": )"
    R"("Q2\nmore"}],
      "completion": [{"role": "assistant", "content": "A2"}]})");
  CHECK(openai.kind == Document::Chat);
  CHECK(roles_and_text(sharegpt) == roles_and_text(openai));
  CHECK(roles_and_text(developer) == roles_and_text(openai));
  CHECK(roles_and_text(sharegpt_system_field) == roles_and_text(openai));
  CHECK(roles_and_text(alpaca) == roles_and_text(openai));
  CHECK(roles_and_text(prompt_completion) == roles_and_text(openai));
  CHECK(answers_counted(openai) == std::vector<bool>{true, true});
  CHECK(answers_counted(prompt_completion) == std::vector<bool>{false, true});  // the prompt's answers never count
  const auto text = read(R"({"text": "plain", "id": 3})");
  CHECK(text.kind == Document::Text);
  CHECK(text.text == "plain");
  const auto plain = read(R"({"prompt": "The capital of France is", "completion": " Paris."})");
  CHECK(plain.kind == Document::PromptCompletion);
  CHECK(plain.prompt == "The capital of France is");
  CHECK(plain.completion == " Paris.");
}

TEST_CASE("tool calls and results, by any of their names", "[tokenizer]") {
  // OpenAI's tool_calls (with or without the function wrapper, arguments as an object or a string).
  const auto openai = read(R"({"tools": [{"type": "function", "function": {"name": "f"}}], "messages": [
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", )"
    R"("arguments": {"b": 1, "a": 2}}},
                                                           {"name": "g", "arguments": "{\"x\": 1}"}]},
      {"role": "tool", "content": "r1"}, {"role": "tool", "content": "r2"}, {"role": "assistant", "content": )"
    R"("done"}]})");
  REQUIRE(openai.conversation.messages.size() == 5);
  CHECK(calls_of(openai.conversation.messages[1]) == "f{\"b\": 1, \"a\": 2};g\"{\\\"x\\\": 1}\";");  // keys in order
  CHECK(openai.conversation.messages[1].content.empty());
  CHECK(template_json(openai.conversation.tools.at(0)) == "{\"type\": \"function\", \"function\": {\"name\": \"f\"}}");
  // LLaMA-Factory's ShareGPT: function_call's value is the call as JSON, observation the result,
  // tools a string.
  const auto factory = read(R"({"tools": "[{\"name\": \"f\"}]", "conversations": [
      {"from": "human", "value": "go"}, {"from": "function_call", "value": "{\"name\": \"f\", \"arguments\": )"
    R"({\"b\": 1}}"},
      {"from": "observation", "value": "r1"}, {"from": "gpt", "value": "done"}]})");
  CHECK(roles_and_text(factory) == std::vector<std::pair<std::string, std::string>>{
                                       {"user", "go"}, {"assistant", ""}, {"tool", "r1"}, {"assistant", "done"}});
  CHECK(calls_of(factory.conversation.messages[1]) == "f{\"b\": 1};");
  CHECK(factory.conversation.tools.size() == 1);
  // ms-swift's: an answer, then its calls (tool_call, a list in one), then tool_response.
  const auto swift =
      read(R"({"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "Let me see."},
      {"role": "tool_call", "content": "{\"name\": \"f\", \"arguments\": {}}"},
      {"role": "tool_call", "content": "[{\"name\": \"g\", \"arguments\": {\"y\": [1]}}]"},
      {"role": "tool_response", "content": "r"}, {"role": "function", "content": "s"}, {"role": "ipython", )"
    R"("content": "t"},
      {"role": "assistant", "content": "done", "loss": false}, {"role": "assistant", "content": "more"}]})");
  CHECK(roles_and_text(swift) == std::vector<std::pair<std::string, std::string>>{
                                     {"user", "go"}, {"assistant", "Let me see."}, {"tool", "r"}, {"tool", "s"},
                                     {"tool", "t"}, {"assistant", "done"}, {"assistant", "more"}});
  CHECK(calls_of(swift.conversation.messages[1]) == "f{};g{\"y\": [1]};");
}

TEST_CASE("which answers count: --train-on and the loss flags", "[tokenizer]") {
  const char* record = R"({"messages": [{"role": "user", "content": "1"}, {"role": "assistant", "content": "a"},
      {"role": "user", "content": "2"}, {"role": "assistant", "content": "b", "loss": false},
      {"role": "user", "content": "3"}, {"role": "assistant", "content": "c"}]})";
  CHECK(answers_counted(read(record)) == std::vector<bool>{true, false, true});
  CHECK(answers_counted(read(record, {.train_on = TrainOn::Last})) == std::vector<bool>{false, false, true});
  const char* flagged =
      R"({"messages": [{"role": "user", "content": "1"}, {"role": "assistant", "content": "a", "loss": true},
      {"role": "user", "content": "2"}, {"role": "assistant", "content": "b"}]})";
  CHECK(answers_counted(read(flagged, {.train_on = TrainOn::Last})) == std::vector<bool>{true, true});
  CHECK(
      error_of(
          R"({"messages": [{"role": "user", "content": "1"}, {"role": "assistant", "content": "a", "loss": )"
    R"(false}]})") ==
      "no assistant message counts (each has \"loss\": false): nothing to train on");
  CHECK(
      error_of(
          R"({"messages": [{"role": "user", "content": "1", "loss": true}, {"role": "assistant", "content": "a"}]})") ==
      "messages[0].loss: only an assistant's answer can count, not a user's");
  CHECK(error_of(
            R"({"messages": [{"role": "user", "content": "1"}, {"role": "assistant", "content": "a", "loss": 1}]})") ==
        "messages[1].loss: expected true or false, got 1");
  CHECK(kTrainOnNames.find("last") == TrainOn::Last);
  CHECK_FALSE(kTrainOnNames.find("first").has_value());
}

TEST_CASE("tokens already made: input_ids, labels and attention_mask as axolotl reads them", "[tokenizer]") {
  const auto d = read(R"({"input_ids": [5, 6, 7, 8, 0, 0], "labels": [-100, -100, 7, 8, -100, -100],
                          "attention_mask": [1, 1, 1, 1, 0, 0]})");
  CHECK(d.kind == Document::Tokens);
  CHECK(d.ids == std::vector<int32_t>{5, 6, 7, 8});
  CHECK(d.counted == std::vector<uint8_t>{0, 0, 1, 1});
  const auto all = read(R"({"input_ids": [5, 6, 7]})");
  CHECK(all.counted == std::vector<uint8_t>{0, 1, 1});  // the first has nothing before it
  CHECK(error_of(R"({"input_ids": [5, 6], "labels": [-100, 9]})") ==
        "labels[1]: 9 is neither -100 nor the token's id 6: each token's label is the token itself (the model learns "
        "to predict it from those before)");
  CHECK(error_of(R"({"input_ids": [5, 6], "labels": [-100]})") == "labels: 1 values for the 2 of input_ids");
  CHECK(error_of(R"({"input_ids": [5, -1]})") == "input_ids[1]: -1 is no token id");
  CHECK(error_of(R"({"input_ids": [5, "x"]})") == "input_ids[1]: expected an integer, got \"x\"");
  CHECK(error_of(R"({"input_ids": [5], "attention_mask": [0]})") == "input_ids: no tokens outside the padding");
}

TEST_CASE("bad records name the field", "[tokenizer]") {
  CHECK(error_of(R"({"txt": "x"})") ==
        "no \"text\", \"messages\", \"conversations\", \"prompt\"/\"completion\", \"instruction\"/\"output\" or "
        "\"input_ids\" field");
  CHECK(error_of(R"({"text": 3})") == "text: expected a string, got number");
  CHECK(error_of(R"({"messages": [{"role": "user"}]})") == "messages[0].content: missing");
  CHECK(error_of(R"({"messages": [{"role": "user", "content": "hi"}]})") ==
        "the conversation has no assistant message: nothing to train on");
  CHECK(error_of(R"({"conversations": [{"from": "robot", "value": "x"}]})") ==
        "conversations[0].from: \"robot\" is no role (user, human; assistant, gpt, bot, model; system, developer; "
        "tool, observation, function, tool_response, ipython; function_call, tool_call)");
  CHECK(error_of(R"({"conversations": [{"from": "function_call", "value": "call f"}]})")
            .starts_with("conversations[0].value: a tool call's content must be JSON"));
  CHECK(error_of(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"name": "f"}]}]})") ==
        "messages[0].tool_calls[0].arguments: missing");
  CHECK(
      error_of(R"({"messages": [{"role": "user", "content": "", "tool_calls": [{"name": "f", "arguments": {}}]}]})") ==
      "messages[0].tool_calls: only an assistant calls tools, not a user");
  CHECK(error_of(R"({"tools": "[nope", "messages": [{"role": "assistant", "content": "a"}]})")
            .starts_with("tools: a string must hold a JSON list of function signatures"));
  CHECK(error_of(R"({"prompt": "x"})") == "completion: missing (a prompt-completion record has both)");
  CHECK(error_of(R"({"prompt": "x", "completion": [{"role": "assistant", "content": "a"}]})") ==
        "prompt and completion: expected two strings or two lists of messages, got string and array");
  CHECK(error_of(R"([1])") == "expected a JSON object, got array");
  const Tokenizer gpt2 = Tokenizer::load(test::fixture_path("trimmed/gpt2"));
  CHECK_FALSE(chat_format_of(gpt2).has_value());
  CHECK_THROWS_WITH(check_chat_format(ChatFormat::Llama3, gpt2), Catch::Contains("has no <|start_header_id|> token"));
}

// Conversations render as the models' own chat templates render them (transformers'
// apply_chat_template with the templates of Llama 3, Llama 3.1, Qwen2.5, Qwen3, Llama 2,
// Mistral-7B-Instruct-v0.2 and Gemma 3: chat.json, made by
// scripts/chat_fixtures.py), tool calls and default system messages included, encode to the same
// ids, and the ids that count are exactly the assistants' answers with their end-of-turn token.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "../data/temp_dir.hpp"
#include "fixtures.hpp"
#include "tokenize/chat_record.hpp"
#include "tokenizer/chat_format.hpp"
#include "tokenizer/template_json.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace zt;
using ordered = nlohmann::ordered_json;

namespace {

struct Encoding {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<uint8_t> counted;
};

Encoding encode_chat(const Tokenizer& tokenizer, ChatFormat format, const Conversation& c,
                     bool generation_prompt = false) {
  const auto segments = render_chat(format, c,
                                    {.bos_token = chat_bos_token(tokenizer), .eos_token = chat_eos_token(tokenizer),
                                     .generation_prompt = generation_prompt});
  Encoding e;
  std::vector<TextSegment> views;
  for (const ChatSegment& s : segments) {
    e.text += s.text;
    views.push_back({s.text, s.template_text, s.counted});
  }
  tokenizer.encode(views, e.ids, e.counted);
  return e;
}

// chat.json with its keys in the order they were written (tool arguments are written in order).
ordered chat_fixture() { return ordered::parse(test::read_file(test::fixture_path("chat.json"))); }

// The fixture's conversation as a record of the messages layout reads it.
Conversation conversation_of(const ordered& fixture, size_t c, RecordOptions options = {}) {
  return document_of_record(fixture["conversations"][c], options).conversation;
}

Conversation prompt_of(const ordered& messages) {
  Conversation c;
  for (const auto& m : messages)
    c.messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  return c;
}

const char* const kFormats[] = {"llama3", "llama3.1", "qwen2.5", "qwen3", "llama2", "mistral", "gemma"};

}  // namespace

TEST_CASE("chat renders as apply_chat_template, and only answers count", "[tokenizer]") {
  const auto fixture = chat_fixture();
  for (const char* name : kFormats) {
    SECTION(name) {
      const auto& expected = fixture["formats"][name];
      const TempDir dir;
      const Tokenizer tokenizer = Tokenizer::load(test::chat_tokenizer(expected, dir.path));
      std::string how;
      const auto format = chat_format_of(tokenizer, &how);
      REQUIRE(format.has_value());
      CHECK(kChatFormatNames.name(*format) == name);
      CHECK(how == "its chat template");
      for (size_t c = 0; c < fixture["conversations"].size(); ++c) {
        INFO(name << " conversation " << c);
        if (expected["rendered"][c].is_null()) {  // no tools in this format, or the template refuses
          CHECK_THROWS_AS(encode_chat(tokenizer, *format, conversation_of(fixture, c)), Error);
          continue;
        }
        const Encoding e = encode_chat(tokenizer, *format, conversation_of(fixture, c));
        CHECK(e.text == expected["rendered"][c].get<std::string>());
        CHECK(e.ids == expected["ids"][c].get<std::vector<int32_t>>());
        CHECK(e.counted == expected["counted"][c].get<std::vector<uint8_t>>());
        const Encoding last = encode_chat(tokenizer, *format, conversation_of(fixture, c, {.train_on = TrainOn::Last}));
        CHECK(last.ids == e.ids);
        CHECK(last.counted == expected["counted_last"][c].get<std::vector<uint8_t>>());
      }
    }
  }
}

TEST_CASE("generation prompts are apply_chat_template's with add_generation_prompt", "[tokenizer]") {
  const auto fixture = chat_fixture();
  for (const char* name : kFormats) {
    const auto& expected = fixture["formats"][name];
    const TempDir dir;
    const Tokenizer tokenizer = Tokenizer::load(test::chat_tokenizer(expected, dir.path));
    for (size_t p = 0; p < fixture["prompts"].size(); ++p) {
      INFO(name << " prompt " << p);
      const Encoding e = encode_chat(tokenizer, *kChatFormatNames.find(name), prompt_of(fixture["prompts"][p]), true);
      CHECK(e.text == expected["prompts"][p].get<std::string>());
      CHECK(e.ids == expected["prompt_ids"][p].get<std::vector<int32_t>>());
      CHECK(std::count(e.counted.begin(), e.counted.end(), 1) == 0);
    }
  }
}

TEST_CASE("--system gives conversations without one the system message", "[tokenizer]") {
  const auto fixture = chat_fixture();
  // Conversation 1 opens with "You are a terse assistant.": without it, --system puts it back.
  ordered record = fixture["conversations"][1];
  record["messages"].erase(record["messages"].begin());
  const Document with_system = document_of_record(record, {.system = "You are a terse assistant."});
  // One that has a system message keeps it.
  const Document kept = document_of_record(fixture["conversations"][1], {.system = "Other."});
  for (const char* name : kFormats) {
    INFO(name);
    const auto& expected = fixture["formats"][name];
    const TempDir dir;
    const Tokenizer tokenizer = Tokenizer::load(test::chat_tokenizer(expected, dir.path));
    const ChatFormat format = *kChatFormatNames.find(name);
    CHECK(encode_chat(tokenizer, format, with_system.conversation).ids ==
          expected["ids"][1].get<std::vector<int32_t>>());
    CHECK(encode_chat(tokenizer, format, kept.conversation).ids == expected["ids"][1].get<std::vector<int32_t>>());
    // Without it, Qwen2.5's own default system message (conversation 0 of the fixture shows it).
    const Encoding none = encode_chat(tokenizer, format, document_of_record(record).conversation);
    CHECK((none.text.find("You are Qwen, created by Alibaba Cloud.") != std::string::npos) ==
          (format == ChatFormat::Qwen25));
  }
}

TEST_CASE("the chat format is told by the chat template", "[tokenizer]") {
  auto template_of = [](const std::string& name) {
    return test::read_file(test::fixture_path("templates/" + name + ".jinja"));
  };
  CHECK(chat_format_of_template(template_of("qwen2.5")) == ChatFormat::Qwen25);
  CHECK(chat_format_of_template(template_of("llama3.1")) == ChatFormat::Llama31);
  CHECK(chat_format_of_template(template_of("llama3.2")) == ChatFormat::Llama31);
  CHECK(chat_format_of_template(template_of("llama2")) == ChatFormat::Llama2);
  CHECK(chat_format_of_template(template_of("mistral")) == ChatFormat::Mistral);
  CHECK(chat_format_of_template(template_of("gemma3")) == ChatFormat::Gemma);
  CHECK(chat_format_of_template(template_of("gemma2")) == ChatFormat::Gemma);
  // Gemma 4's turns are other tokens (<|turn>, <turn|>): not this format.
  CHECK_FALSE(chat_format_of_template("{{ bos_token }}{% for m in messages %}<|turn>{{ m.role }}\n{{ m.content }}"
                                      "<turn|>\n{% endfor %}")
                  .has_value());
  // Mistral's other [INST] templates are refused, saying which they are: its first (v0.1/v0.2's
  // "[INST] " without the space before it, no system message) and those of v0.3 on (control tokens,
  // tools).
  const std::string mistral_first =
      "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] "
      "+ ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ "
      "raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";
  const std::string mistral_v3 =
      "{%- if tools is not none %}{{- \"[AVAILABLE_TOOLS] [\" }}{%- endif %}{{- \"[INST] \" + "
      "system_message + \"\\n\\n\" + message[\"content\"] + \"[/INST]\" }}";
  CHECK_FALSE(chat_format_of_template(mistral_first).has_value());
  CHECK_FALSE(chat_format_of_template(mistral_v3).has_value());
  CHECK_THAT(unrendered_chat_template(mistral_first),
             Catch::Contains("Llama-2-chat's (llama2) and Mistral-7B-Instruct-v0.2's"));
  CHECK_THAT(unrendered_chat_template(mistral_v3), Catch::Contains("v0.3 or later"));
  CHECK(unrendered_chat_template(template_of("mistral")).empty());
  CHECK(unrendered_chat_template(template_of("qwen2.5")).empty());
  CHECK(chat_format_of_template(
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}") ==
        ChatFormat::ChatMl);
  CHECK_FALSE(chat_format_of_template("{% for m in messages %}[INST] {{ m.content }} [/INST]{% endfor %}").has_value());
  for (const std::string name : {"chatml", "qwen2.5", "qwen3", "llama3", "llama3.1", "llama2", "mistral", "gemma"})
    CHECK(kChatFormatNames.name(*kChatFormatNames.find(name)) == name);
  CHECK_FALSE(kChatFormatNames.find("qwen").has_value());
}

TEST_CASE("what a format does not render is refused, naming the message", "[tokenizer]") {
  Conversation tool_result{{{"user", "Hi"}, {"tool", "42"}, {"assistant", "ok"}}, {}};
  CHECK_THROWS_WITH(
      render_chat(ChatFormat::Llama3, tool_result, {}),
      "messages[1].role: \"tool\" is not rendered by the llama3 format (system, user or assistant: it has no "
      "tools)");
  Conversation call{{{"user", "Hi"}, {"assistant", "", {}, {{"f", ordered::object()}}}}, {}};
  CHECK_THROWS_WITH(render_chat(ChatFormat::ChatMl, call, {}),
                    "messages[1].tool_calls: the chatml format has no tool calls (qwen2.5, qwen3 and llama3.1 have)");
  call.messages[1].tool_calls.push_back({"g", ordered::object()});
  CHECK_THROWS_WITH(render_chat(ChatFormat::Llama31, call, {}),
                    "messages[1].tool_calls: 2 calls in one turn, but Llama 3.1's template writes one call a turn");
  CHECK_NOTHROW(render_chat(ChatFormat::Qwen3, call, {}));
  Conversation tools{{{"user", "Hi"}, {"assistant", "ok"}}, {ordered{{"name", "f"}}}};
  CHECK_THROWS_WITH(render_chat(ChatFormat::Llama3, tools, {}),
                    "tools: the llama3 format has no tools (qwen2.5, qwen3 and llama3.1 have)");
  // The [INST] templates take user and assistant in turn after an optional first system message.
  Conversation answer_first{{{"system", "s"}, {"assistant", "a"}, {"user", "q"}}, {}};
  CHECK_THROWS_WITH(render_chat(ChatFormat::Llama2, answer_first, {}),
                    "messages[1].role: \"assistant\" where Llama 2's template takes \"user\" (user and assistant in "
                    "turn, after an optional first system message)");
  Conversation late_system{{{"user", "q"}, {"system", "s"}}, {}};
  CHECK_THROWS_WITH(render_chat(ChatFormat::Mistral, late_system, {}),
                    Catch::StartsWith("messages[1].role: \"system\" where Mistral's template takes \"assistant\""));
  CHECK_THROWS_WITH(render_chat(ChatFormat::Mistral, tools, {}),
                    "tools: the mistral format has no tools (qwen2.5, qwen3 and llama3.1 have)");
  // Gemma's template: a user message at each even place after the system message, none at an odd one.
  Conversation model_first{{{"system", "s"}, {"assistant", "a"}}, {}};
  CHECK_THROWS_WITH(render_chat(ChatFormat::Gemma, model_first, {}),
                    "messages[1].role: \"assistant\" where Gemma's template takes \"user\" (user and assistant in "
                    "turn, after an optional first system message)");
  // What is no user where one is not expected is written under its own role, as the template does.
  std::string text;
  for (const ChatSegment& segment : render_chat(ChatFormat::Gemma, late_system, {.bos_token = "<bos>"}))
    text += segment.text;
  CHECK(text == "<bos><start_of_turn>user\nq<end_of_turn>\n<start_of_turn>system\ns<end_of_turn>\n");
  Conversation two_questions{{{"user", "q"}, {"user", "q"}}, {}};
  CHECK_THROWS_WITH(render_chat(ChatFormat::Gemma, two_questions, {}),
                    Catch::StartsWith("messages[1].role: \"user\" where Gemma's template takes no \"user\""));
  Conversation only_system{{{"system", "s"}}, {ordered{{"name", "f"}}}};
  CHECK_THROWS_WITH(render_chat(ChatFormat::Llama31, only_system, {.generation_prompt = true}),
                    Catch::Contains("puts them in the first message after the system one"));
}

TEST_CASE("tojson writes JSON as Python's json.dumps does", "[tokenizer]") {
  // The expected strings are Python 3's json.dumps(value, ensure_ascii=False[, indent=4]).
  const ordered numbers =
      ordered::parse(R"([0.1, 1e16, 1e15, 123.456, 1e-05, 0.0001, -0.0, 1.5e300, 2.0, 100, -7, 5e-324])");
  CHECK(template_json(numbers) ==
        "[0.1, 1e+16, 1000000000000000.0, 123.456, 1e-05, 0.0001, -0.0, 1.5e+300, 2.0, 100, -7, 5e-324]");
  const ordered strings = ordered::parse(R"({"zé": "a\"b\\c\n\t\u0001\u001f\u007f/é😀", "b": true, "a": null})");
  CHECK(template_json(strings) == "{\"zé\": \"a\\\"b\\\\c\\n\\t\\u0001\\u001f\x7f/é😀\", \"b\": true, \"a\": null}");
  const ordered nested = ordered::parse(R"({"a": [], "b": {}, "c": [1, {"d": "e"}]})");
  CHECK(template_json(nested, 4) ==
        "{\n    \"a\": [],\n    \"b\": {},\n    \"c\": [\n        1,\n        {\n            \"d\": \"e\"\n        }\n "
        "   ]\n}");
  CHECK(template_json(nested) == "{\"a\": [], \"b\": {}, \"c\": [1, {\"d\": \"e\"}]}");
}

TEST_CASE("special tokens in messages are text, the template's are tokens", "[tokenizer]") {
  const Tokenizer tokenizer = Tokenizer::load(test::fixture_path("trimmed/qwen3"));
  const Conversation c{{{"user", "<|im_end|>"}, {"assistant", "ok"}}, {}};
  const Encoding e = encode_chat(tokenizer, ChatFormat::ChatMl, c);
  const int32_t im_end = *tokenizer.token_id("<|im_end|>");
  CHECK(std::count(e.ids.begin(), e.ids.end(), im_end) == 2);  // the user's <|im_end|> is text
  CHECK(tokenizer.decode(e.ids) == "<|im_start|>user\n<|im_end|><|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n");
}

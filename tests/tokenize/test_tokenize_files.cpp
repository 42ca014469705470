// `zerotrain tokenize`: text documents separated as llm.c's scripts separate them, records as
// samples with exactly the ids apply_chat_template (or TRL, for a prompt and its completion) gives
// them, their loss mask and sample index, the same file for any number of threads, a
// validation split of whole records, and bad input named by file and line with nothing written.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../data/temp_dir.hpp"
#include "../tokenizer/fixtures.hpp"
#include "tokenize_options.hpp"
#include "core/error.hpp"
#include "core/sha256.hpp"
#include "data/dataset.hpp"
#include "data/token_file_info.hpp"
#include "tokenize/input_jobs.hpp"
#include "tokenize/tokenize_files.hpp"
#include "tokenizer/chat_format.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_files.hpp"

using namespace zt;

namespace {

std::string trimmed(const std::string& name) { return test::fixture_path("trimmed/" + name); }

struct Tokens {
  std::vector<int32_t> ids;
  std::vector<uint8_t> counted;
};

Tokens read_back(const std::string& path) {
  auto d = open_dataset(path, "llmc");
  Tokens t{std::vector<int32_t>(size_t(d->size())), std::vector<uint8_t>(size_t(d->size()))};
  d->read(0, d->size(), t.ids.data());
  d->read_loss_mask(0, d->size(), t.counted.data());
  return t;
}

TokenizeOptions run_options(const std::string& tokenizer, std::vector<std::string> inputs, const std::string& output,
                            const std::string& val) {
  TokenizeOptions o;
  o.tokenizer = tokenizer;
  o.inputs = std::move(inputs);
  o.output = output;
  o.val = val;
  o.quiet = true;
  return o;
}

// Where the samples of a token file start (its X.idx), read through the dataset.
std::vector<int64_t> sample_offsets_of(const std::string& path) {
  const auto d = open_dataset(path, "llmc");
  return {d->sample_offsets().begin(), d->sample_offsets().end()};
}

TokenizeSummary run(const std::string& tokenizer, std::vector<std::string> inputs, const std::string& output,
                    int threads = 2, const std::string& val = "", size_t job_bytes = size_t(1) << 20) {
  TokenizeOptions o;
  o.job_bytes = job_bytes;
  o.tokenizer = tokenizer;
  o.inputs = std::move(inputs);
  o.output = output;
  o.threads = threads;
  o.val = val;
  o.quiet = true;
  return run_tokenize(o);
}

std::string error_of(const std::string& tokenizer, std::vector<std::string> inputs, const std::string& output,
                     const std::string& val = "", const std::string& chat_format = "") {
  TokenizeOptions o{.tokenizer = tokenizer, .inputs = std::move(inputs), .output = output, .val = val,
                    .chat_format = chat_format, .system = {}, .threads = 1, .quiet = true};
  try {
    run_tokenize(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// The text of the corpus part the trimmed tokenizers cover, as one document.
std::string corpus_text() {
  std::string text;
  const auto corpus = test::read_corpus();
  for (size_t i = 0; i < corpus.size(); i += 3) text += corpus[i].text;
  return text;
}

}  // namespace

TEST_CASE("tokenize: text after the separator, conversations as their template writes them, with their mask",
          "[tokenizer]") {
  TempDir dir;
  const std::string text = dir.write("a.txt", "First document.\nIts second line.\n");
  const std::string lines = dir.write("b.jsonl", R"({"text": "A record of text."}

{"messages": [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello!"}]}
{"conversations": [{"from": "human", "value": "2+2?"}, {"from": "gpt", "value": "4"}]}
)");
  const std::string array = dir.write("c.json", R"([{"instruction": "Say yes", "output": "yes"}])");
  const Tokenizer tokenizer = Tokenizer::load(trimmed("qwen3"));
  const int32_t separator = *tokenizer.token_id("<|endoftext|>");
  const auto summary = run(trimmed("qwen3"), {text, lines, array}, dir.file("out.bin"));
  CHECK(summary.documents == 5);
  CHECK(summary.chats == 3);
  CHECK(summary.separator == "<|endoftext|>");

  Tokens expected;
  auto add_text = [&](const std::string& t) {
    expected.ids.push_back(separator);
    for (int32_t id : tokenizer.encode(t)) expected.ids.push_back(id);
    expected.counted.resize(expected.ids.size(), 1);
  };
  // A conversation's sample is the template's ids alone: no separator before it.
  auto add_chat = [&](const std::vector<ChatMessage>& messages) {
    std::vector<TextSegment> views;
    const auto segments = render_chat(ChatFormat::Qwen3, {messages, {}}, {});
    for (const ChatSegment& s : segments) views.push_back({s.text, s.template_text, s.counted});
    tokenizer.encode(views, expected.ids, expected.counted);
  };
  add_text("First document.\nIts second line.\n");
  add_text("A record of text.");
  add_chat({{"user", "Hi?"}, {"assistant", "Hello!"}});
  add_chat({{"user", "2+2?"}, {"assistant", "4"}});
  add_chat({{"user", "Say yes"}, {"assistant", "yes"}});
  const Tokens got = read_back(dir.file("out.bin"));
  CHECK(got.ids == expected.ids);
  CHECK(got.counted == expected.counted);
  CHECK(std::filesystem::exists(dir.file("out.mask")));
  // What counts is the answers: "Hello!<|im_end|>" after its empty thinking block.
  std::vector<int32_t> answer;
  for (size_t i = 0; i < got.ids.size(); ++i)
    if (got.counted[i] && i > 20) answer.push_back(got.ids[i]);
  CHECK(tokenizer.decode(answer).starts_with("<think>\n\n</think>\n\nHello!<|im_end|><think>"));
}

TEST_CASE("tokenize: JSON lines under any name are read as records; text names stay text", "[tokenizer]") {
  TempDir dir;
  const std::string records =
      R"({"messages": [{"role": "user", "content": "Hi?"}, {"role": "assistant", "content": "Hello!"}]}
{"text": "A record of text."}
)";
  run(trimmed("qwen3"), {dir.write("chat.jsonl", records)}, dir.file("jsonl.bin"));
  const Tokens expected = read_back(dir.file("jsonl.bin"));
  REQUIRE(std::filesystem::exists(dir.file("jsonl.mask")));
  for (const char* name : {"chat.ndjson", "chat.arrow", "chat", "train-00000-of-00001.data"}) {
    INFO(name);
    CHECK(inspect_input(dir.write(name, records)).by_content == (std::string(name) != "chat.ndjson"));
    run(trimmed("qwen3"), {dir.file(name)}, dir.file("out.bin"));
    const Tokens got = read_back(dir.file("out.bin"));
    CHECK(got.ids == expected.ids);
    CHECK(got.counted == expected.counted);
  }
  // A .txt name keeps the file one text document (with a warning): JSON syntax and all.
  const DataInput txt = inspect_input(dir.write("chat.txt", records));
  CHECK(txt.kind == DataInput::Text);
  CHECK(txt.looks_like_records);
  run(trimmed("qwen3"), {txt.path}, dir.file("txt.bin"));
  CHECK(read_back(dir.file("txt.bin")).ids.size() > expected.ids.size());
  CHECK_FALSE(std::filesystem::exists(dir.file("txt.mask")));
  // What zerotrain cannot read is refused by name, nothing written.
  CHECK_THAT(error_of(trimmed("qwen3"), {dir.write("real.arrow", std::string("ARROW1\0\0rest", 12))},
                      dir.file("arrow.bin")),
             Catch::Contains("real.arrow: an Apache Arrow file") && Catch::Contains("to_json"));
  CHECK_THAT(error_of(trimmed("qwen3"), {dir.file("jsonl.bin")}, dir.file("again.bin")),
             Catch::Contains("already a token file"));
  CHECK_FALSE(std::filesystem::exists(dir.file("arrow.bin")));
}

TEST_CASE("tokenize: the token files record the tokenizer that made them", "[tokenizer]") {
  TempDir dir;
  run(trimmed("llama3"), {dir.write("a.txt", "Hello world")}, dir.file("a.bin"), 1, "50%");
  for (const char* name : {"a.bin", "a.val.bin"}) {
    INFO(name);
    const auto data = open_dataset(dir.file(name), "llmc");
    const auto info = read_token_file_info(dir.file(name), data->size());
    REQUIRE(info);
    const TokenizerIdentity& t = info->tokenizer;
    CHECK(t.source == std::filesystem::absolute(trimmed("llama3")).lexically_normal().string());
    CHECK(t.kind == "byte-level BPE");
    CHECK(t.vocab_size == 128256);
    REQUIRE(t.files.size() == 1);
    CHECK(t.files[0].role == "tokenizer.json");
    CHECK(t.files[0].sha256 == sha256_of_file(trimmed("llama3") + "/tokenizer.json"));
    CHECK(same_tokenizer(t, identify_tokenizer(trimmed("llama3"))));
    CHECK_FALSE(same_tokenizer(t, identify_tokenizer(trimmed("qwen3"))));
  }
  // GPT-2's pair of files, given by either of them.
  const TokenizerIdentity gpt2 = identify_tokenizer(trimmed("gpt2") + "/merges.txt");
  REQUIRE(gpt2.files.size() == 2);
  CHECK(same_tokenizer(gpt2, identify_tokenizer(trimmed("gpt2"))));
}

TEST_CASE("tokenize: llm.c's separator and token size per tokenizer; no mask for text", "[tokenizer]") {
  TempDir dir;
  const std::string text = dir.write("a.txt", "Hello world");
  const std::pair<const char*, std::pair<const char*, int>> cases[] = {
      {"gpt2", {"<|endoftext|>", 2}}, {"llama3", {"<|begin_of_text|>", 4}}, {"llama2", {"<s>", 2}}};
  for (const auto& [name, expected] : cases) {
    INFO(name);
    const auto summary = run(trimmed(name), {text}, dir.file(std::string(name) + ".bin"));
    CHECK(summary.separator == expected.first);
    const auto size = std::filesystem::file_size(dir.file(std::string(name) + ".bin"));
    CHECK(size == 1024 + size_t(expected.second) * size_t(summary.tokens));
    CHECK_FALSE(std::filesystem::exists(dir.file(std::string(name) + ".mask")));
    const Tokenizer tokenizer = Tokenizer::load(trimmed(name));
    std::vector<int32_t> ids = {*tokenizer.token_id(expected.first)};
    tokenizer.encode("Hello world", ids);
    CHECK(read_back(dir.file(std::string(name) + ".bin")).ids == ids);
  }
}

TEST_CASE("tokenize: a big document is cut where the tokenizer allows, with the ids of the whole", "[tokenizer]") {
  const std::string text = corpus_text();
  for (const char* name : {"gpt2", "llama3", "qwen3", "llama2"}) {
    INFO(name);
    const Tokenizer tokenizer = Tokenizer::load(trimmed(name));
    TempDir dir;
    const std::string path = dir.write("big.txt", text);
    const std::vector<DataInput> inputs = {inspect_input(path)};
    JobReader reader(inputs, tokenizer, 64 << 10);
    std::vector<int32_t> pieces;
    size_t jobs = 0;
    while (auto job = reader.next()) {
      CHECK(job->continuation == (jobs > 0));
      tokenizer.encode(job->bytes, pieces, {.continuation = job->continuation});
      ++jobs;
    }
    CHECK(jobs > 8);
    CHECK(pieces == tokenizer.encode(text));
  }
}

TEST_CASE("tokenize: the same files for any number of threads; --val takes a seeded sample of whole records",
          "[tokenizer]") {
  TempDir dir;
  const std::string big = dir.write("big.txt", corpus_text() + corpus_text());
  std::string records;
  for (int i = 0; i < 2000; ++i)
    records += fmt::format(
        R"({{"messages": [{{"role": "user", "content": "Q{}"}}, {{"role": "assistant", "content": "A{}"}}]}})"
        "\n{{\"text\": \"record {}\"}}\n",
        i, i * i, i);
  const std::string chats = dir.write("chats.jsonl", records);
  // Jobs of 8 KB: a few hundred of them, done out of order by three threads, written in order.
  run(trimmed("llama3"), {big, chats}, dir.file("one.bin"), 1, "", 8192);
  const auto summary = run(trimmed("llama3"), {big, chats}, dir.file("three.bin"), 3, "", 8192);
  CHECK(summary.documents == 1 + 4000);
  CHECK(summary.chats == 2000);
  const Tokens one = read_back(dir.file("one.bin")), three = read_back(dir.file("three.bin"));
  CHECK(one.ids == three.ids);
  CHECK(one.counted == three.counted);
  CHECK(int64_t(one.ids.size()) == summary.tokens);
  // Conversations came: every document is a sample, each starting with <|begin_of_text|>: the
  // separator before a text, what Llama 3's template writes first in a conversation.
  const std::vector<int64_t> starts = sample_offsets_of(dir.file("one.bin"));
  REQUIRE(starts.size() == 4001 + 1);
  CHECK(sample_offsets_of(dir.file("three.bin")) == starts);
  for (size_t d = 0; d + 1 < starts.size(); ++d) REQUIRE(one.ids[size_t(starts[d])] == 128000);

  // 10% of the 4001 documents, whole, in their order; the rest, in theirs, stay.
  const auto split = run(trimmed("llama3"), {big, chats}, dir.file("split.bin"), 2, "10%");
  CHECK(split.val_documents == 400);
  const Tokens train = read_back(dir.file("split.bin")), val = read_back(dir.file("split.val.bin"));
  CHECK(int64_t(val.ids.size()) == split.val_tokens);
  const std::vector<int64_t> val_starts = sample_offsets_of(dir.file("split.val.bin"));
  const std::vector<int64_t> train_starts = sample_offsets_of(dir.file("split.bin"));
  REQUIRE(val_starts.size() == 400 + 1);
  REQUIRE(train_starts.size() == 3601 + 1);
  // Each document of one.bin is found whole, once, in one of the two, in the same order.
  const auto document = [](const Tokens& t, const std::vector<int64_t>& at, size_t d) {
    return std::vector<int32_t>(t.ids.begin() + at[d], t.ids.begin() + at[d + 1]);
  };
  size_t in_train = 0, in_val = 0;
  std::vector<size_t> moved;
  for (size_t d = 0; d + 1 < starts.size(); ++d) {
    const std::vector<int32_t> doc = document(one, starts, d);
    if (in_val < 400 && doc == document(val, val_starts, in_val)) {
      moved.push_back(d);
      ++in_val;
    } else {
      REQUIRE(doc == document(train, train_starts, in_train));
      ++in_train;
    }
  }
  CHECK(in_val == 400);
  CHECK(in_train == 3601);
  // A sample from all over the file, not its tail, and another for another seed.
  CHECK(moved.front() < 1000);
  CHECK(moved.back() > 3000);
  CHECK(std::filesystem::exists(dir.file("split.val.mask")));
  CHECK(val.counted.back() == 1);  // a text's last token, or an answer's <|eot_id|>
  auto reseeded = run_options(trimmed("llama3"), {big, chats}, dir.file("other.bin"), "10%");
  reseeded.seed = 7;
  run_tokenize(reseeded);
  CHECK(sample_offsets_of(dir.file("other.val.bin")) != val_starts);
  run_tokenize(run_options(trimmed("llama3"), {big, chats}, dir.file("again.bin"), "10%"));
  CHECK(read_back(dir.file("again.val.bin")).ids == val.ids);
}

TEST_CASE("tokenize: text alone has no samples; one text file's --val takes its last tokens", "[tokenizer]") {
  TempDir dir;
  const std::string text = dir.write("a.txt", corpus_text());
  const auto split = run(trimmed("llama3"), {text}, dir.file("t.bin"), 2, "10%");
  CHECK(split.val_documents == 0);
  CHECK(split.val_tokens == std::llround(double(split.tokens) / 10));
  CHECK(!std::filesystem::exists(dir.file("t.idx")));
  CHECK(!std::filesystem::exists(dir.file("t.val.idx")));
  run(trimmed("llama3"), {text}, dir.file("whole.bin"));
  std::vector<int32_t> joined = read_back(dir.file("t.bin")).ids;
  const std::vector<int32_t> val = read_back(dir.file("t.val.bin")).ids;
  joined.insert(joined.end(), val.begin(), val.end());
  CHECK(joined == read_back(dir.file("whole.bin")).ids);
}

TEST_CASE("tokenize: bad input is named by file and line, and nothing is written", "[tokenizer]") {
  TempDir dir;
  const std::string good = dir.write("good.jsonl", "{\"text\": \"fine\"}\n");
  const std::string bad_json = dir.write("bad.jsonl", "{\"text\": \"fine\"}\n\n{\"text\": oops}\n");
  const std::string bad_field = dir.write("field.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": 1}]}\n");
  const std::string bad_utf8 = dir.write("latin1.txt", std::string("caf\xE9 au lait"));
  const std::string chat = dir.write(
      "chat.jsonl", R"({"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]})");
  const std::string out = dir.file("out.bin");
  const std::string qwen = trimmed("qwen3");
  CHECK_THAT(error_of(qwen, {good, bad_json}, out), Catch::StartsWith(bad_json + ":3: not valid JSON: "));
  CHECK(error_of(qwen, {bad_field}, out) == bad_field + ":1: messages[0].content: expected a string, got number");
  CHECK(error_of(qwen, {bad_utf8}, out) == bad_utf8 + ": not UTF-8 at byte offset 3");
  CHECK_THAT(error_of(trimmed("gpt2"), {chat}, out),
             Catch::StartsWith(chat + ":1: a conversation, but the tokenizer") && Catch::Contains("--chat-format"));
  CHECK(error_of(qwen, {good}, out, "", "vicuna") ==
        "--chat-format vicuna: expected one of chatml, qwen2.5, qwen3, llama3, llama3.1, llama2, mistral, "
        "gemma");
  CHECK_THAT(error_of(trimmed("gpt2"), {good}, out, "", "llama3"), Catch::Contains("has no <|start_header_id|> token"));
  CHECK(error_of(qwen, {good}, out, "0%") ==
        "--val 0%: expected a percentage of the documents above 0 and below 100, such as 5%");
  CHECK(error_of(qwen, {good}, out, "5") ==
        "--val 5: expected a percentage of the documents above 0 and below 100, such as 5%");
  CHECK_THAT(error_of(qwen, {good}, out, "1%"), Catch::Contains("leave 0 for validation"));
  CHECK(error_of(qwen, {good}, good) == "-o " + good + ": " + good + " would overwrite the input " + good);
  CHECK(error_of(qwen, {dir.file("none.txt")}, out) ==
        dir.file("none.txt") + ": cannot read: No such file or directory");
  CHECK(error_of(qwen, {good}, dir.file("no/dir/out.bin")) ==
        "-o " + dir.file("no/dir/out.bin") + ": the directory " + dir.file("no/dir") + " does not exist");
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    CHECK_THAT(e.path().string(), !Catch::Contains("out."));  // no output, no temporary
}

namespace {

using test::options_for;

// What a conversation writes: the template's ids and which count, nothing before them.
Tokens expected_chat(const Tokenizer& tokenizer, ChatFormat format, const Conversation& c) {
  Tokens t;
  std::vector<TextSegment> views;
  const auto segments = render_chat(format, c, {});
  for (const ChatSegment& s : segments) views.push_back({s.text, s.template_text, s.counted});
  tokenizer.encode(views, t.ids, t.counted);
  return t;
}

void add(Tokens& to, const Tokens& piece) {
  to.ids.insert(to.ids.end(), piece.ids.begin(), piece.ids.end());
  to.counted.insert(to.counted.end(), piece.counted.begin(), piece.counted.end());
}

}  // namespace

TEST_CASE("tokenize: prompt-completion, tokens already made, --system and --train-on", "[tokenizer]") {
  TempDir dir;
  const std::string records =
      dir.write("mixed.jsonl", R"({"prompt": "The capital of France is", "completion": " Paris."}
{"input_ids": [9707, 11, 1879, 0, 0], "labels": [-100, 11, 1879, -100, -100], "attention_mask": [1, 1, 1, 0, 0]}
{"messages": [{"role": "user", "content": "1"}, {"role": "assistant", "content": "a"}, {"role": "user", )"
    R"("content": "2"}, {"role": "assistant", "content": "b"}]}
{"messages": [{"role": "system", "content": "Own."}, {"role": "user", "content": "3"}, {"role": "assistant", )"
    R"("content": "c", "loss": true}, {"role": "user", "content": "4"}, {"role": "assistant", "content": "d"}]}
)");
  TokenizeOptions o = options_for(trimmed("qwen2.5"), {records}, dir.file("out.bin"));
  o.system = "Be terse.";
  o.train_on = "last";
  const TokenizeSummary summary = run_tokenize(o);
  CHECK(summary.documents == 4);
  CHECK(summary.chats == 2);

  const Tokenizer tokenizer = Tokenizer::load(trimmed("qwen2.5"));
  Tokens expected;
  // The prompt and the completion as one text (no begin-of-text token: Qwen's tokenizer adds
  // none), the end-of-text token (eos_token: <|im_end|>) after it.
  const std::vector<TextSegment> text = {{"The capital of France is", false, false}, {" Paris.", false, true}};
  tokenizer.encode(text, expected.ids, expected.counted);
  add(expected, {{*tokenizer.token_id("<|im_end|>")}, {1}});
  add(expected, {{9707, 11, 1879}, {0, 1, 1}});  // as given, less the padding; the first never counts
  add(expected, expected_chat(tokenizer, ChatFormat::Qwen25,
                              {{{"system", "Be terse."}, {"user", "1"}, {"assistant", "a", {}, {}, false},
                                {"user", "2"}, {"assistant", "b"}}, {}}));
  add(expected,
      expected_chat(tokenizer, ChatFormat::Qwen25,
                    {{{"system", "Own."}, {"user", "3"}, {"assistant", "c"}, {"user", "4"}, {"assistant", "d"}}, {}}));
  const Tokens got = read_back(dir.file("out.bin"));
  CHECK(got.ids == expected.ids);
  CHECK(got.counted == expected.counted);
  CHECK(tokenizer.decode(std::vector<int32_t>(got.ids.begin(), got.ids.begin() + 12))
            .starts_with("The capital of France is Paris.<|im_end|>"));
}

TEST_CASE("tokenize: --skip-invalid leaves bad records out and counts them; without it, the first is refused",
          "[tokenizer]") {
  TempDir dir;
  const std::string good_chat =
      R"({"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}]})";
  const std::string lines = dir.write(
      "some_bad.jsonl",
      good_chat + "\n" + "{\"text\": oops}\n" +
          R"({"messages": [{"role": "user", "content": "Q"}, {"role": "tool", "content": "r"}, {"role": )"
    R"("assistant", "content": "A"}]})"
          "\n" +
          R"({"input_ids": [1, 999999]})"
          "\n" +
          R"({"text": "fine"})"
          "\n");
  const std::string only_good = dir.write("good.jsonl", good_chat + "\n" + R"({"text": "fine"})" "\n");
  const std::string llama = trimmed("llama3");
  CHECK_THAT(error_of(llama, {lines}, dir.file("out.bin")), Catch::StartsWith(lines + ":2: not valid JSON: "));
  TokenizeOptions o = options_for(llama, {lines}, dir.file("out.bin"));
  o.skip_invalid = true;
  const TokenizeSummary summary = run_tokenize(o);
  CHECK(summary.skipped == 3);
  // Each is named, in order, with what was wrong.
  REQUIRE(summary.skipped_first.size() == 3);
  CHECK_THAT(summary.skipped_first[0], Catch::StartsWith(lines + ":2: not valid JSON: "));
  CHECK_THAT(summary.skipped_first[1], Catch::StartsWith(lines + ":3: messages[1].role: \"tool\" is not rendered"));
  CHECK_THAT(summary.skipped_first[2], Catch::StartsWith(lines + ":4: input_ids: the id 999999 is outside"));
  CHECK(summary.documents == 2);
  run(llama, {only_good}, dir.file("good.bin"));
  const Tokens got = read_back(dir.file("out.bin")), expected = read_back(dir.file("good.bin"));
  CHECK(got.ids == expected.ids);
  CHECK(got.counted == expected.counted);
  // Each bad line alone names itself.
  o.skip_invalid = false;
  o.inputs = {dir.write(
      "tool.jsonl",
      std::string(
          R"({"messages": [{"role": "user", "content": "Q"}, {"role": "tool", "content": "r"}, {"role": )"
    R"("assistant", "content": "A"}]})"))};
  CHECK_THROWS_WITH(run_tokenize(o), o.inputs[0] +
                                         ":1: messages[1].role: \"tool\" is not rendered by the llama3 format "
                                         "(system, user or assistant: it has no tools)");
  o.inputs = {dir.write("ids.jsonl", std::string(R"({"input_ids": [1, 999999]})"))};
  CHECK_THROWS_WITH(run_tokenize(o),
                    Catch::StartsWith(o.inputs[0] + ":1: input_ids: the id 999999 is outside the tokenizer's"));
}

TEST_CASE("tokenize: --skip-invalid names the first 20 bad records, in order, and counts the rest", "[tokenizer]") {
  TempDir dir;
  std::string records;
  for (int i = 1; i <= 300; ++i)
    records += i % 10 == 0 ? "{\"text\": oops}\n" : fmt::format("{{\"text\": \"record {}\"}}\n", i);
  // Jobs of 256 bytes, out of order on three threads: the names still come in the file's order.
  TokenizeOptions o = options_for(trimmed("qwen3"), {dir.write("bad.jsonl", records)}, dir.file("out.bin"));
  o.skip_invalid = true;
  o.threads = 3;
  o.job_bytes = 256;
  const TokenizeSummary summary = run_tokenize(o);
  CHECK(summary.skipped == 30);
  CHECK(summary.documents == 270);
  REQUIRE(summary.skipped_first.size() == 20);
  for (size_t k = 0; k < 20; ++k)
    CHECK_THAT(summary.skipped_first[k],
               Catch::StartsWith(fmt::format("{}:{}: not valid JSON", o.inputs[0], 10 * (k + 1))));
}

namespace {

using ordered = nlohmann::ordered_json;

// The samples of a token file, each with its tokens and which count.
std::vector<Tokens> samples_of(const std::string& path) {
  const Tokens all = read_back(path);
  const std::vector<int64_t> at = sample_offsets_of(path);
  std::vector<Tokens> out;
  for (size_t k = 0; k + 1 < at.size(); ++k)
    out.push_back({{all.ids.begin() + at[k], all.ids.begin() + at[k + 1]},
                   {all.counted.begin() + at[k], all.counted.begin() + at[k + 1]}});
  return out;
}

}  // namespace

TEST_CASE("tokenize: each conversation's sample is apply_chat_template's ids, in every format", "[tokenizer]") {
  const ordered fixture = ordered::parse(test::read_file(test::fixture_path("chat.json")));
  for (const auto& [name, expected] : fixture["formats"].items()) {
    INFO(name);
    TempDir dir;
    // The conversations the format renders (the others have tools, or its template refuses them).
    std::string records;
    std::vector<size_t> rendered;
    for (size_t c = 0; c < fixture["conversations"].size(); ++c)
      if (!expected["ids"][c].is_null()) records += fixture["conversations"][c].dump() + "\n", rendered.push_back(c);
    run(test::chat_tokenizer(nlohmann::json::parse(expected.dump()), dir.path), {dir.write("chats.jsonl", records)},
        dir.file("out.bin"));
    const std::vector<Tokens> samples = samples_of(dir.file("out.bin"));
    REQUIRE(samples.size() == rendered.size());
    for (size_t k = 0; k < rendered.size(); ++k) {
      INFO("conversation " << rendered[k]);
      CHECK(samples[k].ids == expected["ids"][rendered[k]].get<std::vector<int32_t>>());
      CHECK(samples[k].counted == expected["counted"][rendered[k]].get<std::vector<uint8_t>>());
    }
  }
}

TEST_CASE("tokenize: a Llama 2 or Mistral template is told by its text; another [INST] template is refused, saying "
          "which", "[tokenizer]") {
  const ordered fixture = ordered::parse(test::read_file(test::fixture_path("chat.json")));
  TempDir dir;
  const std::string chat = dir.write("chat.jsonl", fixture["conversations"][1].dump() + "\n");
  for (const char* name : {"llama2", "mistral"}) {
    INFO(name);
    run(test::chat_tokenizer(nlohmann::json::parse(fixture["formats"][name].dump()), dir.path), {chat},
        dir.file("out.bin"));
    CHECK(read_back(dir.file("out.bin")).ids == fixture["formats"][name]["ids"][1].get<std::vector<int32_t>>());
  }
  // Mistral's first template: "[INST] " without the space before it, no system message.
  dir.write("first.jinja",
            "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
            "message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + "
            "eos_token}}{% endif %}{% endfor %}");
  const std::string first =
      test::chat_tokenizer({{"tokenizer", "trimmed/llama2"}, {"template", dir.file("first.jinja")}}, dir.path);
  CHECK_THAT(error_of(first, {chat}, dir.file("first.bin")),
             Catch::StartsWith(chat + ":1: a conversation, but the tokenizer's chat template (") &&
                 Catch::Contains("an [INST] template other than Llama-2-chat's (llama2) and Mistral-7B-Instruct-v0.2's "
                                 "(mistral)"));
  CHECK_FALSE(std::filesystem::exists(dir.file("first.bin")));
}

TEST_CASE("tokenize: a prompt and its completion are the ids TRL's SFTTrainer gives them", "[tokenizer]") {
  const ordered fixture = ordered::parse(test::read_file(test::fixture_path("chat.json")))["prompt_completion"];
  std::string records;
  for (const auto& r : fixture["records"]) records += r.dump() + "\n";
  for (const auto& [name, expected] : fixture["tokenizers"].items()) {
    INFO(name);
    TempDir dir;
    run(test::fixture_path(expected["tokenizer"].get<std::string>()), {dir.write("pc.jsonl", records)},
        dir.file("out.bin"));
    const std::vector<Tokens> samples = samples_of(dir.file("out.bin"));
    REQUIRE(samples.size() == fixture["records"].size());
    for (size_t k = 0; k < samples.size(); ++k) {
      INFO("record " << k);
      CHECK(samples[k].ids == expected["ids"][k].get<std::vector<int32_t>>());
      CHECK(samples[k].counted == expected["counted"][k].get<std::vector<uint8_t>>());
    }
  }
}

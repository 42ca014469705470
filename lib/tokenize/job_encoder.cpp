#include "tokenize/job_encoder.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace zt {

namespace {

// One document's tokens; counted empty when every one counts.
struct Piece {
  std::vector<int32_t> ids;
  std::vector<uint8_t> counted;
};

// A piece that continues a text cut into jobs starts no document.
void append(Encoded& out, Piece piece, bool starts_document = true) {
  if (starts_document) out.starts.push_back(int64_t(out.tokens.size()));
  if (piece.counted.empty()) {
    out.tokens.insert(out.tokens.end(), piece.ids.begin(), piece.ids.end());
    if (!out.counted.empty()) out.counted.resize(out.tokens.size(), 1);
    return;
  }
  if (out.counted.empty()) out.counted.assign(out.tokens.size(), 1);
  out.tokens.insert(out.tokens.end(), piece.ids.begin(), piece.ids.end());
  out.counted.insert(out.counted.end(), piece.counted.begin(), piece.counted.end());
}

Piece text_piece(const JobContext& c, const std::string& text, bool continuation) {
  Piece p;
  if (!continuation) p.ids.push_back(c.separator);
  c.tokenizer.encode(text, p.ids, {.special_tokens = false, .continuation = continuation});
  return p;
}

// A conversation is a sample: its ids are what the chat template writes (Llama 3's templates write
// <|begin_of_text|> themselves), as apply_chat_template gives them, with no separator before them
// (the separator belongs to streams of text). Nothing predicts a sample's first token: it never counts.
Piece chat_piece(const JobContext& c, const Conversation& conversation) {
  const auto segments = render_chat(*c.chat_format, conversation, c.chat_options);
  Piece p;
  c.tokenizer.encode(text_segments(segments), p.ids, p.counted);
  if (!p.counted.empty()) p.counted[0] = 0;
  return p;
}

// TRL's standard prompt-completion, as its SFTTrainer tokenizes it: the prompt and the completion
// encoded as one text, as the tokenizer encodes a text (after the begin-of-text token its
// post-processor adds: Llama 2's <s>), then the end-of-text token (once: a completion that ends with
// its text ends with it); the ids from where the prompt's own ids end count (its completion mask),
// that token included.
Piece prompt_completion_piece(const JobContext& c, const Document& d) {
  std::vector<int32_t> bos;
  if (auto id = c.tokenizer.post_processor_bos()) bos.push_back(*id);
  std::vector<int32_t> prompt = bos;
  c.tokenizer.encode(d.prompt, prompt);
  std::string_view completion = d.completion;
  if (const std::string eos = c.tokenizer.decode(std::vector<int32_t>{c.end_of_text}); completion.ends_with(eos))
    completion.remove_suffix(eos.size());
  Piece p{std::move(bos), {}};
  c.tokenizer.encode(d.prompt + std::string(completion), p.ids);
  p.ids.push_back(c.end_of_text);
  for (size_t i = 0; i < p.ids.size(); ++i) p.counted.push_back(i > 0 && i >= prompt.size() ? 1 : 0);
  return p;
}

Piece tokens_piece(const JobContext& c, const Document& d) {
  for (size_t i = 0; i < d.ids.size(); ++i)
    if (d.ids[i] >= c.tokenizer.vocab_size())
      fail("input_ids: the id {} is outside the tokenizer's {} ids ({})", d.ids[i], c.tokenizer.vocab_size(),
           c.tokenizer.source());
  return {d.ids, d.counted};
}

Piece piece_of(const JobContext& c, const Document& d) {
  switch (d.kind) {
    case Document::Text:
      if (size_t bad = unicode::invalid_utf8_offset(d.text); bad != std::string::npos)
        fail("text: not UTF-8 at byte {}", bad);
      return text_piece(c, d.text, false);
    case Document::Chat: return chat_piece(c, d.conversation);
    case Document::PromptCompletion: return prompt_completion_piece(c, d);
    case Document::Tokens: return tokens_piece(c, d);
  }
  return {};
}

// TRL's DPOTrainer on a preference pair: the prompt's ids (text: as the tokenizer encodes a text,
// special tokens and its begin-of-text token included; conversations: the chat template with the
// generation prompt), the ids of prompt + chosen and of prompt + rejected (text: with the eos token's
// text after the answer, where it does not end with it), and the prompt cut where either of those
// leaves it (a token merging across the boundary, a template that writes the prompt otherwise
// before an answer). Each sample is prompt + answer, and the answer's ids count.
struct PairPieces {
  Piece chosen, rejected;
};

PairPieces pair_pieces(const JobContext& c, const PreferencePair& p) {
  std::vector<int32_t> prompt, chosen, rejected;
  if (p.text) {
    std::vector<int32_t> bos;
    if (auto id = c.tokenizer.post_processor_bos()) bos.push_back(*id);
    const std::string eos = c.tokenizer.decode(std::vector<int32_t>{c.end_of_text});
    auto encode = [&](const std::string& text, std::vector<int32_t>& ids) {
      ids = bos;
      c.tokenizer.encode(text, ids, {.special_tokens = true});
    };
    auto with_eos = [&](const std::string& answer) { return answer.ends_with(eos) ? answer : answer + eos; };
    encode(p.prompt, prompt);
    encode(p.prompt + with_eos(p.chosen), chosen);
    encode(p.prompt + with_eos(p.rejected), rejected);
  } else {
    auto render = [&](const std::vector<ChatMessage>& answer, bool generation_prompt, std::vector<int32_t>& ids) {
      Conversation conversation = p.prompt_chat;
      conversation.messages.insert(conversation.messages.end(), answer.begin(), answer.end());
      ChatOptions options = c.chat_options;
      options.generation_prompt = generation_prompt;
      const auto segments = render_chat(*c.chat_format, conversation, options);
      std::vector<uint8_t> counted;
      c.tokenizer.encode(text_segments(segments), ids, counted);
    };
    render({}, true, prompt);
    render(p.chosen_chat, c.template_prompts_always, chosen);
    render(p.rejected_chat, c.template_prompts_always, rejected);
  }
  auto shared = [&](const std::vector<int32_t>& ids) {
    return size_t(std::mismatch(prompt.begin(), prompt.end(), ids.begin(), ids.end()).first - prompt.begin());
  };
  const size_t prompt_length = std::min(shared(chosen), shared(rejected));
  auto piece = [&](std::vector<int32_t> ids) {
    if (ids.size() <= prompt_length) fail("an answer with no tokens after the prompt's");
    Piece out{std::move(ids), {}};
    for (size_t i = 0; i < out.ids.size(); ++i) out.counted.push_back(i > 0 && i >= prompt_length ? 1 : 0);
    return out;
  };
  return {piece(std::move(chosen)), piece(std::move(rejected))};
}

void skip_or_fail(Encoded& out, const JobContext& c, const std::string& where, const std::string& what) {
  if (!c.skip_invalid) refuse("{}: {}", where, what);
  if (out.skipped_first.size() < kSkippedListed) out.skipped_first.push_back(where + ": " + what);
  ++out.skipped;
}

// A preference pair, both samples or, when it is bad, neither.
void add_pair(Encoded& out, const JobContext& c, const nlohmann::ordered_json& record, PreferenceForm form,
              const std::string& where) {
  if (!preference_form_is_text(form) && !c.chat_format)
    refuse("{}: {}", where, c.chat_format_problem);
  PairPieces pieces;
  try {
    pieces = pair_pieces(c, preference_pair_of(record, form, c.record_options.system));
  } catch (const Error& e) {
    skip_or_fail(out, c, where, e.what());
    return;
  }
  out.documents += 2;
  out.sample_records += 2;
  ++out.pairs;
  out.chats += !preference_form_is_text(form);
  append(out, std::move(pieces.chosen));
  append(out, std::move(pieces.rejected));
}

// A record's document (or pair), added whole or, when it is bad, not at all. A conversation without
// a chat format to render it in is no record's fault: that fails whatever skip_invalid says; so does a
// record of another form than its file's.
void add_record(Encoded& out, const JobContext& c, const nlohmann::ordered_json& record, size_t file,
                const std::string& where) {
  const FileForm file_form = file < c.forms.size() ? c.forms[file] : FileForm{};
  const PreferenceForm form = preference_form_of(record);
  auto mixed = [&] {
    refuse("{}: {}, but the file's first record ({}) is {}: a file holds records of one form", where,
         preference_form_name(form), file_form.where, preference_form_name(file_form.form));
  };
  if (form != PreferenceForm::None) {
    if (form != file_form.form) mixed();
    return add_pair(out, c, record, form, where);
  }
  Document d;
  Piece piece;
  try {
    d = document_of_record(record, c.record_options);
  } catch (const Error& e) {
    // In a file of pairs, a record that is nothing at all is a bad pair.
    skip_or_fail(out, c, where,
                 file_form.form == PreferenceForm::None || !record.is_object()
                     ? e.what()
                     : fmt::format("no \"chosen\" or \"rejected\" field: the file holds {}",
                                   preference_form_name(file_form.form)));
    return;
  }
  if (file_form.form != PreferenceForm::None) mixed();
  if (d.kind == Document::Chat && !c.chat_format) refuse("{}: {}", where, c.chat_format_problem);
  try {
    piece = piece_of(c, d);
  } catch (const Error& e) {
    skip_or_fail(out, c, where, e.what());
    return;
  }
  ++out.documents;
  out.chats += d.kind == Document::Chat;
  out.sample_records += d.kind != Document::Text;
  append(out, std::move(piece));
}

void add_line(Encoded& out, const JobContext& c, std::string_view text, size_t file, const std::string& where) {
  nlohmann::ordered_json record;
  try {
    record = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    skip_or_fail(out, c, where, fmt::format("not valid JSON: {}", e.what()));
    return;
  }
  add_record(out, c, record, file, where);
}

}  // namespace

Encoded encode_job(const InputJob& job, const JobContext& c) {
  Encoded out;
  const std::string& path = c.inputs[job.file].path;
  switch (job.kind) {
    case DataInput::Text: {
      if (size_t bad = unicode::invalid_utf8_offset(job.bytes); bad != std::string::npos)
        refuse("{}: not UTF-8 at byte offset {}", path, job.offset + bad);
      append(out, text_piece(c, job.bytes, job.continuation), !job.continuation);
      out.documents = job.continuation ? 0 : 1;  // a document cut in pieces counts with its first
      break;
    }
    case DataInput::JsonLines: {
      uint64_t line = job.first_line;
      for (size_t begin = 0; begin < job.bytes.size(); ++line) {
        size_t end = job.bytes.find('\n', begin);
        if (end == std::string::npos) end = job.bytes.size();
        const std::string_view text(job.bytes.data() + begin, end - begin);
        begin = end + 1;
        if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank lines
        add_line(out, c, text, job.file, fmt::format("{}:{}", path, line));
      }
      break;
    }
    case DataInput::JsonArray:
      for (size_t i = job.first_element; i < job.end_element; ++i)
        add_record(out, c, (*job.array)[i], job.file, fmt::format("{}: element {}", path, i));
      break;
  }
  return out;
}

}  // namespace zt

#include "tokenize/job_encoder.hpp"

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "tokenize/chat_record.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace zt {

namespace {

void add_document(Encoded& out, const JobContext& c, const Document& d, bool continuation) {
  ++out.documents;
  if (!continuation) out.starts.push_back(int64_t(out.tokens.size()));
  if (!d.chat) {
    if (!continuation) out.tokens.push_back(c.separator);
    c.tokenizer.encode(d.text, out.tokens, {.special_tokens = false, .continuation = continuation});
    if (!out.counted.empty()) out.counted.resize(out.tokens.size(), 1);
    return;
  }
  if (!c.chat_format) fail("{}", c.chat_format_problem);
  ++out.chats;
  if (out.counted.empty()) out.counted.assign(out.tokens.size(), 1);
  const auto segments = render_chat(*c.chat_format, d.messages, c.bos_token);
  std::vector<TextSegment> views;
  for (const ChatSegment& s : segments) views.push_back({s.text, s.template_text, s.counted});
  std::vector<int32_t> ids;
  std::vector<uint8_t> counted;
  c.tokenizer.encode(views, ids, counted);
  if (ids.empty() || ids[0] != c.separator) {  // a template that starts with the separator (Llama 3's) has it
    out.tokens.push_back(c.separator);
    out.counted.push_back(0);
  }
  out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
  out.counted.insert(out.counted.end(), counted.begin(), counted.end());
}

void add_record(Encoded& out, const JobContext& c, const nlohmann::json& record, const std::string& where) {
  Document d;
  try {
    d = document_of_record(record);
    if (d.chat) {
      add_document(out, c, d, false);
      return;
    }
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());
  }
  if (size_t bad = unicode::invalid_utf8_offset(d.text); bad != std::string::npos)
    fail("{}: text: not UTF-8 at byte {}", where, bad);
  add_document(out, c, d, false);
}

}  // namespace

Encoded encode_job(const InputJob& job, const JobContext& c) {
  Encoded out;
  const std::string& path = c.inputs[job.file].path;
  switch (job.kind) {
    case DataInput::Text: {
      if (size_t bad = unicode::invalid_utf8_offset(job.bytes); bad != std::string::npos)
        fail("{}: not UTF-8 at byte offset {}", path, job.offset + bad);
      Document d;
      d.text = job.bytes;
      add_document(out, c, d, job.continuation);
      if (job.continuation) out.documents = 0;  // counted with its first piece
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
        const std::string where = fmt::format("{}:{}", path, line);
        nlohmann::json record;
        try {
          record = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
          fail("{}: not valid JSON: {}", where, e.what());
        }
        add_record(out, c, record, where);
      }
      break;
    }
    case DataInput::JsonArray:
      for (size_t i = job.first_element; i < job.end_element; ++i)
        add_record(out, c, (*job.array)[i], fmt::format("{}: element {}", path, i));
      break;
  }
  return out;
}

}  // namespace zt

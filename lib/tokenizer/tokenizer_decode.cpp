// Tokenizer::decode: ids to text through the decoders of tokenizer.json, as tokenizers decodes.
#include <cctype>
#include <string>
#include <vector>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/pipeline.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace zt {
namespace {

using Decoder = Tokenizer::Pipeline::Decoder;
using Tokens = std::vector<std::string>;

std::string joined(const Tokens& tokens) {
  std::string all;
  for (const std::string& t : tokens) all += t;
  return all;
}

void replace_all(std::string& s, const std::string& text, const std::string& replacement) {
  if (text.empty()) return;
  for (size_t at = s.find(text); at != std::string::npos; at = s.find(text, at + replacement.size()))
    s.replace(at, text.size(), replacement);
}

// GPT-2's alphabet back to bytes, all tokens in one.
void decode_byte_level(Tokens& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    auto b = byte_level::bytes_of(t);
    bytes += b ? *b : t;
  }
  tokens.assign(1, std::move(bytes));
}

// Replace, and Metaspace's ▁ back to a space (the first token's dropped where the encoder added it).
void decode_replace(const Decoder& d, Tokens& tokens) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    replace_all(tokens[i], d.text, d.kind == Decoder::Replace ? d.replacement : " ");
    if (d.kind == Decoder::Metaspace && d.strip_first_space && i == 0 && !tokens[0].empty() && tokens[0][0] == ' ')
      tokens[0].erase(0, 1);
  }
}

bool is_byte_token(const std::string& t) {  // <0xXX>
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(uint8_t(t[3])) &&
         std::isxdigit(uint8_t(t[4]));
}

// <0xXX> tokens become their bytes; a run of them that is not UTF-8 becomes one U+FFFD per byte.
void decode_byte_fallback(Tokens& tokens) {
  Tokens out;
  std::string run;
  size_t run_tokens = 0;
  auto end_run = [&] {
    if (run_tokens == 0) return;
    if (unicode::invalid_utf8_offset(run) == std::string::npos) {
      out.push_back(run);
    } else {
      for (size_t k = 0; k < run_tokens; ++k) out.emplace_back("\xEF\xBF\xBD");
    }
    run.clear();
    run_tokens = 0;
  };
  for (std::string& t : tokens) {
    if (is_byte_token(t)) {
      run.push_back(char(std::stoi(t.substr(3, 2), nullptr, 16)));
      ++run_tokens;
    } else {
      end_run();
      out.push_back(std::move(t));
    }
  }
  end_run();
  tokens = std::move(out);
}

// Up to `start` copies of the character off the front of each token and `stop` off its end.
void decode_strip(const Decoder& d, Tokens& tokens) {
  for (std::string& t : tokens) {
    size_t b = 0, e = t.size();
    for (int k = 0; k < d.start && t.compare(b, d.text.size(), d.text) == 0 && b < e; ++k) b += d.text.size();
    for (int k = 0; k < d.stop && e >= b + d.text.size() && t.compare(e - d.text.size(), d.text.size(), d.text) == 0;
         ++k)
      e -= d.text.size();
    t = t.substr(b, e - b);
  }
}

void apply(const Decoder& d, Tokens& tokens) {
  switch (d.kind) {
    case Decoder::ByteLevel: return decode_byte_level(tokens);
    case Decoder::Replace:
    case Decoder::Metaspace: return decode_replace(d, tokens);
    case Decoder::ByteFallback: return decode_byte_fallback(tokens);
    case Decoder::Fuse: return tokens.assign(1, joined(tokens));
    case Decoder::Strip: return decode_strip(d, tokens);
  }
}

}  // namespace

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  if (pipeline_->decodes_bytes_only) {
    std::string out;
    for (int32_t id : ids) {
      if (const AddedToken* t = added_token_of(id)) {
        if (!(skip_special_tokens && t->special)) out += t->content;
      } else {
        out += model_.text_of(id);  // an id outside the vocabulary decodes to nothing, as in Hugging Face
      }
    }
    return out;
  }
  Tokens tokens;
  for (int32_t id : ids) {
    if (const AddedToken* t = added_token_of(id)) {
      if (!(skip_special_tokens && t->special)) tokens.push_back(t->content);
    } else if (!model_.spelling_of(id).empty()) {
      tokens.emplace_back(model_.spelling_of(id));
    }
  }
  for (const Decoder& d : pipeline_->decoders) apply(d, tokens);
  return joined(tokens);
}

}  // namespace zt

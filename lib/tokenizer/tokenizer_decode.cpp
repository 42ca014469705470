// Tokenizer::decode: ids to text through the decoders of tokenizer.json, as tokenizers decodes.
#include <cctype>
#include <string>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/pipeline.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace zt {
namespace {

using Pipeline = Tokenizer::Pipeline;

void replace_all(std::string& s, const std::string& text, const std::string& replacement) {
  if (text.empty()) return;
  for (size_t at = s.find(text); at != std::string::npos; at = s.find(text, at + replacement.size()))
    s.replace(at, text.size(), replacement);
}

}  // namespace

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  const Pipeline& p = *pipeline_;
  auto added = [&](int32_t id) -> const AddedToken* {
    const int32_t k = id >= 0 && size_t(id) < added_index_.size() ? added_index_[size_t(id)] : -1;
    return k >= 0 ? &added_.tokens()[size_t(k)] : nullptr;
  };
  if (p.decodes_bytes_only) {
    std::string out;
    for (int32_t id : ids) {
      if (const AddedToken* t = added(id)) {
        if (!(skip_special_tokens && t->special)) out += t->content;
      } else {
        out += model_.text_of(id);  // an id outside the vocabulary decodes to nothing, as in Hugging Face
      }
    }
    return out;
  }
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    if (const AddedToken* t = added(id)) {
      if (!(skip_special_tokens && t->special)) tokens.push_back(t->content);
    } else if (!model_.spelling_of(id).empty()) {
      tokens.emplace_back(model_.spelling_of(id));
    }
  }
  for (const Pipeline::Decoder& d : p.decoders) {
    switch (d.kind) {
      case Pipeline::Decoder::ByteLevel: {
        std::string bytes;
        for (const std::string& t : tokens) {
          auto b = byte_level::bytes_of(t);
          bytes += b ? *b : t;
        }
        tokens.assign(1, std::move(bytes));
        break;
      }
      case Pipeline::Decoder::Replace:
      case Pipeline::Decoder::Metaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          replace_all(tokens[i], d.text, d.kind == Pipeline::Decoder::Replace ? d.replacement : " ");
          if (d.kind == Pipeline::Decoder::Metaspace && d.strip_first_space && i == 0 && !tokens[0].empty() &&
              tokens[0][0] == ' ')
            tokens[0].erase(0, 1);
        }
        break;
      case Pipeline::Decoder::ByteFallback: {
        // <0xXX> tokens become their bytes; a run of them that is not UTF-8 becomes one U+FFFD per byte.
        std::vector<std::string> out;
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
          if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(uint8_t(t[3])) &&
              std::isxdigit(uint8_t(t[4]))) {
            const char value = char(std::stoi(t.substr(3, 2), nullptr, 16));
            run.push_back(value);
            ++run_tokens;
          } else {
            end_run();
            out.push_back(std::move(t));
          }
        }
        end_run();
        tokens = std::move(out);
        break;
      }
      case Pipeline::Decoder::Fuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case Pipeline::Decoder::Strip:
        for (std::string& t : tokens) {
          size_t b = 0, e = t.size();
          for (int k = 0; k < d.start && t.compare(b, d.text.size(), d.text) == 0 && b < e; ++k) b += d.text.size();
          for (int k = 0; k < d.stop && e >= b + d.text.size() && t.compare(e - d.text.size(), d.text.size(), d.text) == 0; ++k)
            e -= d.text.size();
          t = t.substr(b, e - b);
        }
        break;
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace zt

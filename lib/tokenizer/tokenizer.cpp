#include "tokenizer/tokenizer.hpp"

#include <atomic>
#include <cstring>

#include "core/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/nfc.hpp"
#include "tokenizer/pipeline.hpp"
#include "tokenizer/unicode.hpp"
#include "tokenizer/word_cache.hpp"

namespace zt {
namespace {

using Pipeline = Tokenizer::Pipeline;

// The text of one stretch as it is rewritten by normalizers, and (when tracked) where each of its
// bytes came from in the original stretch.
class Stretch {
public:
  Stretch(std::string_view text, bool track) : view_(text), track_(track) {}
  std::string_view view() const { return view_; }
  uint32_t origin(size_t i) const { return origin_.empty() ? uint32_t(i) : origin_[i]; }

  void prepend(std::string_view text) {
    std::string next;
    next.reserve(text.size() + view_.size());
    next.append(text).append(view_);
    std::vector<uint32_t> from;
    if (track_) {
      from.assign(text.size(), 0);
      for (size_t i = 0; i < view_.size(); ++i) from.push_back(origin(i));
    }
    adopt(std::move(next), std::move(from));
  }
  void replace(std::string_view text, std::string_view replacement) {
    if (text.empty() || view_.find(text) == std::string_view::npos) return;
    std::string next;
    std::vector<uint32_t> from;
    for (size_t i = 0; i < view_.size();) {
      if (view_.compare(i, text.size(), text) == 0) {
        next.append(replacement);
        if (track_) from.insert(from.end(), replacement.size(), origin(i));
        i += text.size();
      } else {
        next.push_back(view_[i]);
        if (track_) from.push_back(origin(i));
        ++i;
      }
    }
    adopt(std::move(next), std::move(from));
  }
  void nfc() {
    if (nfc_quick_yes(view_)) return;
    std::string next;
    std::vector<uint32_t> local, from;
    append_nfc(view_, next, track_ ? &local : nullptr);
    if (track_)
      for (uint32_t k : local) from.push_back(origin(k));
    adopt(std::move(next), std::move(from));
  }

private:
  void adopt(std::string next, std::vector<uint32_t> from) {
    buffer_ = std::move(next);
    view_ = buffer_;
    if (track_) origin_ = std::move(from);
  }
  std::string_view view_;
  std::string buffer_;
  std::vector<uint32_t> origin_;  // empty: each byte came from the same offset
  bool track_;
};

// Calls word(begin, end) for the words of text[begin, end) after splits[level...].
template <typename F>
void for_each_word(const std::vector<Pipeline::Split>& splits, size_t level, std::string_view text, size_t begin,
                   size_t end, F&& word) {
  if (level == splits.size()) {
    if (end > begin) word(begin, end);
    return;
  }
  const Pipeline::Split& s = splits[level];
  const std::string_view part = text.substr(begin, end - begin);
  auto next = [&](size_t b, size_t e) { for_each_word(splits, level + 1, text, begin + b, begin + e, word); };
  switch (s.kind) {
    case Pipeline::Split::Pattern: split(s.pattern, part, next); break;
    case Pipeline::Split::Digits: {
      // Digits stand alone (each, or each run of them); the text between them is a word.
      size_t word_begin = 0;
      bool previous_digit = false;
      for (size_t i = 0; i < part.size();) {
        int len = 0;
        const bool digit = unicode::flags(unicode::decode(part.data() + i, part.size() - i, len)) & unicode::kNumber;
        if (i > 0 && (digit != previous_digit || (digit && s.individual_digits))) next(word_begin, i), word_begin = i;
        previous_digit = digit;
        i += size_t(len);
      }
      next(word_begin, part.size());
      break;
    }
    case Pipeline::Split::BeforeDelimiter: {
      size_t word_begin = 0;
      const size_t d = s.delimiter.size();
      for (size_t at = part.find(s.delimiter, 1); at != std::string_view::npos; at = part.find(s.delimiter, at + 1)) {
        if (s.runs && at >= d && part.compare(at - d, d, s.delimiter) == 0) continue;
        next(word_begin, at);
        word_begin = at;
      }
      next(word_begin, part.size());
      break;
    }
  }
}

struct ThreadCache {
  uint64_t owner = 0;
  WordCache cache;
};

WordCache& thread_cache(uint64_t serial) {
  thread_local ThreadCache tc;
  if (tc.owner != serial) {
    tc.cache.clear();
    tc.owner = serial;
  }
  return tc.cache;
}

std::atomic<uint64_t> next_serial{1};

}  // namespace

Tokenizer::Tokenizer() : pipeline_(std::make_unique<Pipeline>()), serial_(next_serial++) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

void Tokenizer::encode_stretch(std::string_view text, bool piece_start, bool input_start, std::vector<int32_t>& ids,
                               std::vector<uint32_t>* starts) const {
  const Pipeline& p = *pipeline_;
  Stretch s(text, starts != nullptr);
  for (const Pipeline::Normalizer& n : p.normalizers) {
    switch (n.kind) {
      case Pipeline::Normalizer::Nfc: s.nfc(); break;
      case Pipeline::Normalizer::Prepend:
        if (piece_start && !s.view().empty()) s.prepend(n.text);
        break;
      case Pipeline::Normalizer::Replace: s.replace(n.text, n.replacement); break;
    }
  }
  if (!p.metaspace.empty()) {
    s.replace(" ", p.metaspace);
    const bool prepend = p.metaspace_prepend == Pipeline::PrependScheme::Always ? piece_start
                         : p.metaspace_prepend == Pipeline::PrependScheme::First ? input_start
                                                                                   : false;
    if (prepend && s.view().substr(0, p.metaspace.size()) != p.metaspace) s.prepend(p.metaspace);
  }
  if (p.prefix_space && piece_start && (s.view().empty() || s.view()[0] != ' ')) s.prepend(" ");

  const std::string_view normalized = s.view();
  if (starts) {
    // Offsets are wanted: no cache (it keeps ids, not how many bytes each covers).
    std::vector<uint32_t> lengths;
    for_each_word(p.splits, 0, normalized, 0, normalized.size(), [&](size_t b, size_t e) {
      lengths.clear();
      model_.encode_word(normalized.substr(b, e - b), ids, &lengths);
      size_t at = b;
      for (uint32_t len : lengths) {
        starts->push_back(s.origin(at));
        at += len;
      }
    });
    return;
  }
  WordCache& cache = thread_cache(serial_);
  for_each_word(p.splits, 0, normalized, 0, normalized.size(), [&](size_t b, size_t e) {
    const std::string_view word = normalized.substr(b, e - b);
    if (word.size() > WordCache::kMaxWordBytes) {
      model_.encode_word(word, ids);
      return;
    }
    const uint64_t h = WordCache::hash(word);
    if (cache.find(word, h, ids)) return;
    const size_t before = ids.size();
    model_.encode_word(word, ids);
    cache.insert(word, h, ids.data() + before, ids.size() - before);
  });
}

// `regions`: (end offset, special tokens allowed) of consecutive regions covering `text`. Added
// tokens are found inside one region; the text between them is encoded as stretches.
void Tokenizer::encode_text(std::string_view text, std::span<const std::pair<size_t, bool>> regions,
                            bool continuation, std::vector<int32_t>& ids, std::vector<uint32_t>* starts) const {
  size_t stretch_begin = 0;
  auto flush = [&](size_t end) {
    if (end <= stretch_begin) return;
    const size_t before = starts ? starts->size() : 0;
    const bool at_start = stretch_begin == 0 && continuation;
    encode_stretch(text.substr(stretch_begin, end - stretch_begin), !at_start, stretch_begin == 0 && !continuation,
                   ids, starts);
    if (starts)
      for (size_t i = before; i < starts->size(); ++i) (*starts)[i] += uint32_t(stretch_begin);
  };
  size_t region_begin = 0;
  for (const auto& [region_end, special] : regions) {
    if (added_.any(special)) {
      const std::string_view region = text.substr(0, region_end);
      for (size_t at = region_begin; at < region_end;) {
        auto match = added_.find(region, at, special);
        if (!match) break;
        flush(match->begin);
        ids.push_back(match->id);
        if (starts) starts->push_back(uint32_t(match->begin));
        stretch_begin = at = match->end;
      }
    }
    region_begin = region_end;
  }
  flush(text.size());
}

void Tokenizer::encode(std::string_view text, std::vector<int32_t>& ids, EncodeOptions options) const {
  const std::pair<size_t, bool> region{text.size(), options.special_tokens};
  encode_text(text, {&region, 1}, options.continuation, ids, nullptr);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  std::vector<int32_t> ids;
  encode(text, ids, options);
  return ids;
}

void Tokenizer::encode(std::span<const TextSegment> segments, std::vector<int32_t>& ids,
                       std::vector<uint8_t>& counted) const {
  std::string text;
  std::vector<std::pair<size_t, bool>> regions;
  for (const TextSegment& s : segments) {
    text.append(s.text);
    regions.emplace_back(text.size(), s.special_tokens);
  }
  std::vector<uint32_t> starts;
  const size_t before = ids.size();
  encode_text(text, regions, false, ids, &starts);
  size_t segment = 0, segment_end = segments.empty() ? 0 : segments[0].text.size();
  for (size_t i = 0; i < ids.size() - before; ++i) {
    while (segment + 1 < segments.size() && starts[i] >= segment_end) segment_end += segments[++segment].text.size();
    counted.push_back(segments[segment].counted ? 1 : 0);
  }
}

std::optional<size_t> Tokenizer::cut_point(std::string_view text, size_t from) const {
  if (!pipeline_->cuttable) return std::nullopt;
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  for (size_t at = std::max<size_t>(from, 1); at + 1 < text.size(); ++at) {
    const void* hit = std::memchr(text.data() + at, '\n', text.size() - 1 - at);
    if (!hit) break;
    at = size_t(static_cast<const char*>(hit) - text.data());
    if (letter(text[at - 1]) && letter(text[at + 1])) return at + 1;
  }
  return std::nullopt;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view content) const {
  if (const AddedToken* t = added_.by_content(content)) return t->id;
  if (!model_.options().byte_level) return model_.find(content);
  auto bytes = byte_level::bytes_of(content);
  return bytes ? model_.find(*bytes) : std::nullopt;
}

const AddedToken* Tokenizer::added_token_of(int32_t id) const {
  const int32_t k = id >= 0 && size_t(id) < added_index_.size() ? added_index_[size_t(id)] : -1;
  return k >= 0 ? &added_.tokens()[size_t(k)] : nullptr;
}

std::string_view Tokenizer::kind() const {
  if (model_.options().byte_level) return "byte-level BPE";
  return model_.options().byte_fallback ? "BPE with byte fallback" : "BPE";
}

const std::string& Tokenizer::config_string(std::string_view key) const {
  static const std::string none;
  if (key == "bos_token") return bos_token_;
  if (key == "eos_token") return eos_token_;
  if (key == "chat_template") return chat_template_;
  return none;
}

int32_t document_separator(const Tokenizer& t, std::string& name) {
  std::vector<std::string> candidates = {t.config_string("bos_token")};
  if (auto bos = t.post_processor_bos()) return name = t.decode(std::vector<int32_t>{*bos}), *bos;
  for (const char* c : {"<|begin_of_text|>", "<s>", "<|endoftext|>", "<|end_of_text|>", "</s>"})
    candidates.push_back(c);
  candidates.push_back(t.config_string("eos_token"));
  for (const std::string& c : candidates)  // added tokens only: "<s>" may be a plain word of a vocabulary
    if (const AddedToken* token = c.empty() ? nullptr : t.added_tokens().by_content(c)) return name = c, token->id;
  fail("{}: no begin- or end-of-text token to separate documents with (looked for bos_token of "
       "tokenizer_config.json, <|begin_of_text|>, <s>, <|endoftext|>, <|end_of_text|>, </s>)",
       t.source());
}

}  // namespace zt

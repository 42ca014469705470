#include "tokenizer/bpe.hpp"

#include <algorithm>
#include <climits>
#include <queue>
#include <unordered_map>

#include "core/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/text_hash.hpp"
#include "tokenizer/unicode.hpp"

namespace zt {
namespace {

// Pair keys are stored +1 so that 0 marks an empty slot.
uint64_t pair_key(int32_t left, int32_t right) { return ((uint64_t(uint32_t(left)) << 32) | uint32_t(right)) + 1; }

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

constexpr size_t kShortWord = 48;  // symbols; longer words merge through a heap

}  // namespace

BpeModel::BpeModel(const std::vector<std::pair<std::string, int32_t>>& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
                   const std::string& where)
    : options_(std::move(options)) {
  const SpellingIndex by_spelling = index_spellings(vocab, where);
  add_entries(vocab);
  find_symbol_tokens(by_spelling, where);
  add_merges(merges, by_spelling, where);
}

BpeModel::SpellingIndex BpeModel::index_spellings(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                                  const std::string& where) {
  SpellingIndex by_spelling;
  by_spelling.reserve(vocab.size());
  for (const auto& [spelling, id] : vocab) {
    if (id < 0) fail("{}: model.vocab: \"{}\" has the negative id {}", where, spelling, id);
    id_limit_ = std::max(id_limit_, id + 1);
    by_spelling.emplace(spelling, id);
  }
  return by_spelling;
}

void BpeModel::add_entries(const std::vector<std::pair<std::string, int32_t>>& vocab) {
  text_.resize(size_t(id_limit_));
  spelling_.resize(size_t(id_limit_));
  size_t entry_capacity = 16;
  while (entry_capacity < vocab.size() * 2) entry_capacity *= 2;
  entries_.assign(entry_capacity, -1);
  entry_mask_ = entry_capacity - 1;
  for (const auto& [spelling, id] : vocab) {
    spelling_[size_t(id)] = spelling;
    std::optional<std::string> text = spelling;
    if (options_.byte_level) text = byte_level::bytes_of(spelling);
    if (!text) {  // never produced by byte-level pre-tokenization; decodes as spelt
      text_[size_t(id)] = spelling;
      continue;
    }
    text_[size_t(id)] = *text;
    if (find_id(*text) >= 0) continue;  // a repeated entry: the first id stays
    uint64_t slot = text_hash(*text) & entry_mask_;
    while (entries_[slot] >= 0) slot = (slot + 1) & entry_mask_;
    entries_[slot] = id;
  }
}

void BpeModel::find_symbol_tokens(const SpellingIndex& by_spelling, const std::string& where) {
  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
  std::fill(std::begin(ascii_ids_), std::end(ascii_ids_), -1);
  for (int b = 0; b < 256; ++b) {
    if (options_.byte_level) {
      byte_ids_[b] = find_id(std::string(1, char(b)));
    } else {
      auto it = by_spelling.find(fmt::format("<0x{:02X}>", b));
      if (it != by_spelling.end()) byte_ids_[b] = it->second;
    }
  }
  if (options_.byte_level)
    for (int b = 0; b < 256; ++b)
      if (byte_ids_[b] < 0)
        fail("{}: model.vocab has no token for byte {} (\"{}\"): not a byte-level vocabulary", where, b,
             byte_level::spelling_of(std::string(1, char(b))));
  if (!options_.byte_level)
    for (int c = 0; c < 128; ++c) ascii_ids_[c] = find_id(std::string(1, char(c)));
  if (!options_.unk_token.empty()) {
    auto it = by_spelling.find(options_.unk_token);
    if (it == by_spelling.end()) fail("{}: model.unk_token \"{}\" is not in model.vocab", where, options_.unk_token);
    unk_id_ = it->second;
  }
}

void BpeModel::add_merges(const std::vector<std::pair<std::string, std::string>>& merges,
                          const SpellingIndex& by_spelling, const std::string& where) {
  size_t capacity = 16;
  while (capacity < merges.size() * 2) capacity *= 2;
  pairs_.assign(capacity, PairSlot{0, {0, 0}});
  pair_mask_ = capacity - 1;
  const int32_t line_break =
      !options_.byte_level && ascii_ids_['\n'] >= 0 ? ascii_ids_['\n'] : byte_ids_[uint8_t('\n')];
  line_break_merges_ = false;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    auto left = by_spelling.find(a), right = by_spelling.find(b), result = by_spelling.find(a + b);
    if (left == by_spelling.end() || right == by_spelling.end())
      fail("{}: model.merges[{}] (\"{} {}\"): \"{}\" is not in model.vocab", where, rank, a, b,
           left == by_spelling.end() ? a : b);
    if (result == by_spelling.end())
      fail("{}: model.merges[{}] (\"{} {}\"): the merged token \"{}\" is not in model.vocab", where, rank, a, b, a + b);
    if (left->second == line_break || right->second == line_break) line_break_merges_ = true;
    const uint64_t key = pair_key(left->second, right->second);
    for (uint64_t slot = mix(key) & pair_mask_;; slot = (slot + 1) & pair_mask_) {
      if (pairs_[slot].key == key ||
          pairs_[slot].key == 0) {  // a repeated merge takes its last rank, as in Hugging Face
        pairs_[slot] = PairSlot{key, {int32_t(rank), result->second}};
        break;
      }
    }
  }
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  for (uint64_t slot = mix(key) & pair_mask_;; slot = (slot + 1) & pair_mask_) {
    const PairSlot& s = pairs_[slot];
    if (s.key == key) return &s.merge;
    if (s.key == 0) return nullptr;
  }
}

int32_t BpeModel::find_id(std::string_view key) const {
  for (uint64_t slot = text_hash(key) & entry_mask_;; slot = (slot + 1) & entry_mask_) {
    const int32_t id = entries_[slot];
    if (id < 0) return -1;
    if (text_[size_t(id)] == key) return id;
  }
}

bool BpeModel::joins_before(std::string_view text) const {
  for (const std::string& entry : text_)
    for (size_t at = entry.find(text, 1); at != std::string::npos; at = entry.find(text, at + 1))
      if (at < text.size() || entry.compare(at - text.size(), text.size(), text) != 0) return true;
  return false;
}

std::string_view BpeModel::text_of(int32_t id) const {
  return id >= 0 && id < id_limit_ ? std::string_view(text_[size_t(id)]) : std::string_view();
}

std::string_view BpeModel::spelling_of(int32_t id) const {
  return id >= 0 && id < id_limit_ ? std::string_view(spelling_[size_t(id)]) : std::string_view();
}

void BpeModel::initial_symbols(std::string_view word, std::vector<Symbol>& symbols) const {
  if (options_.byte_level) {
    for (char c : word) symbols.push_back({byte_ids_[uint8_t(c)], 1});
    return;
  }
  // Characters; an unknown one becomes its byte tokens, else (fused) unknown tokens.
  Symbol unk{-1, 0};
  for (size_t i = 0; i < word.size();) {
    int len = 1;
    const auto byte = static_cast<unsigned char>(word[i]);
    int32_t id = -1;
    if (byte < 0x80) {
      id = ascii_ids_[byte];
    } else {
      unicode::decode(word.data() + i, word.size() - i, len);
      id = find_id(word.substr(i, size_t(len)));
    }
    if (id >= 0) {
      if (unk.id >= 0) symbols.push_back(unk), unk.id = -1;
      symbols.push_back({id, uint32_t(len)});
    } else if (options_.byte_fallback &&
               std::all_of(word.begin() + ptrdiff_t(i), word.begin() + ptrdiff_t(i) + len,
                           [&](char b) { return byte_ids_[uint8_t(b)] >= 0; })) {
      for (int k = 0; k < len; ++k) symbols.push_back({byte_ids_[uint8_t(word[i + size_t(k)])], 1});
    } else if (unk_id_ >= 0) {
      if (unk.id >= 0 && options_.fuse_unk) {
        unk.len += uint32_t(len);
      } else {
        if (unk.id >= 0) symbols.push_back(unk);
        unk = {unk_id_, uint32_t(len)};
      }
    }
    i += size_t(len);
  }
  if (unk.id >= 0) symbols.push_back(unk);
}

// Short words: the lowest-ranked pair, leftmost among equals, found by a scan.
void BpeModel::merge_short(const BpeModel& m, std::vector<Symbol>& symbols) {
  size_t n = symbols.size();
  Merge pair[kShortWord];
  auto rank_at = [&](size_t i) {
    const Merge* merge = m.find_merge(symbols[i].id, symbols[i + 1].id);
    pair[i] = merge ? *merge : Merge{INT_MAX, -1};
  };
  for (size_t i = 0; i + 1 < n; ++i) rank_at(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (pair[i].rank < pair[best].rank) best = i;
    if (pair[best].rank == INT_MAX) break;
    symbols[best] = {pair[best].result, symbols[best].len + symbols[best + 1].len};
    for (size_t i = best + 1; i + 1 < n; ++i) symbols[i] = symbols[i + 1];
    for (size_t i = best + 1; i + 2 < n; ++i) pair[i] = pair[i + 1];
    --n;
    if (best > 0) rank_at(best - 1);
    if (best + 1 < n) rank_at(best);
  }
  symbols.resize(n);
}

// Long words: Hugging Face's queue of candidate merges ordered by (rank, position), entries checked
// against the current pair when they come out.
void BpeModel::merge_long(const BpeModel& m, std::vector<Symbol>& symbols) {
  struct Node {
    int32_t id;
    uint32_t len;
    int32_t prev, next;
  };
  struct Candidate {
    int32_t rank, pos, result;
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const int32_t n = int32_t(symbols.size());
  std::vector<Node> nodes(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i)
    nodes[size_t(i)] = {symbols[size_t(i)].id, symbols[size_t(i)].len, i - 1, i + 1 < n ? i + 1 : -1};
  std::vector<Candidate> storage;
  storage.reserve(size_t(n));
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(storage));
  auto offer = [&](int32_t pos) {
    const Node& a = nodes[size_t(pos)];
    if (a.next < 0) return;
    if (const Merge* merge = m.find_merge(a.id, nodes[size_t(a.next)].id))
      queue.push({merge->rank, pos, merge->result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) offer(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Node& a = nodes[size_t(top.pos)];
    if (a.len == 0 || a.next < 0) continue;
    Node& b = nodes[size_t(a.next)];
    const Merge* now = m.find_merge(a.id, b.id);
    if (!now || now->result != top.result) continue;  // stale: the pair changed since it was queued
    a.id = top.result;
    a.len += b.len;
    b.len = 0;
    a.next = b.next;
    if (a.next >= 0) nodes[size_t(a.next)].prev = top.pos;
    if (a.prev >= 0) offer(a.prev);
    offer(top.pos);
  }
  symbols.clear();
  for (const Node& node : nodes)
    if (node.len > 0) symbols.push_back({node.id, node.len});
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>* lengths) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const int32_t id = find_id(word); id >= 0) {
      ids.push_back(id);
      if (lengths) lengths->push_back(uint32_t(word.size()));
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  initial_symbols(word, symbols);
  if (symbols.size() <= kShortWord)
    merge_short(*this, symbols);
  else
    merge_long(*this, symbols);
  for (const Symbol& s : symbols) {
    ids.push_back(s.id);
    if (lengths) lengths->push_back(s.len);
  }
}

}  // namespace zt

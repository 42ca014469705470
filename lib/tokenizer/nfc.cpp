#include "tokenizer/nfc.hpp"

#include <algorithm>

#include "tokenizer/unicode.hpp"
#include "tokenizer/unicode_data.hpp"

namespace zt {
namespace {

using namespace unicode_data;

// Hangul syllables are composed and decomposed by arithmetic (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* end = kDecompositions + kDecompositionCount;
  const Decomposition* d = std::lower_bound(kDecompositions, end, cp,
                                            [](const Decomposition& x, uint32_t c) { return x.code_point < c; });
  if (d == end || d->code_point != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), kDecomposed + d->first, kDecomposed + d->first + d->length);
}

// The primary composite of (first, second), or 0.
uint32_t compose(uint32_t first, uint32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount)
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount)
    return first + (second - kTBase);
  const Composition* end = kCompositions + kCompositionCount;
  const Composition* c =
      std::lower_bound(kCompositions, end, std::pair(first, second), [](const Composition& x, auto key) {
        return x.first != key.first ? x.first < key.first : x.second < key.second;
      });
  return c != end && c->first == first && c->second == second ? c->composite : 0;
}

// NFC of one stretch that starts at an NFC-stable character (or at the start of the text).
void normalize_stretch(std::string_view stretch, std::string& out) {
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < stretch.size();) {
    int len = 0;
    const uint32_t cp = unicode::decode(stretch.data() + i, stretch.size() - i, len);
    decompose(cp, cps);
    i += size_t(len);
  }
  // Canonical ordering: each run of non-starters sorted by combining class, stably.
  std::vector<uint8_t> ccc(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) ccc[i] = unicode::combining_class(cps[i]);
  for (size_t i = 1; i < cps.size(); ++i)
    for (size_t j = i; j > 0 && ccc[j] != 0 && ccc[j - 1] > ccc[j]; --j) {
      std::swap(cps[j], cps[j - 1]);
      std::swap(ccc[j], ccc[j - 1]);
    }
  // Canonical composition: a character joins the last starter unless a character between them
  // blocks it (combining class 0, or not below its own).
  std::vector<uint32_t> result;
  std::vector<uint8_t> result_ccc;
  ptrdiff_t starter = -1;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (starter >= 0) {
      const bool adjacent = size_t(starter) + 1 == result.size();
      const uint8_t last = result_ccc.back();
      if (adjacent || (last != 0 && last < ccc[i])) {
        if (const uint32_t composite = compose(result[size_t(starter)], cps[i])) {
          result[size_t(starter)] = composite;
          continue;
        }
      }
    }
    if (ccc[i] == 0) starter = ptrdiff_t(result.size());
    result.push_back(cps[i]);
    result_ccc.push_back(ccc[i]);
  }
  for (uint32_t cp : result) unicode::append_utf8(out, cp);
}

}  // namespace

void append_nfc(std::string_view text, std::string& out, std::vector<uint32_t>* origin) {
  const uint8_t* table = unicode::flag_table();
  size_t copied = 0;     // text[0, copied) is in out
  size_t stretch = 0;    // where the stretch that may change starts: the last NFC-stable character
  bool changes = false;  // the current stretch holds a character that is not NFC-stable
  auto copy_to = [&](size_t end) {
    out.append(text.data() + copied, end - copied);
    if (origin)
      for (size_t k = copied; k < end; ++k) origin->push_back(uint32_t(k));
    copied = end;
  };
  auto normalize_to = [&](size_t end) {
    copy_to(stretch);
    const size_t before = out.size();
    normalize_stretch(text.substr(stretch, end - stretch), out);
    if (origin) origin->insert(origin->end(), out.size() - before, uint32_t(stretch));
    copied = end;
    changes = false;
  };
  for (size_t i = 0; i < text.size();) {
    int len = 1;
    const auto byte = static_cast<unsigned char>(text[i]);
    const uint32_t cp = byte < 0x80 ? byte : unicode::decode(text.data() + i, text.size() - i, len);
    if (unicode::flags(table, cp) & unicode::kNfcStable) {
      if (changes) normalize_to(i);
      stretch = i;
    } else {
      changes = true;
    }
    i += size_t(len);
  }
  if (changes) normalize_to(text.size());
  copy_to(text.size());
}

bool nfc_quick_yes(std::string_view text) {
  const uint8_t* table = unicode::flag_table();
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      ++i;
      continue;
    }
    int len = 1;
    if (!(unicode::flags(table, unicode::decode(text.data() + i, text.size() - i, len)) & unicode::kNfcStable))
      return false;
    i += size_t(len);
  }
  return true;
}

}  // namespace zt

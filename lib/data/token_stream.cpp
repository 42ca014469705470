#include "data/token_stream.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "core/error.hpp"
#include "data/file_token_dataset.hpp"

namespace zt {

namespace {

// Bytes per token of a token file, 0 for anything else (synthetic data).
int token_width(const TokenDataset& d) {
  const auto* file = dynamic_cast<const FileTokenDataset*>(&d);
  return file ? file->token_bytes() : 0;
}

}  // namespace

TokenStream::TokenStream(std::vector<std::unique_ptr<TokenDataset>> files) : files_(std::move(files)) {
  if (files_.size() < 2) fail("a token stream needs at least two files, {} given", files_.size());
  const TokenDataset& first = *files_.front();
  starts_.push_back(0);
  for (const auto& f : files_) {
    if (f->format() != first.format() || token_width(*f) != token_width(first))
      fail("{}: {} with {}-byte tokens, but {} is {} with {}-byte tokens: the files of one stream must share their "
           "format",
           f->path(), token_format_name(f->format()), token_width(*f), first.path(), token_format_name(first.format()),
           token_width(first));
    starts_.push_back(starts_.back() + f->size());
    vocab_size_ = std::max(vocab_size_, f->vocab_size());
    has_loss_mask_ = has_loss_mask_ || f->has_loss_mask();
  }
  for (const auto& f : files_) {
    if (f->has_samples() != first.has_samples())
      fail("{} has {} sample index and {} has {}: the files of one stream are all record data (samples) or none is",
           f->path(), f->has_samples() ? "a" : "no", first.path(), f->has_samples() ? "none" : "one");
    if (f->has_pairs() != first.has_pairs())
      fail("{} holds {}preference pairs and {} {}: the files of one stream are all pairs or none is", f->path(),
           f->has_pairs() ? "" : "no ", first.path(), first.has_pairs() ? "does" : "does not");
    if (!f->has_samples()) continue;
    const int64_t at = sample_offsets_.empty() ? 0 : sample_offsets_.back();
    if (!sample_offsets_.empty()) sample_offsets_.pop_back();
    for (int64_t o : f->sample_offsets()) sample_offsets_.push_back(at + o);
  }
  description_ = fmt::format("{} ... {} ({} files)", first.path(), files_.back()->path(), files_.size());
}

template <typename F>
void TokenStream::for_pieces(int64_t begin, int64_t count, F&& f) const {
  if (begin < 0 || count < 0 || begin + count > size())
    fail("{}: read of tokens [{}, {}) outside the stream's {} tokens", description_, begin, begin + count, size());
  // The file holding `begin`: the last start at or before it.
  size_t k = size_t(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
  for (int64_t done = 0; done < count; ++k) {
    const int64_t at = begin + done - starts_[k];
    const int64_t n = std::min(count - done, starts_[k + 1] - starts_[k] - at);
    f(*files_[k], at, n, done);
    done += n;
  }
}

void TokenStream::read(int64_t begin, int64_t count, int32_t* out) const {
  for_pieces(begin, count, [&](const TokenDataset& file, int64_t at, int64_t n, int64_t offset) {
    file.read(at, n, out + offset);
  });
}

void TokenStream::read_loss_mask(int64_t begin, int64_t count, uint8_t* out) const {
  for_pieces(begin, count, [&](const TokenDataset& file, int64_t at, int64_t n, int64_t offset) {
    file.read_loss_mask(at, n, out + offset);
  });
}

void TokenStream::check_vocab(int model_vocab) const {
  for (const auto& f : files_) f->check_vocab(model_vocab);  // names the file and the token's offset in it
}

std::vector<DataFile> TokenStream::files() const {
  std::vector<DataFile> all;
  for (const auto& f : files_) all.push_back({f->path(), f->size()});
  return all;
}

}  // namespace zt

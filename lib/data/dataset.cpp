#include "data/dataset.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "data/content_kind.hpp"
#include "data/file_token_dataset.hpp"
#include "data/llmc_format.hpp"
#include "data/read_only_file.hpp"
#include "data/synthetic_dataset.hpp"
#include "data/token_stream.hpp"
#include "data/tokenize_advice.hpp"

namespace zt {

void TokenDataset::read_loss_mask(int64_t, int64_t count, uint8_t* out) const {
  std::fill(out, out + count, uint8_t(1));
}

namespace {

[[noreturn]] void refuse_records(const std::string& source, ContentKind content, std::string_view tokenizer) {
  fail("{} holds {}, not tokens: training reads token files; tokenize it first with the model's tokenizer, `{}`{}, "
       "and train on {} (docs/data.md)",
       source, content_kind_name(content), tokenize_command(source, tokenizer), tokenizer_placeholder_note(tokenizer),
       tokenized_name(source));
}

}  // namespace

TokenFormat detect_token_format(const std::string& source, std::string_view tokenizer) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (is_synthetic_spec(source) && !fs::exists(source, ec)) return TokenFormat::Synthetic;
  if (source.empty()) fail("data: no data file given");
  const ContentKind content = sniff_content(source);  // names the reason it cannot be read; never blocks on a FIFO
  if (content == ContentKind::LlmcTokens) return TokenFormat::LlmC;
  const std::string ext = lower_extension(source);
  const bool text_name = ext == ".txt" || ext == ".md";
  if (holds_records(content) && !text_name) refuse_records(source, content, tokenizer);
  if (is_columnar(content))
    fail("{} is {}, which zerotrain does not read: write its records as JSON lines (datasets: "
         "`dataset.to_json(\"train.jsonl\")`), then `{}`",
         source, content_kind_name(content), tokenize_command("train.jsonl", tokenizer));
  if (ext == ".bin") return TokenFormat::LlmC;  // opening it reports the bad magic
  if (ext == ".u16" || ext == ".uint16") return TokenFormat::Uint16;
  if (text_name) return TokenFormat::Text;
  fail("{}: cannot tell the data format: no llm.c header, no JSON records, and the extension \"{}\" is none of .bin, "
       ".u16, .uint16, .txt, .md; set data.format (llmc, uint16, text)",
       source, ext);
}

std::unique_ptr<TokenDataset> open_dataset(const std::string& source, TokenFormat format,
                                           uint64_t stream_seed, std::string_view tokenizer) {
  if (format == TokenFormat::Auto) format = detect_token_format(source, tokenizer);
  switch (format) {
    case TokenFormat::LlmC: return FileTokenDataset::open_llmc(source);
    case TokenFormat::Uint16: return FileTokenDataset::open_uint16(source);
    case TokenFormat::Text: return FileTokenDataset::open_text(source);
    case TokenFormat::Synthetic:
      return std::make_unique<SyntheticDataset>(source, parse_synthetic_spec(source), stream_seed);
    case TokenFormat::Auto: break;
  }
  fail("{}: unresolved data format", source);
}

std::unique_ptr<TokenDataset> open_dataset(const std::string& source, std::string_view format,
                                           uint64_t stream_seed, std::string_view tokenizer) {
  return open_dataset(source, kTokenFormatNames.parse(format, "data.format"), stream_seed, tokenizer);
}

std::unique_ptr<TokenDataset> open_dataset(const std::vector<std::string>& sources, std::string_view format,
                                           uint64_t stream_seed, std::string_view tokenizer) {
  if (sources.empty()) fail("data: no data file given");
  if (sources.size() == 1) return open_dataset(sources.front(), format, stream_seed, tokenizer);
  std::vector<std::unique_ptr<TokenDataset>> files;
  for (const std::string& source : sources) files.push_back(open_dataset(source, format, stream_seed, tokenizer));
  return std::make_unique<TokenStream>(std::move(files));
}

}  // namespace zt

#include "data/data_tokenizer.hpp"

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "data/token_file_info.hpp"

namespace zt {

namespace {

// Refuses or warns as the judgement says.
void mismatch(const TokenizerJudgement& j, const std::string& message) {
  if (j.policy == TokenizerMismatch::Error)
    refuse("{}; if you know that the ids agree, go on with {} (docs/data.md)", message, j.override);
  if (j.speak) spdlog::warn("{}; going on as told ({})", message, j.override);
}

std::string listed(const std::vector<std::string>& files) {
  std::string out = files.front();
  if (files.size() > 1) out += fmt::format(" and {} other file{}", files.size() - 1, files.size() == 2 ? "" : "s");
  return out;
}

}  // namespace

DataTokenizer read_data_tokenizer(const TokenDataset& data, const TokenizerJudgement& judgement) {
  DataTokenizer out;
  if (data.format() != TokenFormat::LlmC && data.format() != TokenFormat::Uint16) return out;
  for (const DataFile& file : data.files()) {
    const std::optional<TokenFileInfo> info = read_token_file_info(file.path, file.tokens);
    if (!info) {
      out.unrecorded.push_back(file.path);
    } else if (!out.identity) {
      out.identity = info->tokenizer;
      out.recorded_by = file.path;
    } else if (!same_tokenizer(*out.identity, info->tokenizer)) {
      mismatch(judgement, fmt::format("{}: {} was tokenized with {}, but {} with {}: one stream of ids would mean two "
                                      "things",
                                      judgement.what, file.path, describe(info->tokenizer), out.recorded_by,
                                      describe(*out.identity)));
    }
  }
  return out;
}

void judge_data_tokenizer(const DataTokenizer& data, const TokenizerReference& reference,
                          const TokenizerJudgement& judgement) {
  if (data.identity && !same_tokenizer(*data.identity, reference.identity))
    mismatch(judgement,
             fmt::format("{}: {} was tokenized with {}, but the model's ids are those of {} ({}): the same id "
                         "is another token to this model; tokenize the data with the model's tokenizer (`zerotrain "
                         "tokenize --tokenizer {} INPUT... -o {}`)",
                         judgement.what, data.recorded_by, describe(*data.identity), reference.where,
                         describe_files(reference.identity), reference.identity.source, data.recorded_by));
  if (!data.unrecorded.empty() && judgement.speak)
    spdlog::warn("{}: {} records no tokenizer (a file of llm.c's scripts, or of a zerotrain before token files "
                 "recorded theirs: no {} beside it), so its ids cannot be checked against {}; tokenize "
                 "the data again to record it",
                 judgement.what, listed(data.unrecorded), "NAME.meta.json", reference.where);
}

void judge_given_tokenizer(const TokenizerIdentity& given, const TokenizerReference& reference,
                           const TokenizerJudgement& judgement) {
  if (!same_tokenizer(given, reference.identity))
    mismatch(judgement, fmt::format("{}: {} is not the tokenizer the model's ids are those of, {} ({}); leave {} out "
                                    "to use that one",
                                    judgement.what, describe(given), reference.where,
                                    describe_files(reference.identity),
                                    judgement.what));
}

}  // namespace zt

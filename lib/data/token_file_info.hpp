#pragma once
// What `zerotrain tokenize` records of a token file beside it, in X.meta.json for X.bin
// (llmc::info_path_of): the tokens it holds, its loss mask, and the tokenizer that made it, so that
// a run, eval and generate can tell whether the file's ids mean what the model's ids mean. A JSON
// object, open to more keys:
//   {"format": "zerotrain token file", "version": 1, "tokens": N, "token_bytes": 2|4,
//    "loss_mask": "X.mask" | null, "tokenizer": {tokenizer_identity.hpp's to_json}}
// and for record data, where each sample starts (data/sample_index.hpp):
//    "samples": {"index": "X.idx", "count": S}
// llm.c's own files and those of an older zerotrain have none: they are read as before.
#include <cstdint>
#include <optional>
#include <string>

#include "data/tokenizer_identity.hpp"

namespace zt {

struct TokenFileInfo {
  int64_t tokens = 0;
  int token_bytes = 0;
  std::string loss_mask;  // the mask file's name beside the tokens, "" without one
  std::string sample_index;  // the sample index's name beside the tokens, "" without one
  int64_t samples = 0;       // the samples it holds
  TokenizerIdentity tokenizer;
};

std::string token_file_info_json(const TokenFileInfo& info);
// The record beside `token_path`, or nothing when there is none. A record that does not parse, or
// that counts other than `tokens` tokens (it belongs to another file), is an error naming it.
std::optional<TokenFileInfo> read_token_file_info(const std::string& token_path, int64_t tokens);

}  // namespace zt

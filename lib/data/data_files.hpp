#pragma once
// The files of data.train and data.val: a list whose entries are paths or glob patterns (llm.c's
// shards, fineweb_train_*.bin), and what can be known of them without reading their tokens.
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace zt {

// Each entry holding a glob character (* ? [) becomes the paths it matches, sorted (shard numbers
// in order); a pattern that matches nothing is an error naming it. Other entries stay as given.
std::vector<std::string> expand_data_files(const std::vector<std::string>& entries);

// The validation file of a token file: OUT.val.bin beside OUT.bin (OUT.val beside another name), as
// `zerotrain tokenize --val` writes it and the data block finds it when data.val is not given.
std::string val_file_of(const std::string& token_file);

// The number of tokens of one source, from its size or header alone (the tokens are not read).
// Errors name the file, as opening it would (`tokenizer` as for detect_token_format).
int64_t count_tokens(const std::string& source, TokenFormat format, std::string_view tokenizer = {});
// The sum over the files of a stream.
int64_t count_tokens(const std::vector<std::string>& sources, TokenFormat format, std::string_view tokenizer = {});
// Where the stream's samples start (data/sample_index.hpp, the files' indexes one after the other),
// read from the indexes alone; empty when the files have none (text: windows).
std::vector<int64_t> read_sample_offsets(const std::vector<std::string>& sources, TokenFormat format,
                                         std::string_view tokenizer = {});

}  // namespace zt

#pragma once
// What to tell a user whose data must become tokens first: the exact `zerotrain tokenize` command
// for the file, with the tokenizer of the model they train (its directory) when it is known.
#include <string>
#include <string_view>

namespace zt {

// "zerotrain tokenize --tokenizer TOKENIZER INPUT -o OUTPUT.bin", paths quoted for a shell where
// needed. Without a tokenizer, the placeholder MODEL_DIR stands in for it.
std::string tokenize_command(const std::string& input, std::string_view tokenizer);
// The token file that command writes: INPUT's name with .bin for its extension.
std::string tokenized_name(const std::string& input);
// "MODEL_DIR's tokenizer" advice when the tokenizer is unknown: what MODEL_DIR stands for; "" otherwise.
std::string tokenizer_placeholder_note(std::string_view tokenizer);

}  // namespace zt

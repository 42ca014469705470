// The data block: token files, their format, the sequence length, shuffling, what a token file
// of another tokenizer than the model's gets, and how samples of record data fill rows.
#include <fmt/format.h>

#include <filesystem>

#include "config/blocks.hpp"
#include "config/config_search.hpp"
#include "core/error.hpp"
#include "data/data_files.hpp"

namespace zt::config {

namespace {

// A path, a glob pattern or a list of them; "" (or nothing) is no file. Patterns become the files
// they match, sorted.
std::vector<std::string> read_files(Block& b, const std::string& key) {
  const nlohmann::json* v = b.raw(key);
  if (!v) return {};
  const std::string expected = "expected a path, a glob pattern or a list of them";
  std::vector<std::string> entries;
  if (v->is_string()) {
    if (!v->get<std::string>().empty()) entries.push_back(v->get<std::string>());
  } else if (v->is_array() && !v->empty()) {
    for (const auto& e : *v) {
      if (!e.is_string() || e.get<std::string>().empty()) {
        b.reject(key, fmt::format("{} in the list is not a path ({})", show(e), expected));
        return {};
      }
      entries.push_back(e.get<std::string>());
    }
  } else {
    b.reject(key, fmt::format("{} ({})", show(*v), expected));
    return {};
  }
  for (const std::string& entry : entries)
    if (entry.find('\0') != std::string::npos) {
      b.reject(key, fmt::format("{} holds a NUL character (expected a path)", show(nlohmann::json(entry))));
      return {};
    }
  try {
    return expand_data_files(entries);
  } catch (const Error& e) {
    b.reject(key, e.what());
    return {};
  }
}

}  // namespace

DataConfig read_data(Block& b, const ModelConfig& model) {
  DataConfig d;
  d.format = b.choice("format", d.format, {"auto", "llmc", "uint16", "text", "synthetic"});
  const bool train_given = b.present("train");
  d.train = read_files(b, "train");
  d.val = read_files(b, "val");
  // Without data.val: the validation file `zerotrain tokenize --val` wrote beside the training data.
  if (train_given && !b.present("val") && d.train.size() == 1 &&
      std::filesystem::is_regular_file(val_file_of(d.train[0])))
    d.val = {val_file_of(d.train[0])};
  if (!train_given) {
    if (d.format == "llmc" || d.format == "uint16")
      b.fail("train", fmt::format("missing (expected a token file for format {})", d.format));
    // The shipped corpus is plain text; its validation split only goes with it.
    if (d.format != "synthetic") {
      d.train = {default_train_data()};
      if (!b.present("val")) d.val = {default_val_data()};
    }
  }
  // Compared before it is narrowed to the int it is kept in (2147483648 must not wrap to a negative).
  const int64_t seq_len = b.integer("seq_len", model.shape.max_seq_len, IntRange::at_least(1));
  if (seq_len > model.shape.max_seq_len)
    b.fail("seq_len", fmt::format("{} exceeds model.max_seq_len {} (expected <= {})", seq_len, model.shape.max_seq_len,
                                  model.shape.max_seq_len));
  d.seq_len = int(seq_len);
  d.shuffle = b.boolean("shuffle", d.shuffle);
  d.tokenizer_mismatch = b.choice("tokenizer_mismatch", d.tokenizer_mismatch, kTokenizerMismatchNames);
  d.packing = b.choice("packing", d.packing, kPackingNames);
  d.padding = b.choice("padding", d.padding, kPaddingNames);
  d.truncation = b.choice("truncation", d.truncation, kTruncationNames);
  b.finish();
  return d;
}

}  // namespace zt::config

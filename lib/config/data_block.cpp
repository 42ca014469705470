// The data block: token files, their format, the sequence length and shuffling.
#include <fmt/format.h>

#include "config/blocks.hpp"
#include "config/config_search.hpp"

namespace zt::config {

DataConfig read_data(Block& b, const ModelConfig& model) {
  DataConfig d;
  d.format = b.choice("format", d.format, {"auto", "llmc", "uint16", "text", "synthetic"});
  const bool train_given = b.present("train");
  d.train = b.file_path("train", "");
  d.val = b.file_path("val", "");
  if (!train_given) {
    if (d.format == "llmc" || d.format == "uint16")
      b.fail("train", fmt::format("missing (expected a token file for format {})", d.format));
    // The shipped corpus is plain text; its validation split only goes with it.
    if (d.format != "synthetic") {
      d.train = default_train_data();
      if (!b.present("val")) d.val = default_val_data();
    }
  }
  // Compared before it is narrowed to the int it is kept in (2147483648 must not wrap to a negative).
  const int64_t seq_len = b.integer("seq_len", model.max_seq_len, IntRange::at_least(1));
  if (seq_len > model.max_seq_len)
    b.fail("seq_len", fmt::format("{} exceeds model.max_seq_len {} (expected <= {})", seq_len, model.max_seq_len,
                                  model.max_seq_len));
  if (model.sliding_window > 0 && seq_len > model.sliding_window)
    b.fail("seq_len", fmt::format("{} exceeds model.sliding_window {} (sliding-window attention is not implemented, "
                                  "so a sequence must fit in the window; expected <= {})",
                                  seq_len, model.sliding_window, model.sliding_window));
  d.seq_len = int(seq_len);
  d.shuffle = b.boolean("shuffle", d.shuffle);
  b.finish();
  return d;
}

}  // namespace zt::config

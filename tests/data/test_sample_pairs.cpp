// Preference pairs in the sample index (magic 20240525, data/sample_index.hpp): the dataset knows
// them, an odd number of samples is refused, and the sampler reads a pair's chosen and rejected
// rows together, never apart across ranks, each cut to seq_len, a pair whose prompt fills seq_len
// left out; a step counts the targets of its chosen rows apart.
#include <catch2/catch.hpp>

#include <fstream>

#include "core/error.hpp"
#include "core/ignored_target.hpp"
#include "data/data_sampler.hpp"
#include "data/dataset.hpp"
#include "data/llmc_format.hpp"
#include "data/sample_index.hpp"
#include "data/sample_sampler.hpp"
#include "data/token_file_writer.hpp"
#include "temp_dir.hpp"

using namespace zt;

namespace {

// Samples (prompt + completion) with the mask 1 on the completion, their index given the pairs'
// magic.
std::string write_pairs(const TempDir& dir, const std::vector<std::pair<std::vector<int32_t>, int>>& samples) {
  const std::string path = dir.file("pairs.bin");
  TokenFileWriter w(path, 100);
  for (const auto& [tokens, prompt] : samples) {
    std::vector<uint8_t> mask(tokens.size(), 1);
    std::fill(mask.begin(), mask.begin() + prompt, 0);
    w.append(tokens, mask, std::vector<int64_t>{0});
  }
  TokenFileWriter::Outputs outputs;
  outputs.samples = true;
  w.finish(outputs);
  std::fstream f(llmc::index_path_of(path), std::ios::in | std::ios::out | std::ios::binary);
  const int32_t magic = llmc::kPairIndexMagic;
  f.write(reinterpret_cast<const char*>(&magic), sizeof magic);
  return path;
}

}  // namespace

TEST_CASE("pairs are read together: one micro-batch, one rank; cut to seq_len; a prompt filling it dropped",
          "[data][samples][pairs]") {
  const TempDir dir;
  const std::string path = write_pairs(dir, {{{1, 2, 3, 4}, 2},
                                             {{1, 2, 5}, 2},  // pair 0
                                             {{6, 7, 8, 9, 10}, 4},
                                             {{6, 7, 8, 9, 11}, 4},  // pair 1: its prompt fills seq_len 4
                                             {{12, 13, 14, 15, 16, 17}, 1},
                                             {{12, 18}, 1}});  // pair 2: its chosen cut to 4 tokens
  const auto data = open_dataset(path, TokenFormat::LlmC);
  REQUIRE(data->has_pairs());
  RowOptions options;
  options.seq_len = 4;
  for (int rank = 0; rank < 2; ++rank) {
    SampleSampler s(*data, options, /*batch=*/1, /*world_size=*/2, rank, /*grad_accum=*/1, false, 0);
    CHECK(s.units() == 2);
    CHECK(s.micro_batch_rows() == 2);
    CHECK(std::string(s.unit_name()) == "pairs");
    CHECK(s.micro_batch_pairs(0, 0) == std::vector<int64_t>{rank == 0 ? 0 : 2});
    std::vector<int32_t> inputs(8), targets(8);
    RowSegments segments(cpu_device(), MemSpace::Host, 2, 4);
    const BatchShape shape = s.fill_micro_batch(0, 0, inputs.data(), targets.data(), &segments);
    CHECK(shape.batch == 2);
    CHECK(shape.seq == 4);
    const int32_t X = kIgnoredTarget;
    if (rank == 0) {
      CHECK(inputs == std::vector<int32_t>{1, 2, 3, 4, 1, 2, 5, 0});
      CHECK(targets == std::vector<int32_t>{X, 3, 4, X, X, 5, X, X});
    } else {
      CHECK(inputs == std::vector<int32_t>{12, 13, 14, 15, 12, 18, 0, 0});
      CHECK(targets == std::vector<int32_t>{13, 14, 15, X, 18, X, X, X});
    }
    CHECK(s.describe().find("3 preference pairs, 1 left out") != std::string::npos);
    // The step's targets that count on both ranks, and those of the chosen rows (2 + 3).
    const StepTokens step = s.step_tokens(0, 0);
    CHECK(step.counted == 7);
    CHECK(step.chosen == 5);
  }
  options.packing = Packing::Pack;
  CHECK_THROWS_WITH(make_sampler(*data, options, 1, 1, 0, 1, false, 0),
                    Catch::Contains("preference pairs are read one sequence to a row"));
}

TEST_CASE("an index of pairs with an odd number of samples is refused", "[data][samples][pairs]") {
  const TempDir dir;
  const std::string path = write_pairs(dir, {{{1, 2, 3}, 1}, {{1, 4}, 1}, {{5, 6}, 1}});
  CHECK_THROWS_WITH(open_dataset(path, TokenFormat::LlmC), Catch::Contains("holds 3 samples, an odd number"));
}

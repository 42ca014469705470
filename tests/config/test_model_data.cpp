// The model block (presets, explicit shapes, validation, --model FILE|PRESET) and the data block.
#include <filesystem>
#include <fstream>

#include "config/model_block.hpp"
#include "config_test_support.hpp"
#include "model/gpt_shape.hpp"

using namespace zt::config;
using namespace zt::config::testing;

TEST_CASE("every preset resolves to its shape") {
  for (const auto& p : zt::gpt_presets()) {
    INFO(p.name);
    auto m = resolve(with({{"model", {{"preset", p.name}}}})).model;
    CHECK(m.preset == p.name);
    CHECK(m.shape.num_params() == p.shape.num_params());
    CHECK(m.shape.n_head == p.shape.n_head);
    CHECK(m.shape.max_seq_len == p.shape.max_seq_len);
  }
}

TEST_CASE("explicit keys override a preset; an explicit full shape is named after its preset if any") {
  auto m = resolve(with({{"model", {{"preset", "gpt2-124m"}, {"n_layer", 2}}}})).model;
  CHECK(m.preset == "custom");
  CHECK(m.shape.n_layer == 2);
  CHECK(m.shape.d_model == 768);
  auto named = resolve(with({{"model", {{"n_layer", 12}, {"n_head", 12}, {"d_model", 768}, {"vocab_size", 50257},
                                        {"max_seq_len", 1024}}}}))
                   .model;
  CHECK(named.preset == "gpt2-124m");
  auto custom = resolve(with({{"model", {{"preset", "custom"}, {"n_layer", 3}, {"n_head", 2}, {"d_model", 32},
                                         {"vocab_size", 300}, {"max_seq_len", 64}}}}))
                    .model;
  CHECK(custom.preset == "custom");
  CHECK(custom.shape.vocab_size == 300);
  // Without a preset, keys are applied to the default preset (toy).
  auto toy4 = resolve(with({{"model", {{"n_layer", 4}}}})).model;
  CHECK(toy4.shape.n_layer == 4);
  CHECK(toy4.shape.d_model == 64);
}

TEST_CASE("model validation names the key") {
  CHECK(error_of(with({{"model", {{"n_head", 5}}}})) ==
        "test.json: model.n_head: 5 does not divide model.d_model 64 (expected a divisor of d_model)");
  CHECK(error_of(with({{"model", {{"preset", "custom"}, {"n_layer", 2}}}})) ==
        "test.json: model.preset: \"custom\" needs n_layer, n_head, d_model, vocab_size and max_seq_len (missing: "
        "n_head, d_model, vocab_size, max_seq_len)");
  CHECK(error_of(with({{"model", {{"preset", "gpt5"}}}}))
            .find("test.json: model.preset: \"gpt5\" is not valid (expected "
                  "toy, gpt2-tiny") == 0);
  CHECK(error_of(with({{"model", {{"d_model", 0}}}})) ==
        "test.json: model.d_model: 0 is out of range (expected 1..1073741824)");
}

TEST_CASE("data.seq_len defaults to and may not exceed max_seq_len") {
  CHECK(resolve(with({{"model", {{"preset", "gpt2-tiny"}}}})).data.seq_len == 256);
  CHECK(resolve(with({{"data", {{"seq_len", 64}}}})).data.seq_len == 64);
  CHECK(error_of(with({{"data", {{"seq_len", 256}}}})) ==
        "test.json: data.seq_len: 256 exceeds model.max_seq_len 128 (expected <= 128)");
}

TEST_CASE("data paths, formats and the shipped corpus") {
  auto given = resolve(with({{"data", {{"train", "a.bin"}, {"format", "llmc"}}}})).data;
  CHECK(given.train == std::vector<std::string>{"a.bin"});
  CHECK(given.val.empty());
  CHECK(given.format == "llmc");
  CHECK(error_of(with({{"data", {{"format", "uint16"}}}})) ==
        "test.json: data.train: missing (expected a token file for format uint16)");
  auto synthetic = resolve(with({{"data", {{"format", "synthetic"}}}})).data;
  CHECK(synthetic.train.empty());
  auto text = resolve(with({{"data", {{"format", "text"}, {"shuffle", false}}}})).data;
  CHECK(std::filesystem::is_regular_file(text.train.at(0)));
  CHECK(std::filesystem::is_regular_file(text.val.at(0)));
  CHECK_FALSE(text.shuffle);
}

TEST_CASE("--model accepts a preset name or a JSON file") {
  CHECK(model_argument("gpt2-350m") == json{{"preset", "gpt2-350m"}});
  auto from_file = resolve_model_argument(std::string(ZT_SOURCE_DIR) + "/configs/models/gpt2-1.5b.json");
  CHECK(from_file.preset == "gpt2-1.5b");
  CHECK(from_file.shape.n_layer == 48);
  for (const auto& p : zt::gpt_presets()) {
    INFO(p.name);
    auto m = resolve_model_argument(std::string(ZT_SOURCE_DIR) + "/configs/models/" + p.name + ".json");
    CHECK(m.preset == p.name);
  }
  CHECK_THROWS_WITH(model_argument("no-such-model"),
                    Catch::Contains("--model no-such-model: not a model preset (toy, gpt2-tiny"));
  auto dir = std::filesystem::temp_directory_path() / "zt_test_model_arg";
  std::filesystem::create_directories(dir);
  auto bad = (dir / "bad.json").string();
  std::ofstream(bad) << R"({"n_layer": 2, "n_head": 3})";
  CHECK_THROWS_WITH(resolve_model_argument(bad), Catch::Contains("model.n_head: 3 does not divide"));
  std::filesystem::remove_all(dir);
}

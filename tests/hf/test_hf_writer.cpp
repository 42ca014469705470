// Hugging Face model directories out of zerotrain: config.json from the model keys through the one
// table (hf_config_keys), the weights under their names, sharded above a limit with an index, in
// fp32, bf16 or fp16, the tokenizer files of the source directory, stale files of an earlier save
// removed, refusals; `zerotrain export` of llama-family checkpoints of any world size; meta.json's
// architecture and the refusal of a checkpoint of another one.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "../data/temp_dir.hpp"
#include "ckpt/architecture_check.hpp"
#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/shard_file.hpp"
#include "config/model_block.hpp"
#include "core/error.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_dir.hpp"
#include "hf/hf_writer.hpp"
#include "hf_directory.hpp"
#include "train/model_export.hpp"

using namespace zt;
using namespace zt::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The families at the shapes of tests/fixtures/hf: grouped-query and multi-query attention,
// llama3 rope scaling, biases, q/k norms with a free head_dim, tied and untied heads, a vocabulary
// of 300 padded to 384.
json llama3_block() {
  return {{"preset", "custom"}, {"model_type", "llama"}, {"n_layer", 2}, {"n_head", 4}, {"n_kv_head", 2},
          {"head_dim", 16}, {"d_model", 64}, {"d_ff", 64}, {"vocab_size", 300}, {"max_seq_len", 128},
          {"norm_eps", 1e-5}, {"rope_theta", 500000.0},
          {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 64}}}};
}
json qwen2_block() {
  return {{"preset", "custom"}, {"model_type", "qwen2"}, {"n_layer", 2}, {"n_head", 4}, {"n_kv_head", 1},
          {"head_dim", 16}, {"d_model", 64}, {"d_ff", 64}, {"vocab_size", 300}, {"max_seq_len", 128},
          {"norm_eps", 1e-6}, {"rope_theta", 1000000.0}, {"tie_word_embeddings", false}};
}
json qwen3_block() {
  return {{"preset", "custom"}, {"model_type", "qwen3"}, {"n_layer", 2}, {"n_head", 4}, {"n_kv_head", 2},
          {"head_dim", 24}, {"d_model", 64}, {"d_ff", 64}, {"vocab_size", 300}, {"max_seq_len", 128},
          {"norm_eps", 1e-6}, {"rope_theta", 1000000.0}, {"attention_bias", true}};
}
json llama_bias_block() {
  return {{"preset", "custom"}, {"model_type", "llama"}, {"n_layer", 1}, {"n_head", 2}, {"n_kv_head", 1},
          {"d_model", 32}, {"d_ff", 48}, {"vocab_size", 200}, {"max_seq_len", 64}, {"attention_bias", true},
          {"mlp_bias", true}, {"tie_word_embeddings", false}};
}
json mistral_block() {
  return {{"preset", "custom"}, {"model_type", "mistral"}, {"n_layer", 1}, {"n_head", 4}, {"n_kv_head", 2},
          {"head_dim", 8}, {"d_model", 32}, {"d_ff", 48}, {"vocab_size", 200}, {"max_seq_len", 64},
          {"sliding_window", 32}};
}
json gpt2_block() {
  return {{"preset", "custom"}, {"n_layer", 1},      {"n_head", 2},
          {"d_model", 8},       {"vocab_size", 130}, {"max_seq_len", 16}};
}

config::ModelConfig model_of(const json& block) { return config::read_model_block(block, "test"); }

// Distinct values, exactly representable in bf16 and fp16; zero in the padded vocabulary rows.
std::vector<float> weights_of(const GptShape& shape) {
  std::vector<float> flat(make_gpt_layout(shape).total, 0.0f);
  for (const HfTensor& t : hf_tensors(shape)) {
    const size_t n = t.shape[0] * (t.shape.size() > 1 ? t.shape[1] : 1);
    for (size_t i = 0; i < n; ++i) flat[t.offset + i] = float(int((t.offset + i) % 251) - 125) / 64.0f;
  }
  return flat;
}

void write_directory(const std::string& dir, const config::ModelConfig& model, const std::vector<float>& flat,
                     const HfOutput& output) {
  const ParamLayout layout = make_gpt_layout(model.shape);
  HfModelWriter out(dir, layout, model.shape, output);
  for (const ParamGroup& g : layout.groups) out.write_group(g, flat.data() + g.offset);
  out.commit();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> names;
  for (auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("config.json holds every model key under the name the table pairs it with", "[hf]") {
  for (const json& block : {llama3_block(), qwen2_block(), qwen3_block(), llama_bias_block(), mistral_block()}) {
    const config::ModelConfig m = model_of(block);
    INFO(block.dump());
    const json resolved = config::model_json(m);
    const nlohmann::ordered_json out = hf_config_json(m.shape, DType::BF16);
    CHECK(out.at("architectures") == json::array({hf_architecture(m.shape.model_type)}));
    CHECK(out.at("torch_dtype") == "bfloat16");
    CHECK(out.at("hidden_act") == "silu");
    for (const HfConfigKey& key : hf_config_keys()) {
      const std::string name = key.key;
      INFO(name << " -> " << key.hf);
      const bool has = name != "attention_bias" || m.shape.model_type == zt::ModelType::Llama ||
                       m.shape.model_type == zt::ModelType::Qwen3;
      const bool has_mlp = name != "mlp_bias" || m.shape.model_type == zt::ModelType::Llama;
      if (!resolved.contains(name)) {  // other families' keys (the experts', Gemma's)
        CHECK_FALSE(out.contains(key.hf));
        continue;
      }
      if (name == "sliding_window" || name == "layer_types") {  // below
        if (m.shape.model_type == zt::ModelType::Llama) CHECK_FALSE(out.contains(key.hf));
        continue;
      }
      if (!has || !has_mlp) {
        CHECK_FALSE(out.contains(key.hf));  // the family's config class has no such key
        continue;
      }
      CHECK(out.at(key.hf) == resolved.at(name));
    }
  }
  // The values that are not plain copies.
  CHECK(hf_config_json(model_of(llama3_block()).shape, DType::F32).at("rope_scaling").at("rope_type") == "llama3");
  CHECK(hf_config_json(model_of(qwen2_block()).shape, DType::F32).at("rope_scaling").is_null());
  CHECK(hf_config_json(model_of(mistral_block()).shape, DType::F32).at("sliding_window") == 32);
  const auto qwen = hf_config_json(model_of(qwen3_block()).shape, DType::F16);
  CHECK(qwen.at("use_sliding_window") == false);
  CHECK(qwen.at("torch_dtype") == "float16");
  CHECK(qwen.at("architectures")[0] == "Qwen3ForCausalLM");
  CHECK(qwen.at("head_dim") == 24);

  // GPT-2 through the same table, in its own key names and fixed architecture.
  const auto gpt2 = hf_config_json(model_of(gpt2_block()).shape, DType::F32);
  CHECK(gpt2.at("architectures")[0] == "GPT2LMHeadModel");
  CHECK(gpt2.at("n_embd") == 8);
  CHECK(gpt2.at("n_positions") == 16);
  CHECK(gpt2.at("n_layer") == 1);
  CHECK(gpt2.at("layer_norm_epsilon") == 1e-5);
  CHECK(gpt2.at("activation_function") == "gelu_new");
  CHECK_FALSE(gpt2.contains("num_hidden_layers"));
  CHECK_FALSE(gpt2.contains("rope_theta"));
}

TEST_CASE("config.json says which layers slide as transformers reads it, and reads back the same", "[hf][window]") {
  // Qwen2: use_sliding_window, the full layers before the first sliding one, layer_types.
  json qwen2 = qwen2_block();
  qwen2.update({{"n_layer", 3}, {"sliding_window", 16},
                {"layer_types", {"full_attention", "sliding_attention", "sliding_attention"}}});
  const auto q = hf_config_json(model_of(qwen2).shape, DType::F32);
  CHECK(q.at("use_sliding_window") == true);
  CHECK(q.at("sliding_window") == 16);
  CHECK(q.at("max_window_layers") == 1);
  CHECK(q.at("layer_types") == json({"full_attention", "sliding_attention", "sliding_attention"}));
  // Every layer sliding: max_window_layers 0; a pattern max_window_layers cannot say stays in layer_types.
  qwen2.erase("layer_types");
  CHECK(hf_config_json(model_of(qwen2).shape, DType::F32).at("max_window_layers") == 0);
  CHECK(hf_config_json(model_of(qwen2).shape, DType::F32).at("layer_types") ==
        json({"sliding_attention", "sliding_attention", "sliding_attention"}));
  qwen2["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
  const auto mixed = hf_config_json(model_of(qwen2).shape, DType::F32);
  CHECK(mixed.at("max_window_layers") == 0);
  CHECK(mixed.at("layer_types") == qwen2.at("layer_types"));
  // Without a window, transformers 4's keys alone (a source's layer_types rewritten: no layer slides).
  CHECK_FALSE(hf_config_json(model_of(qwen2_block()).shape, DType::F32).contains("layer_types"));
  const auto listed = hf_config_json(model_of(qwen2_block()).shape, DType::F32,
                                     {{"model_type", "qwen2"}, {"layer_types", {"sliding_attention", "x"}}});
  CHECK(listed.at("layer_types") == json({"full_attention", "full_attention"}));
  // Mistral: the window alone (its config class ignores layer_types).
  const auto m = hf_config_json(model_of(mistral_block()).shape, DType::F32);
  CHECK(m.at("sliding_window") == 32);
  CHECK_FALSE(m.contains("layer_types"));
  CHECK_FALSE(m.contains("use_sliding_window"));

  // Written, then read as a model directory: the same shape.
  for (const json& block : {json(qwen2), mistral_block()}) {
    INFO(block.dump());
    TempDir tmp;
    const config::ModelConfig model = model_of(block);
    fs::create_directories(tmp.file("dir"));
    std::ofstream(tmp.file("dir") + "/config.json") << hf_config_json(model.shape, DType::F32).dump(2);
    CHECK(config::read_model_block({{"path", tmp.file("dir")}}, "test").shape == model.shape);
  }
}

TEST_CASE("config.json keeps the source directory's other keys and its rotary layout", "[hf]") {
  // transformers 4's layout, as Qwen2.5's config.json has it.
  const nlohmann::ordered_json qwen_source = {
      {"architectures", {"Qwen2ForCausalLM"}}, {"bos_token_id", 151643}, {"eos_token_id", 151643},
      {"hidden_size", 896}, {"max_window_layers", 21}, {"model_type", "qwen2"}, {"rope_theta", 1000000.0},
      {"sliding_window", 32768}, {"use_sliding_window", false}, {"torch_dtype", "bfloat16"},
      {"transformers_version", "4.43.1"}};
  const auto q = hf_config_json(model_of(qwen2_block()).shape, DType::F32, qwen_source);
  CHECK(q.at("bos_token_id") == 151643);
  CHECK(q.at("transformers_version") == "4.43.1");
  CHECK(q.at("max_window_layers") == 21);
  CHECK(q.at("sliding_window") == 32768);  // unused: use_sliding_window stays false
  CHECK(q.at("use_sliding_window") == false);
  CHECK(q.at("hidden_size") == 64);  // the model keys are the trained model's
  CHECK(q.at("torch_dtype") == "float32");
  CHECK(q.begin().key() == "architectures");
  CHECK(std::next(q.begin()).key() == "model_type");

  // transformers 5's layout: rope_parameters, and dtype beside torch_dtype.
  const nlohmann::ordered_json llama_source = {{"model_type", "llama"},
                                               {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
                                               {"dtype", "bfloat16"},
                                               {"eos_token_id", {128001, 128008, 128009}}};
  const auto l = hf_config_json(model_of(llama3_block()).shape, DType::F32, llama_source);
  CHECK_FALSE(l.contains("rope_theta"));
  CHECK_FALSE(l.contains("rope_scaling"));
  CHECK(json::parse(l.at("rope_parameters").dump()) == json({{"rope_type", "llama3"},
                                                             {"factor", 8.0},
                                                             {"low_freq_factor", 1.0},
                                                             {"high_freq_factor", 4.0},
                                                             {"original_max_position_embeddings", 64},
                                                             {"rope_theta", 500000.0}}));
  CHECK(l.at("dtype") == "float32");
  CHECK(l.at("eos_token_id") == json({128001, 128008, 128009}));

  // A source of another family lends nothing.
  const auto other = hf_config_json(model_of(llama3_block()).shape, DType::F32, qwen_source);
  CHECK_FALSE(other.contains("bos_token_id"));
  CHECK(other.at("rope_theta") == 500000.0);
}

TEST_CASE("a model directory holds every tensor bit for bit, in shards above the limit", "[hf]") {
  TempDir tmp;
  const config::ModelConfig model = model_of(qwen3_block());
  const GptShape shape = model.shape;
  const std::vector<float> flat = weights_of(shape);
  REQUIRE(shape.padded_vocab() > shape.vocab_size);
  const std::string dir = tmp.file("out");

  HfOutput sharded;
  sharded.max_shard_bytes = 40000;
  write_directory(dir, model, flat, sharded);
  CHECK(read_hf_weights(dir, shape, "F32") == flat);
  const json index = json::parse(slurp(dir + "/model.safetensors.index.json"));
  uint64_t total = 0;
  std::map<std::string, uint64_t> bytes_in;
  std::vector<std::string> order;  // the file of each tensor in layout order
  for (const HfTensor& t : hf_tensors(shape)) {
    const uint64_t b = 4 * t.shape[0] * (t.shape.size() > 1 ? t.shape[1] : 1);
    total += b;
    const std::string file = index.at("weight_map").at(t.name);
    bytes_in[file] += b;
    order.push_back(file);
  }
  CHECK(index.at("metadata").at("total_size") == total);
  REQUIRE(bytes_in.size() > 2);
  CHECK(std::is_sorted(order.begin(), order.end()));  // consecutive tensors, files in order
  const std::string last =
      "model-" + fmt::format("{:05d}-of-{:05d}", bytes_in.size(), bytes_in.size()) + ".safetensors";
  CHECK(bytes_in.count(last) == 1);
  for (auto& [file, bytes] : bytes_in) {
    INFO(file);
    // The embedding alone (300 x 64 x 4 bytes) is larger than the limit: a file of its own.
    CHECK((bytes <= sharded.max_shard_bytes || SafetensorsReader(dir + "/" + file).tensors().size() == 1));
  }
  CHECK_FALSE(fs::exists(dir + "/model.safetensors"));

  // Saved again unsharded: the shards and the index of the earlier save go (transformers would
  // read model.safetensors first anyway), and nothing temporary stays.
  write_directory(dir, model, flat, HfOutput());
  CHECK(names_in(dir) == std::set<std::string>{"config.json", "model.safetensors"});
  CHECK(read_hf_weights(dir, shape, "F32") == flat);
  write_directory(dir, model, flat, sharded);
  CHECK_FALSE(fs::exists(dir + "/model.safetensors"));
  CHECK(read_hf_weights(dir, shape, "F32") == flat);
  CHECK(json::parse(slurp(dir + "/config.json")) == json(hf_config_json(model.shape, DType::F32)));
}

TEST_CASE("bf16 and fp16 round to nearest even; fp16 refuses a weight beyond its range", "[hf]") {
  TempDir tmp;
  const config::ModelConfig model = model_of(llama3_block());
  const GptShape shape = model.shape;
  std::vector<float> flat = weights_of(shape);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] *= 1.0f + 1e-3f * float(i % 7);  // not representable
  for (DType dtype : {DType::BF16, DType::F16}) {
    const std::string dir = tmp.file(std::string(dtype_name(dtype)));
    write_directory(dir, model, flat, HfOutput(dtype));
    const std::vector<float> back = read_hf_weights(dir, shape, dtype == DType::BF16 ? "BF16" : "F16");
    for (size_t i = 0; i < flat.size(); ++i) {
      const float want = dtype == DType::BF16 ? bf16_to_f32(f32_to_bf16(flat[i])) : f16_to_f32(f32_to_f16(flat[i]));
      REQUIRE(back[i] == want);
    }
    CHECK(json::parse(slurp(dir + "/config.json")).at("torch_dtype") ==
          (dtype == DType::BF16 ? "bfloat16" : "float16"));
  }
  const HfTensor down = hf_tensors(shape)[8];
  flat[down.offset + 3] = 70000.0f;
  const std::string dir = tmp.file("too_large");
  const std::string error = error_of([&] { write_directory(dir, model, flat, HfOutput(DType::F16)); });
  CHECK(error.find("tensor " + down.name + " element 3 is 70000, beyond fp16's range") != std::string::npos);
  // Written beside its place: the directory never appeared, and nothing staged is left.
  CHECK_FALSE(fs::exists(dir));
  for (const std::string& name : names_in(tmp.path.string())) CHECK(name.find("too_large") == std::string::npos);
}

TEST_CASE("the tokenizer files and generation_config.json come from the source directory", "[hf]") {
  TempDir tmp;
  const std::string source = tmp.file("Llama-3.2-1B");
  fs::create_directories(source);
  std::ofstream(source + "/tokenizer.json") << "{\"model\": {\"type\": \"BPE\"}}";
  std::ofstream(source + "/tokenizer_config.json") << "{\"bos_token\": \"<|begin_of_text|>\"}";
  std::ofstream(source + "/special_tokens_map.json") << "{}";
  std::ofstream(source + "/generation_config.json") << "{\"do_sample\": true, \"temperature\": 0.6}";
  std::ofstream(source + "/config.json") << "{\"model_type\": \"llama\", \"bos_token_id\": 128000}";
  std::ofstream(source + "/README.md") << "not a tokenizer file";
  std::ofstream(source + "/model.safetensors") << "the source's weights";

  const config::ModelConfig model = model_of(llama3_block());
  HfOutput output;
  output.model_dir = output.tokenizer_dir = source;
  output.model_config = read_hf_config_json(source);
  const std::string dir = tmp.file("out");
  write_directory(dir, model, weights_of(model.shape), output);
  CHECK(names_in(dir) == std::set<std::string>{"config.json", "model.safetensors", "tokenizer.json",
                                               "tokenizer_config.json", "special_tokens_map.json",
                                               "generation_config.json"});
  for (const char* name :
       {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json"})
    CHECK(slurp(dir + "/" + name) == slurp(source + "/" + name));
  CHECK(json::parse(slurp(dir + "/config.json")).at("bos_token_id") == 128000);

  // The source is the run's model.path, or init_from naming a model directory.
  CHECK(hf_source_directory("", source) == source);
  CHECK(hf_source_directory(source, "") == source);
  CHECK(hf_source_directory("", source + "/model.safetensors").empty());
  CHECK(hf_source_directory("", tmp.file("ckpt")).empty());
}

TEST_CASE("writing refuses a layout that is not the model's, and an output it cannot create", "[hf]") {
  TempDir tmp;
  const config::ModelConfig model = model_of(qwen2_block());
  const ParamLayout other = make_gpt_layout(model_of(qwen3_block()).shape);
  CHECK(error_of([&] { HfModelWriter(tmp.file("a"), other, model.shape, HfOutput()); })
            .find("does not hold tensor model.layers.0.self_attn.q_proj.weight where a qwen2 model") !=
        std::string::npos);
  std::ofstream(tmp.file("file")) << "x";
  CHECK(error_of([&] { HfModelWriter(tmp.file("file/out"), make_gpt_layout(model.shape), model.shape, HfOutput()); })
            .find("cannot create directory") != std::string::npos);
}

TEST_CASE("sizes read as transformers' max_shard_size", "[hf]") {
  CHECK(parse_byte_size("5GB", "x") == 5'000'000'000ull);
  CHECK(parse_byte_size("500MB", "x") == 500'000'000ull);
  CHECK(parse_byte_size("16kB", "x") == 16'000ull);
  CHECK(parse_byte_size("2GiB", "x") == 2147483648ull);
  CHECK(parse_byte_size("1.5GB", "x") == 1'500'000'000ull);
  CHECK(parse_byte_size("4096", "x") == 4096ull);
  for (const char* bad : {"", "GB", "5XB", "-1", "0", "1.2.3MB"})
    CHECK(error_of([&] { parse_byte_size(bad, "--max-shard-size"); })
              .find("--max-shard-size: \"" + std::string(bad) + "\" is not a size") != std::string::npos);
}

namespace {

// A checkpoint of `world` ranks holding `flat` as the master weights (Adam's moments zero), the
// pieces cut as the engine cuts them.
void write_checkpoint(const std::string& root, const config::ModelConfig& model, const std::vector<float>& flat,
                      int world) {
  const ParamLayout layout = make_gpt_layout(model.shape);
  CheckpointMeta meta;
  meta.step = 4;
  meta.world_size = world;
  meta.stage = 3;
  meta.flat_params = meta.padded_params = layout.total;
  meta.model = config::model_json(model);
  meta.layout = layout;
  meta.data = json::object();
  meta.config = {{"model", meta.model}};
  const std::string dir = (fs::path(root) / step_dir_name(4)).string();
  fs::create_directories(dir);
  const std::vector<float> zeros(layout.total, 0.0f);
  const uint64_t unit = uint64_t(world) * 64, per = (layout.total + unit - 1) / unit * unit / uint64_t(world);
  for (int r = 0; r < world; ++r) {
    const Range range = Range{uint64_t(r) * per, uint64_t(r + 1) * per}.intersect({0, layout.total});
    const float* state[3] = {flat.data() + range.begin, zeros.data(), zeros.data()};
    const std::string file = shard_file_name(r, world);
    const ShardWritten w =
        write_shard_file((fs::path(dir) / file).string(), {range, meta.step, layout_crc32c(layout)}, state);
    meta.shards.push_back({r, file, range, w.bytes, w.crc32c});
  }
  std::ofstream((fs::path(dir) / "meta.json").string()) << meta_file_text(meta);
  publish_latest(root, step_dir_name(4));
}

}  // namespace

TEST_CASE("export writes a llama-family checkpoint of any world size as the directory of its weights",
          "[hf][export]") {
  TempDir tmp;
  for (const json& block : {qwen2_block(), qwen3_block(), llama3_block()}) {
    const config::ModelConfig model = model_of(block);
    const std::string type(kModelTypeNames.name(model.shape.model_type));
    INFO(type);
    const GptShape shape = model.shape;
    const std::vector<float> flat = weights_of(shape);
    const std::string whole = tmp.file("whole_" + type);
    write_directory(whole, model, flat, HfOutput());
    for (int world : {1, 3}) {
      const std::string ckpt = tmp.file("ckpt_" + type + std::to_string(world));
      write_checkpoint(ckpt, model, flat, world);
      const std::string out = ckpt + "_export";
      export_checkpoint(ckpt, out, HfOutput());
      CHECK(slurp(out + "/model.safetensors") == slurp(whole + "/model.safetensors"));
      CHECK(slurp(out + "/config.json") == slurp(whole + "/config.json"));
      HfOutput sharded;
      sharded.max_shard_bytes = 30000;
      export_checkpoint(ckpt + "/step_00000004", out + "_sharded", sharded);
      CHECK(fs::exists(out + "_sharded/model.safetensors.index.json"));
      CHECK(read_hf_weights(out + "_sharded", shape, "F32") == flat);
    }
  }
}

TEST_CASE("meta.json records the architecture; older checkpoints read as the model they hold", "[hf]") {
  CheckpointMeta m;
  m.flat_params = 0;
  m.model = config::model_json(model_of(qwen3_block()));
  m.shards.push_back({0, "shard-00000-of-00001.safetensors", {0, 0}, 0, 0});
  m.data = json::object();
  const json written = meta_to_json(m);
  CHECK(meta_from_json(written, "meta.json").model == m.model);

  json old = written;  // before the model block: the sizes alone
  old["model"] = {{"n_layer", 2}, {"n_head", 4}, {"d_model", 64}, {"vocab_size", 300}, {"max_seq_len", 128}};
  const json gpt2 = meta_from_json(old, "meta.json").model;
  CHECK(gpt2.at("model_type") == "gpt2");
  CHECK(gpt2.at("d_model") == 64);
  old["config"] = {{"model", m.model}};  // the run's config has the architecture
  CHECK(meta_from_json(old, "meta.json").model == m.model);
  old["model"].erase("d_model");
  CHECK(error_of([&] { meta_from_json(old, "meta.json"); }).find("meta.json: missing key \"model.d_model\"") !=
        std::string::npos);
}

TEST_CASE("a checkpoint of another architecture is refused; init_from may change what is not the model type",
          "[hf]") {
  CheckpointMeta saved;
  saved.model = config::model_json(model_of(llama_bias_block()));
  json mistral = llama_bias_block();
  mistral["model_type"] = "mistral";
  mistral.erase("attention_bias");
  mistral.erase("mlp_bias");
  for (bool weights_only : {false, true}) {
    const std::string error = error_of([&] {
      check_checkpoint_architecture("ck/step_00000004", saved, config::model_json(model_of(mistral)), weights_only);
    });
    CHECK(error.find("ck/step_00000004: holds a llama model and this run builds a mistral model (model.model_type)") !=
          std::string::npos);
  }
  json theta = llama_bias_block();
  theta["rope_theta"] = 500000.0;
  const json now = config::model_json(model_of(theta));
  CHECK(error_of([&] { check_checkpoint_architecture("ck", saved, now, false); })
            .find("ck: saved by a run with model.rope_theta 10000.0 and this run has 500000.0") != std::string::npos);
  CHECK(error_of([&] { check_checkpoint_architecture("ck", saved, now, true); }).empty());
  json longer = llama_bias_block();
  longer["max_seq_len"] = 256;
  CHECK(error_of([&] { check_checkpoint_architecture("ck", saved, config::model_json(model_of(longer)), false); })
            .empty());
  // A checkpoint recorded before a key existed resumes where this run leaves it null (layer_types),
  // and not where it sets it.
  CheckpointMeta older = saved;
  older.model.erase("layer_types");
  CHECK(error_of([&] { check_checkpoint_architecture("ck", older, saved.model, false); }).empty());
  json qwen = qwen2_block();
  qwen.update({{"sliding_window", 16}, {"layer_types", {"full_attention", "sliding_attention"}}});
  CheckpointMeta older_qwen;
  older_qwen.model = config::model_json(model_of(qwen));
  older_qwen.model.erase("layer_types");
  CHECK(error_of([&] { check_checkpoint_architecture("ck", older_qwen, config::model_json(model_of(qwen)), false); })
            .find("ck: saved by a run with model.layer_types (absent) and this run has [\"full_attention\"") !=
        std::string::npos);
}

// Checkpoint files without a training run (lib/ckpt): shards written as N ranks would write them
// are read back exactly at any other world size; the background writer moves `latest` only when a
// checkpoint is complete and keeps the previous one when a write fails; damaged checkpoints are
// refused with the file named; export streams the same bytes the whole-buffer writer produces.
#include <signal.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "../data/temp_dir.hpp"
#include "ckpt_test_support.hpp"
#include "ckpt/checkpoint_dir.hpp"
#include "ckpt/checkpoint_reader.hpp"
#include "ckpt/checkpoint_writer.hpp"
#include "hf/hf_writer.hpp"
#include "train/model_export.hpp"
#include "core/crc32c.hpp"
#include "ckpt/safetensors.hpp"
#include "ckpt/shard_file.hpp"
#include "comm/local_communicator.hpp"
#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "model/gpt_layout.hpp"

using namespace zt;
using namespace zt::test;
using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

// A GPT-2 of 1308 flat elements whose vocabulary (130) is padded to 256 rows: exports cut them.
const GptShape kShape{1, 1, 4, 130, 8};
const nlohmann::json kModelBlock = {{"model_type", "gpt2"}, {"n_layer", 1}, {"n_head", 1},
                                    {"d_model", 4},          {"vocab_size", 130}, {"max_seq_len", 8}};

// Distinct, exactly representable values per tensor and element.
float value(StateTensor t, uint64_t i) { return float(int(t) + 1) * 0.001f * float(int64_t(i % 997) - 400); }

struct FullState {
  std::vector<float> v[3];
  explicit FullState(size_t n, bool filled) {
    for (int t = 0; t < 3; ++t) {
      v[t].assign(n, 0.0f);
      if (filled)
        for (size_t i = 0; i < n; ++i) v[t][i] = value(kStateTensors[t], i);
    }
  }
};

// The state of one rank: the elements `held` of a full-size state.
class VectorState final : public StateAccess {
public:
  VectorState(FullState& s, Range held) : s_(s), held_(held) {}
  Range held() const override { return held_; }
  void read_state(StateTensor t, Range r, float* host) const override {
    REQUIRE(r.intersect(held_).size() == r.size());
    std::copy(s_.v[int(t)].begin() + long(r.begin), s_.v[int(t)].begin() + long(r.end), host);
  }
  void write_state(StateTensor t, Range r, const float* host) override {
    REQUIRE(r.intersect(held_).size() == r.size());
    std::copy(host, host + r.size(), s_.v[int(t)].begin() + long(r.begin));
  }

private:
  FullState& s_;
  Range held_;
};

// A checkpoint root emptied of what a failed save left, as a run prepares it.
std::string prepared_root(const std::string& root) {
  prepare_checkpoint_root(root);
  return root;
}

// One rank's whole state of kShape's model and its writer, keeping the last KeepLast checkpoints
// (0: all) under a fresh root.
template <int KeepLast>
struct WriterFixture {
  TempDir tmp;
  const std::string root = prepared_root(tmp.file("ckpt"));
  const ParamLayout layout = make_gpt_layout(kShape);
  FullState s{layout.total, true};
  VectorState state{s, {0, layout.total}};
  std::unique_ptr<Communicator> comm = make_local_communicator();
  CheckpointWriter writer{root, KeepLast, comm->control(), cpu_device(), {0, layout.total}};
};

// Rank r's elements in a world of w, as the engine's partition cuts them (64-element alignment).
Range piece(uint64_t n, int w, int r) {
  const uint64_t unit = uint64_t(w) * 64, padded = (n + unit - 1) / unit * unit, s = padded / uint64_t(w);
  return Range{uint64_t(r) * s, uint64_t(r + 1) * s}.intersect({0, n});
}

CheckpointMeta base_meta(const ParamLayout& layout, int64_t step, int world) {
  CheckpointMeta m;
  m.step = step;
  m.world_size = world;
  m.flat_params = layout.total;
  m.padded_params = layout.total;
  m.model = kModelBlock;
  m.layout = layout;
  m.optimizer_steps = step;
  m.loss_scaler = {1024.0f, 1, step, 2};
  m.data = {{"next_step", step}};
  m.config = {{"note", "test"}};
  return m;
}

// A complete checkpoint as `world` ranks write it, by hand from the same pieces the writer uses.
std::string write_checkpoint(const std::string& root, const ParamLayout& layout, const FullState& s, int world,
                             int64_t step) {
  CheckpointMeta meta = base_meta(layout, step, world);
  const std::string dir = (fs::path(root) / step_dir_name(step)).string();
  fs::create_directories(dir);
  for (int r = 0; r < world; ++r) {
    const Range range = piece(layout.total, world, r);
    const float* state[3] = {s.v[0].data() + range.begin, s.v[1].data() + range.begin, s.v[2].data() + range.begin};
    const std::string file = shard_file_name(r, world);
    const ShardWritten w =
        write_shard_file((fs::path(dir) / file).string(), {range, step, layout_crc32c(layout)}, state);
    meta.shards.push_back({r, file, range, w.bytes, w.crc32c});
  }
  std::ofstream((fs::path(dir) / "meta.json").string()) << meta_file_text(meta);
  publish_latest(root, step_dir_name(step));
  return dir;
}

// Three ranks' checkpoint of step 5 of a filled state of kShape's model, under a fresh root.
struct SavedCheckpoint {
  TempDir tmp;
  const std::string root = tmp.file("ckpt");
  const ParamLayout layout = make_gpt_layout(kShape);
  const FullState saved{layout.total, true};
  const std::string dir = write_checkpoint(root, layout, saved, 3, 5);
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void overwrite(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A message fit for any terminal: printable ASCII only, nothing a damaged file held raw.
bool printable_ascii(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

}  // namespace

TEST_CASE("crc32c: test vectors, in pieces, and the table and instruction paths agree", "[ckpt][crc32c]") {
  CHECK(crc32c("123456789", 9) == 0xE3069283u);
  CHECK(crc32c_portable("123456789", 9) == 0xE3069283u);
  std::vector<unsigned char> bytes(100003);
  uint32_t x = 1;
  for (auto& b : bytes) b = uint8_t((x = x * 1664525u + 1013904223u) >> 24);
  const uint32_t whole = crc32c(bytes.data(), bytes.size());
  CHECK(crc32c_portable(bytes.data(), bytes.size()) == whole);
  for (size_t cut : {size_t(0), size_t(1), size_t(7), size_t(4096), size_t(99999)})
    CHECK(crc32c(bytes.data() + cut, bytes.size() - cut, crc32c(bytes.data(), cut)) == whole);
  // One bit flipped anywhere changes it.
  bytes[50000] ^= 0x10;
  CHECK(crc32c(bytes.data(), bytes.size()) != whole);
}

TEST_CASE("a checkpoint of 4 ranks is read back exactly by 1, 2, 3, 4 and 5 ranks", "[ckpt][reshard]") {
  TempDir tmp;
  const ParamLayout layout = make_gpt_layout(kShape);
  const FullState saved(layout.total, true);
  write_checkpoint(tmp.file("ckpt"), layout, saved, 4, 7);
  const CheckpointReader ckpt(resolve_checkpoint(tmp.file("ckpt")));
  ckpt.check_layout(layout);
  CHECK(ckpt.meta().step == 7);
  CHECK(ckpt.meta().loss_scaler.scale == 1024.0f);
  for (int world : {1, 2, 3, 4, 5}) {
    FullState loaded(layout.total, false);
    for (int r = 0; r < world; ++r) {
      VectorState state(loaded, piece(layout.total, world, r));
      load_state(ckpt, state, /*weights_only=*/false, r, world);
    }
    INFO("read by " << world << " ranks");
    for (int t = 0; t < 3; ++t) CHECK(loaded.v[t] == saved.v[t]);
  }
  // Stage 0 holds everything on every rank; weights only leaves Adam's moments alone.
  FullState weights(layout.total, false);
  VectorState all(weights, {0, layout.total});
  load_state(ckpt, all, /*weights_only=*/true, 1, 2);
  CHECK(weights.v[0] == saved.v[0]);
  CHECK(std::all_of(weights.v[1].begin(), weights.v[1].end(), [](float f) { return f == 0.0f; }));
}

TEST_CASE_METHOD(WriterFixture<2>,
                 "the writer saves in the background and moves latest only once the checkpoint is complete",
                 "[ckpt][writer]") {
  writer.save(base_meta(layout, 2, 1), state);
  CHECK(writer.in_flight());
  // Until every rank has written and the ranks have agreed, nothing is named a checkpoint.
  CHECK_FALSE(fs::exists(fs::path(root) / "latest"));
  CHECK_FALSE(fs::exists(fs::path(root) / "step_00000002"));
  s.v[0][5] = 99.0f;  // the staging copy was taken: training may change the state
  writer.finish();
  CHECK_FALSE(writer.in_flight());
  CHECK(writer.last_complete_step() == 2);
  CHECK(slurp(root + "/latest") == "step_00000002\n");
  CHECK_FALSE(fs::exists(fs::path(root) / "step_00000002.tmp"));
  {
    const CheckpointReader ckpt(resolve_checkpoint(root));
    ckpt.verify(0);
    float x = 0;
    ckpt.read(StateTensor::Master, {5, 6}, &x);
    CHECK(x == value(StateTensor::Master, 5));
    const ShardWritten sum = checksum_file(ckpt.shard_path(0));
    CHECK(ckpt.meta().shards[0].crc32c == sum.crc32c);
    CHECK(ckpt.meta().shards[0].bytes == sum.bytes);
  }

  // keep_last 2: the third save removes the first.
  writer.save(base_meta(layout, 4, 1), state);
  writer.poll();  // a world of one: the file is done once the thread is; poll may or may not see it
  writer.save(base_meta(layout, 6, 1), state);  // waits for step 4 first
  writer.finish();
  std::vector<int64_t> steps;
  for (auto& d : list_checkpoints(root)) steps.push_back(d.step);
  CHECK(steps == std::vector<int64_t>{4, 6});
  CHECK(slurp(root + "/latest") == "step_00000006\n");

  // A run that went back to step 4 and saves step 6 again replaces the one `latest` names.
  s.v[0][5] = -7.0f;
  writer.save(base_meta(layout, 6, 1), state);
  writer.finish();
  CHECK(slurp(root + "/latest") == "step_00000006\n");
  float x = 0;
  CheckpointReader(resolve_checkpoint(root)).read(StateTensor::Master, {5, 6}, &x);
  CHECK(x == -7.0f);
}

TEST_CASE_METHOD(WriterFixture<0>, "a failed write names the file, and the previous checkpoint and latest stay valid",
                 "[ckpt][writer]") {
  writer.save(base_meta(layout, 2, 1), state);
  writer.finish();

  SECTION("the file system refuses the data (file size limit: EFBIG, as ENOSPC would)") {
    CapturedLog log;
    struct rlimit old {};
    getrlimit(RLIMIT_FSIZE, &old);
    auto previous = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 4096;  // a shard is 15 KB
    setrlimit(RLIMIT_FSIZE, &small);
    writer.save(base_meta(layout, 4, 1), state);
    CHECK_THROWS_AS(writer.finish(), CheckpointFailed);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, previous);
    INFO(log.text.str());
    CHECK(log.text.str().find("step_00000004.tmp/shard-00000-of-00001.safetensors.tmp: write of") != std::string::npos);
    CHECK(log.text.str().find(std::strerror(EFBIG)) != std::string::npos);
  }
  SECTION("the step directory cannot be created") {
    CapturedLog log;
    std::ofstream(root + "/step_00000004.tmp") << "in the way";
    writer.save(base_meta(layout, 4, 1), state);
    CHECK_THROWS_AS(writer.finish(), CheckpointFailed);
    INFO(log.text.str());
    CHECK(log.text.str().find("step_00000004.tmp: cannot create") != std::string::npos);
  }
  CHECK(slurp(root + "/latest") == "step_00000002\n");
  CHECK_FALSE(fs::exists(root + "/step_00000004"));
  CHECK(CheckpointReader(resolve_checkpoint(root)).meta().step == 2);
  // What the failed save left is removed before the next run saves.
  prepare_checkpoint_root(root);
  CHECK_FALSE(fs::exists(root + "/step_00000004.tmp"));
  CHECK(fs::exists(root + "/step_00000002/meta.json"));
}

TEST_CASE_METHOD(SavedCheckpoint, "damaged checkpoints are refused with the file named", "[ckpt][refuse]") {
  const std::string shard1 = dir + "/shard-00001-of-00003.safetensors";
  auto load_all = [&](FullState& into) {
    const CheckpointReader ckpt(dir);
    ckpt.check_layout(layout);
    VectorState state(into, {0, layout.total});
    load_state(ckpt, state, false, 0, 1);
  };

  SECTION("a flipped byte: checksum mismatch, and nothing is loaded") {
    std::string bytes = slurp(shard1);
    bytes[bytes.size() - 100] ^= 0x01;
    std::ofstream(shard1, std::ios::binary) << bytes;
    FullState into(layout.total, false);
    const std::string e = error_of([&] { load_all(into); });
    CHECK(e.find(shard1 + ": checksum mismatch") != std::string::npos);
    CHECK(std::all_of(into.v[0].begin(), into.v[0].end(), [](float f) { return f == 0.0f; }));
  }
  SECTION("truncated") {
    fs::resize_file(shard1, fs::file_size(shard1) - 8);
    const std::string e = error_of([&] { CheckpointReader r(dir); });
    CHECK(e.find(shard1 + ": truncated:") != std::string::npos);
  }
  SECTION("missing") {
    fs::remove(shard1);
    const std::string e = error_of([&] { CheckpointReader r(dir); });
    CHECK(e.find(shard1 + ": missing (the shard of rank 1 of 3") != std::string::npos);
  }
  SECTION("a format version this build does not know") {
    nlohmann::json meta = nlohmann::json::parse(slurp(dir + "/meta.json"));
    meta["format_version"] = 99;
    std::ofstream(dir + "/meta.json") << meta.dump();
    const std::string e = error_of([&] { CheckpointReader r(dir); });
    CHECK(e.find(dir + "/meta.json: format_version 99 is not known to this zerotrain (it reads versions 1 to 2") !=
          std::string::npos);
  }
  SECTION("no meta.json: an incomplete save") {
    fs::remove(dir + "/meta.json");
    const std::string e = error_of([&] { CheckpointReader r(dir); });
    CHECK(e.find("is not a complete checkpoint") != std::string::npos);
    CHECK(error_of([&] { resolve_checkpoint(root); }).find(root + "/latest: names " + dir) != std::string::npos);
  }
  SECTION("a model of another shape: the tensor and both shapes") {
    GptShape wider = kShape;
    wider.d_model = 8;
    const CheckpointReader ckpt(dir);
    CHECK(error_of([&] { ckpt.check_layout(make_gpt_layout(wider)); }) ==
          dir + ": saved from a model of another shape: tensor wte.weight is [256, 4] in the checkpoint and [256, 8] "
                "in this model");
    GptShape deeper = kShape;
    deeper.n_layer = 2;
    CHECK(error_of([&] { ckpt.check_layout(make_gpt_layout(deeper)); })
              .find("this model's tensor h.1.ln_1.weight [4] is not in the checkpoint") != std::string::npos);
  }
  SECTION("paths that are not checkpoints") {
    CHECK(error_of([&] { resolve_checkpoint(tmp.file("nowhere")); }).find("no such checkpoint directory") !=
          std::string::npos);
    fs::create_directories(tmp.file("empty"));
    CHECK(error_of([&] { resolve_checkpoint(tmp.file("empty")); }).find("not a checkpoint") != std::string::npos);
    std::ofstream(root + "/latest") << "garbage\n";
    CHECK(error_of([&] { resolve_checkpoint(root); }).find("is not the name of a step directory") != std::string::npos);
  }
}

TEST_CASE_METHOD(SavedCheckpoint,
                 "damaged or edited checkpoint metadata is refused with the file named and no raw bytes",
                 "[ckpt][refuse][meta]") {
  const std::string meta_path = dir + "/meta.json";
  const std::string meta_text = slurp(meta_path);
  auto load_all = [&] {
    const CheckpointReader ckpt(resolve_checkpoint(root));
    ckpt.check_layout(layout);
    FullState into(layout.total, false);
    VectorState state(into, {0, layout.total});
    load_state(ckpt, state, false, 0, 1);
  };
  REQUIRE(error_of(load_all).empty());
  // meta.json as written for `meta`, with a checksum of its own that matches: an edit made with care.
  auto rewrite_meta = [&](const std::function<void(CheckpointMeta&)>& edit) {
    CheckpointMeta meta = read_meta(dir);
    edit(meta);
    overwrite(meta_path, meta_file_text(meta));
  };

  SECTION("the step edited by hand: meta.json's checksum no longer matches") {
    const size_t at = meta_text.find("\"step\": 5,");
    REQUIRE(at != std::string::npos);
    std::string edited = meta_text;
    edited.replace(at, 10, "\"step\": 9,");
    overwrite(meta_path, edited);
    const std::string e = error_of(load_all);
    INFO(e);
    CHECK(e.find(meta_path + ": checksum mismatch") != std::string::npos);
    CHECK(printable_ascii(e));
  }
  SECTION("the step edited and the checksum recomputed: the shard headers record another step") {
    rewrite_meta([](CheckpointMeta& m) { m.step = 9; });
    const std::string e = error_of(load_all);
    INFO(e);
    CHECK(e.find(dir + "/shard-00000-of-00003.safetensors: written at step \"5\", but " + meta_path +
                 " records step 9") != std::string::npos);
    CHECK(printable_ascii(e));
  }
  SECTION("a meta.json of another checkpoint moved in: refused by the shard headers") {
    write_checkpoint(root, layout, saved, 3, 8);
    fs::copy_file(root + "/step_00000008/meta.json", meta_path, fs::copy_options::overwrite_existing);
    // Its shard records name files of the same size, but not their bytes or step.
    const std::string e = error_of([&] {
      const CheckpointReader ckpt(dir);
      for (size_t i = 0; i < ckpt.meta().shards.size(); ++i) ckpt.verify(i);
    });
    INFO(e);
    CHECK(e.find(dir + "/shard-00000-of-00003.safetensors: ") != std::string::npos);
  }
  SECTION("the layout edited and the checksum recomputed: the shard headers record another layout") {
    rewrite_meta([](CheckpointMeta& m) {
      // Two tensors of the same size swap places: the totals still agree.
      auto& tensors = m.layout.groups.back().tensors;
      REQUIRE(tensors.size() >= 2);
      std::swap(tensors[0].name, tensors[1].name);
    });
    const std::string e = error_of(load_all);
    INFO(e);
    CHECK(e.find(dir + "/shard-00000-of-00003.safetensors: written for a parameter layout of CRC32C") !=
          std::string::npos);
    CHECK(e.find(meta_path) != std::string::npos);
    CHECK(printable_ascii(e));
  }
  SECTION("a flipped byte anywhere in meta.json") {
    for (size_t at : {size_t(3), meta_text.size() / 3, meta_text.size() / 2, meta_text.size() - 30,
                      meta_text.size() - 5}) {
      for (unsigned char bit : {0x01, 0x80}) {
        std::string damaged = meta_text;
        damaged[at] = char(damaged[at] ^ bit);
        overwrite(meta_path, damaged);
        const std::string e = error_of(load_all);
        INFO("byte " << at << " ^ " << int(bit) << ": " << e);
        CHECK(e.find(meta_path + ": ") == 0);
        CHECK(printable_ascii(e));
      }
    }
  }
  SECTION("binary junk in meta.json: the bytes are shown escaped") {
    overwrite(meta_path, "{\"format\": \"\xff\xfe\x1b[31mred\x07\""s);
    const std::string e = error_of(load_all);
    INFO(e);
    CHECK(e.find(meta_path + ": not valid JSON at byte") == 0);
    CHECK(e.find("\\xff\\xfe\\x1b[31mred") != std::string::npos);
    CHECK(printable_ascii(e));
  }
  SECTION("binary junk in latest: the bytes are shown escaped") {
    overwrite(root + "/latest", "\xc3\x28\x1b]0;owned\x07step_1\0\n"s);
    const std::string e = error_of(load_all);
    INFO(e);
    CHECK(e.find(root + "/latest: \"\\xc3(\\x1b]0;owned\\x07step_1\\x00\\n\" is not the name of a step directory") ==
          0);
    CHECK(printable_ascii(e));
  }
  SECTION("a checkpoint of format version 1 (no checksum of meta.json, no step in the shard headers) is read") {
    nlohmann::json meta = nlohmann::json::parse(meta_text);
    meta["format_version"] = 1;
    meta.erase("meta_crc32c");
    overwrite(meta_path, meta.dump(1));
    CHECK(error_of(load_all) == "");
    CHECK(CheckpointReader(dir).meta().format_version == 1);
  }
}

TEST_CASE("export streams the bytes the whole-buffer writer gives; bf16 rounds to nearest even", "[ckpt][export]") {
  TempDir tmp;
  const ParamLayout layout = make_gpt_layout(kShape);
  const FullState saved(layout.total, true);
  write_checkpoint(tmp.file("ckpt"), layout, saved, 3, 5);

  export_checkpoint(tmp.file("ckpt"), tmp.file("fp32"), HfOutput(DType::F32));
  HfModelWriter whole(tmp.file("whole"), layout, kShape, HfOutput(DType::F32));
  for (auto& g : layout.groups) whole.write_group(g, saved.v[0].data() + g.offset);
  whole.commit();
  CHECK(slurp(tmp.file("fp32/model.safetensors")) == slurp(tmp.file("whole/model.safetensors")));
  CHECK(nlohmann::json::parse(slurp(tmp.file("fp32/config.json")))["torch_dtype"] == "float32");

  export_checkpoint(tmp.file("ckpt/step_00000005"), tmp.file("bf16"), HfOutput(DType::BF16));
  SafetensorsReader bf16(tmp.file("bf16/model.safetensors"));
  const SafetensorsEntry* wte = bf16.find("wte.weight");
  REQUIRE(wte);
  CHECK(wte->dtype == "BF16");
  CHECK(wte->shape == std::vector<uint64_t>{130, 4});  // the vocabulary without its padding rows
  for (auto& g : layout.groups)
    for (auto& t : g.tensors) {
      const SafetensorsEntry* e = bf16.find(t.name);
      REQUIRE(e);
      std::vector<float> got(e->numel());
      bf16.read_f32(*e, got.data());
      for (size_t i = 0; i < got.size(); ++i)
        REQUIRE(got[i] == bf16_to_f32(f32_to_bf16(saved.v[0][t.offset + i])));
    }
  CHECK(nlohmann::json::parse(slurp(tmp.file("bf16/config.json")))["torch_dtype"] == "bfloat16");
}

TEST_CASE("a layout with frozen tensors: meta.json marks them, the shards hold the trainable ones",
          "[ckpt][frozen]") {
  TempDir tmp;
  ParamLayout layout = make_gpt_layout(kShape);
  const uint32_t unfrozen_crc = layout_crc32c(layout);
  layout.groups[0].tensors[0].trainable = false;  // the token embedding
  const size_t T = layout.trainable_numel();
  REQUIRE(T < layout.total);
  // Written as a run writes it: the shards cover the trainable elements.
  CheckpointMeta meta = base_meta(layout, 3, 1);
  meta.flat_params = T;
  meta.shards.push_back({0, "shard", {0, T}, 0, 0});
  const CheckpointMeta back = meta_from_json(nlohmann::json::parse(meta_file_text(meta)), "meta.json");
  CHECK_FALSE(back.layout.groups[0].tensors[0].trainable);
  CHECK((back.layout.groups[0].tensors.size() == 1 || back.layout.groups[0].tensors[1].trainable));
  CHECK(back.layout.trainable_numel() == T);
  CHECK(layout_crc32c(back.layout) == layout_crc32c(layout));
  CHECK(layout_crc32c(layout) != unfrozen_crc);
  // A layout without frozen tensors is written as before freezing existed: the same CRC32C.
  layout.groups[0].tensors[0].trainable = true;
  CHECK(layout_crc32c(layout) == unfrozen_crc);
  CHECK(meta_to_json(base_meta(layout, 3, 1)).dump().find("trainable") == std::string::npos);
  // flat_params must count the trainable elements.
  meta.flat_params = meta.layout.total;
  meta.shards[0].range = {0, meta.layout.total};
  CHECK_THROWS_WITH(meta_from_json(nlohmann::json::parse(meta_file_text(meta)), "meta.json"),
                    Catch::Contains("the layout's trainable tensors hold " + std::to_string(T) + " elements"));
}

namespace {

// Step directories 1..n under a fresh root (a meta.json each), `latest` naming the newest; what
// prune_checkpoints(keep, best) leaves.
std::vector<int64_t> left_after_prune(int n, int64_t keep, std::optional<int64_t> best) {
  TempDir dir;
  const std::string root = dir.path.string();
  for (int step = 1; step <= n; ++step) {
    fs::create_directories(fs::path(root) / step_dir_name(step));
    std::ofstream(fs::path(root) / step_dir_name(step) / std::string(kMetaFile)) << "{}";
  }
  publish_latest(root, step_dir_name(n));
  prune_checkpoints(root, keep, best);
  std::vector<int64_t> steps;
  for (auto& d : list_checkpoints(root)) steps.push_back(d.step);
  return steps;
}

}  // namespace

TEST_CASE("keep_last keeps the newest and never the best, as the Trainer's save_total_limit", "[ckpt][keep_last]") {
  CHECK(left_after_prune(5, 2, std::nullopt) == std::vector<int64_t>{4, 5});
  // The best takes the place of the newest but one.
  CHECK(left_after_prune(5, 2, 2) == std::vector<int64_t>{2, 5});
  CHECK(left_after_prune(5, 3, 1) == std::vector<int64_t>{1, 4, 5});
  CHECK(left_after_prune(5, 3, 4) == std::vector<int64_t>{3, 4, 5});
  // With 1 the newest stays beside the best (a run resumes from the newest).
  CHECK(left_after_prune(5, 1, 2) == std::vector<int64_t>{2, 5});
  CHECK(left_after_prune(5, 1, 5) == std::vector<int64_t>{5});
  // A best without a checkpoint protects nothing.
  CHECK(left_after_prune(5, 2, 7) == std::vector<int64_t>{4, 5});
}

TEST_CASE("keep_last 1 at the end of a run leaves the best alone, named by latest", "[ckpt][keep_last]") {
  TempDir dir;
  const std::string root = dir.path.string();
  for (int step : {2, 5}) {
    fs::create_directories(fs::path(root) / step_dir_name(step));
    std::ofstream(fs::path(root) / step_dir_name(step) / std::string(kMetaFile)) << "{}";
  }
  publish_latest(root, step_dir_name(5));
  CHECK(keep_only_checkpoint(root, 2) == std::vector<std::string>{(fs::path(root) / step_dir_name(5)).string()});
  CHECK(list_checkpoints(root).size() == 1);
  CHECK(slurp(root + "/latest") == step_dir_name(2) + "\n");
}

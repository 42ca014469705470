// What a run leaves behind and prints: the final weights (training.save_final) and starting from
// them (training.init_from), and the console's per-step line, MFU explanation and summary.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <regex>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

// The JSON header of a safetensors file: 8 bytes of little-endian length, then the JSON.
nlohmann::json safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8] = {};
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  std::string text(n, '\0');
  in.read(text.data(), std::streamsize(n));
  return nlohmann::json::parse(text);
}

std::vector<uint64_t> shape_of(const nlohmann::json& header, const std::string& name) {
  return header.at(name).at("shape").get<std::vector<uint64_t>>();
}

}  // namespace

TEST_CASE("save_final writes the weights, and init_from starts a run from them", "[e2e][weights]") {
  auto dir = fresh_dir("save-final");
  const std::string common = std::string(ZT_ZEROTRAIN) + " --config zero0 --set training.eval_interval=40" +
                             " --set training.eval_batches=4";
  int code = run_command(common + " --steps 40 --set training.lr=3e-3 --set training.save_final=" + dir +
                             "/final --set training.metrics=" + dir + "/trained.jsonl",
                         dir + "/trained.log");
  INFO(read_file(dir + "/trained.log"));
  REQUIRE(code == 0);

  // Hugging Face GPT-2 names and shapes (docs/models.md), toy model: 2 layers, d_model 64, vocab 256, 128 positions.
  auto header = safetensors_header(dir + "/final/model.safetensors");
  CHECK(shape_of(header, "wte.weight") == std::vector<uint64_t>{256, 64});
  CHECK(shape_of(header, "wpe.weight") == std::vector<uint64_t>{128, 64});
  CHECK(shape_of(header, "h.1.attn.c_attn.weight") == std::vector<uint64_t>{64, 192});
  CHECK(shape_of(header, "h.1.mlp.c_proj.weight") == std::vector<uint64_t>{256, 64});
  CHECK(shape_of(header, "ln_f.bias") == std::vector<uint64_t>{64});
  CHECK(header.at("wte.weight").at("dtype") == "F32");
  auto config = nlohmann::json::parse(read_file(dir + "/final/config.json"));
  CHECK(config["model_type"] == "gpt2");
  CHECK(config["n_layer"] == 2);
  CHECK(config["n_head"] == 4);
  CHECK(config["n_embd"] == 64);
  CHECK(config["vocab_size"] == 256);
  CHECK(config["n_positions"] == 128);

  // A run from those weights with a learning rate too small to move them: its evaluation after
  // step 1 is the trained run's final one. From a fresh model it would be near ln 256 = 5.5.
  run_ok(common + " --steps 1 --set training.eval_interval=1 --set training.lr=1e-9" +
             " --set training.init_from=" + dir + "/final/model.safetensors --set training.metrics=" + dir +
             "/resumed.jsonl",
         dir + "/resumed.log");
  Metrics trained = read_metrics(dir + "/trained.jsonl"), resumed = read_metrics(dir + "/resumed.jsonl");
  REQUIRE(trained.evals.size() == 1);
  REQUIRE(resumed.evals.size() == 1);
  const double trained_val = trained.evals[0]["val_loss"].get<double>();
  const double resumed_val = resumed.evals[0]["val_loss"].get<double>();
  INFO("trained val loss " << trained_val << ", resumed " << resumed_val);
  CHECK(trained_val < trained.steps.front()["loss"].get<double>() - 1.0);  // training did something
  CHECK(std::abs(resumed_val - trained_val) < 1e-5);
  // Its first training loss is the trained model's too, not a fresh one's.
  CHECK(resumed.steps.front()["loss"].get<double>() < trained.steps.front()["loss"].get<double>() - 1.0);
}

TEST_CASE("init_from with weights of another shape names the tensor and both shapes", "[e2e][weights]") {
  auto dir = fresh_dir("init-from-shape");
  int code = run_command(std::string(ZT_ZEROTRAIN) + " --config zero0 --steps 1 --set training.save_final=" + dir +
                             "/final",
                         dir + "/save.log");
  INFO(read_file(dir + "/save.log"));
  REQUIRE(code == 0);
  // d_model 32 where the file holds 64; two ranks, so the message is also reported once.
  code = run_command(launch(2) + " --config zero2 --steps 1 --set model.d_model=32 --set training.init_from=" + dir +
                         "/final/model.safetensors",
                     dir + "/out.log");
  std::string out = read_file(dir + "/out.log");
  INFO(out);
  CHECK(code != 0);
  const std::string message = "tensor wte.weight has shape [256, 64], expected [256, 32]";
  CHECK(out.find(dir + "/final/model.safetensors: " + message) != std::string::npos);
  CHECK(out.find(message) == out.rfind(message));
  CHECK(out.find("| loss ") == std::string::npos);  // no step was logged: nothing trained
}

TEST_CASE("the console logs each printed step with its fields, the MFU formula once, and a summary", "[e2e][logging]") {
  auto dir = fresh_dir("step-log");
  const std::string out =
      run_ok(std::string(ZT_ZEROTRAIN) + " --config zero1 --steps 12 --set training.logging_steps=5" +
                 " --set training.metrics=" + dir + "/metrics.jsonl",
             dir + "/out.log");
  INFO(out);
  Metrics m = read_metrics(dir + "/metrics.jsonl");
  REQUIRE(m.steps.size() == 12);

  // "MFU = F FLOP/token x tokens/s / (ranks x peak); peak per rank P GFLOP/s = how P was found"
  const std::regex mfu_line(
      R"(MFU = (\d+) FLOP/token x tokens/s / \(ranks x peak\); peak per rank (\d+\.\d) GFLOP/s = \S.*)");
  auto mfu_begin = std::sregex_iterator(out.begin(), out.end(), mfu_line);
  REQUIRE(std::distance(mfu_begin, std::sregex_iterator()) == 1);
  const std::smatch mfu = *mfu_begin;
  const double flops_per_token = std::stod(mfu[1]), peak_gflops = std::stod(mfu[2]);
  CHECK(flops_per_token >= 6.0 * double(m.setup["num_params"].get<uint64_t>()));  // at least 6 FLOP per parameter
  CHECK(peak_gflops > 0);

  // "step     5/12 | loss 4.1234 | lr 3.000e-04 | grad norm 1.234 | 7.5 ms | 68442 tok/s | MFU 43.9%"
  const std::regex step_line(
      R"(step +(\d+)/12 \| loss (\d+\.\d{4}) \| lr (\d\.\d{3}e[-+]\d{2}) \| grad norm (\d+\.\d{3}) \| )"
    R"((\d+\.\d) ms \| (\d+) tok/s \| MFU (\d+\.\d)%\n)");
  std::vector<int64_t> printed;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), step_line); it != std::sregex_iterator(); ++it) {
    const std::smatch& s = *it;
    const int64_t step = std::stoll(s[1]);
    printed.push_back(step);
    REQUIRE(step >= 1);
    REQUIRE(step <= 12);
    const auto& rec = m.steps[size_t(step - 1)];
    INFO("step " << step << ": " << s.str() << " metrics " << rec.dump());
    // The console shows the metrics file's values, rounded.
    CHECK(std::abs(std::stod(s[2]) - rec["loss"].get<double>()) <= 0.5e-4 + 1e-9);
    CHECK(std::abs(std::stod(s[3]) - rec["lr"].get<double>()) <=
          0.5e-3 * std::max(1e-30, rec["lr"].get<double>()) + 1e-12);
    CHECK(std::abs(std::stod(s[4]) - rec["grad_norm"].get<double>()) <= 0.5e-3 + 1e-9);
    CHECK(std::abs(std::stod(s[5]) - rec["step_ms"].get<double>()) <= 0.05 + 1e-9);
    CHECK(std::abs(std::stod(s[6]) - rec["tokens_per_s"].get<double>()) <= 0.5 + 1e-6);
    // MFU as the start-up line defines it (one rank).
    const double mfu_percent = 100.0 * flops_per_token * rec["tokens_per_s"].get<double>() / (peak_gflops * 1e9);
    CHECK(std::abs(std::stod(s[7]) - mfu_percent) <= 0.05 + mfu_percent * 1e-3);
  }
  // Step 1, every logging_steps-th, and the last.
  CHECK(printed == std::vector<int64_t>{1, 5, 10, 12});
  // The formula comes before the first step.
  CHECK(out.find("MFU = ") < out.find("step     1/12"));

  // The default eval_interval (100) evaluates after the last step too; the summary shows that
  // evaluation and the last step's loss.
  REQUIRE(m.evals.size() == 1);
  CHECK(m.evals[0]["step"] == 12);
  const std::regex done_line(
      R"(done: 12 steps in \d+\.\d s, final loss (\d+\.\d{4}), val loss (\d+\.\d{4}), \d+ tokens/s)");
  std::smatch done;
  REQUIRE(std::regex_search(out, done, done_line));
  CHECK(std::abs(std::stod(done[1]) - m.steps.back()["loss"].get<double>()) <= 0.5e-4 + 1e-9);
  CHECK(std::abs(std::stod(done[2]) - m.evals[0]["val_loss"].get<double>()) <= 0.5e-4 + 1e-9);
}

TEST_CASE("--dry-run's activation memory is what the run then holds", "[e2e][dry-run]") {
  // GPT-2, and a llama-family model with and without activation checkpointing; 96 tokens are two
  // of the CPU attention's blocks of query rows. Preference pairs: the LM head's logits for the
  // data's most completion rows in a micro-batch (3 pairs, 6 rows, of at most 22 such rows each).
  const std::string fixtures = std::string(ZT_SOURCE_DIR) + "/tests/fixtures";
  const std::string pairs = " --model " + fixtures + "/lora/qwen3/base --data " + fixtures +
                            "/dpo/qwen3_sigmoid/pairs.bin --set preference.loss_type=sigmoid";
  const std::string checkpointing = " --model qwen3-tiny --set activation_checkpointing.number_checkpoints=1";
  for (const std::string options : {std::string(), std::string(" --model qwen3-tiny"), checkpointing, pairs}) {
    INFO(options);
    auto dir = fresh_dir("dry-run-activations");
    const std::string common = std::string(ZT_ZEROTRAIN) + " --config zero1 --set data.seq_len=96" +
                               " --set train_micro_batch_size_per_gpu=3 --set training.eval_interval=0" + options;
    REQUIRE(run_command(common + " --dry-run", dir + "/plan.log") == 0);
    REQUIRE(run_command(common + " --steps 1 --set training.metrics=" + dir + "/metrics.jsonl", dir + "/run.log") == 0);
    const std::string plan = read_file(dir + "/plan.log"), run = read_file(dir + "/run.log");
    INFO(plan << run);
    std::smatch planned;
    REQUIRE(std::regex_search(plan, planned,
                              std::regex(
                                  R"(activations +\d+\.\d\d MiB \((\d+) bytes\) +micro-batch [36] x 96 tokens)")));
    if (options == pairs)
      CHECK(plan.find("the head computes the rows whose target counts, at most 132 of the 576 in a micro-batch") !=
            std::string::npos);
    // The activations the run held at their peak (the summary record), to the byte.
    Metrics m = read_metrics(dir + "/metrics.jsonl");
    const uint64_t held = m.summary.at("memory_peak").at(0).at("activations").get<uint64_t>();
    CHECK(std::stoull(planned[1]) == held);
    CHECK(held > 0);
  }
}

TEST_CASE("without a launcher zerotrain runs as one rank without MPI, with the numbers of a one-rank job",
          "[e2e][world]") {
  auto dir = fresh_dir("single-rank");
  const std::string out =
      run_ok(std::string("env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE ") + ZT_ZEROTRAIN +
                 " --config zero3 --steps 5 --set training.metrics=" + dir + "/alone.jsonl",
             dir + "/alone.log");
  INFO(out);
  CHECK(out.find("(1 rank, no MPI)") != std::string::npos);
  run_ok(launch(1) + " --config zero3 --steps 5 --set training.metrics=" + dir + "/mpi.jsonl", dir + "/mpi.log");
  Metrics alone = read_metrics(dir + "/alone.jsonl"), mpi = read_metrics(dir + "/mpi.jsonl");
  REQUIRE(alone.steps.size() == 5);
  REQUIRE(mpi.steps.size() == 5);
  for (size_t s = 0; s < 5; ++s) CHECK(alone.steps[s]["loss"] == mpi.steps[s]["loss"]);
}

TEST_CASE("zero_optimization.compute_grad_norm false trains without clipping and logs no gradient norm",
          "[e2e][logging]") {
  auto dir = fresh_dir("no-grad-norm");
  auto train = [&](const std::string& name, const std::string& sets) {
    const int code = run_command(std::string(ZT_ZEROTRAIN) + " --config zero2 --steps 4 --set training.metrics=" +
                                     dir + "/" + name + ".jsonl" + sets,
                                 dir + "/" + name + ".log");
    INFO(read_file(dir + "/" + name + ".log"));
    REQUIRE(code == 0);
    return read_metrics(dir + "/" + name + ".jsonl");
  };
  // A clipping threshold below every norm makes clipping change the losses from step 2 on.
  Metrics clipped = train("clipped", " --set gradient_clipping=0.01");
  Metrics unclipped = train("unclipped", " --set gradient_clipping=0");
  Metrics off = train("off", " --set zero_optimization.compute_grad_norm=false");
  REQUIRE(off.steps.size() == 4);
  CHECK(clipped.steps[3]["loss"] != unclipped.steps[3]["loss"]);
  for (size_t s = 0; s < 4; ++s) {
    CHECK(off.steps[s]["loss"] == unclipped.steps[s]["loss"]);
    CHECK_FALSE(off.steps[s].contains("grad_norm"));
    CHECK(unclipped.steps[s].contains("grad_norm"));
  }
  const std::string log = read_file(dir + "/off.log");
  CHECK(log.find("grad norm") == std::string::npos);
  CHECK(log.find("| lr ") != std::string::npos);
}

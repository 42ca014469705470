// generate, eval and the samples of training.sample_every through the binary: a checkpoint and its
// export (training.save_final) generate the same text; greedy and seeded runs repeat; a llama-family
// checkpoint generates; eval gives the run's own val loss (its weights rounded to the run's dtype) and
// the same loss on 1, 2 and 4 ranks;
// samples during training are the same at every ZeRO stage; bad input gets one line and exit 1.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>

#include "run_helpers.hpp"

using namespace zt::test;

namespace {

const std::string kZt = ZT_ZEROTRAIN;
const std::string kVal = std::string(ZT_SOURCE_DIR) + "/data/tinytext/val.txt";

// stdout of a command that must succeed (stderr into err).
std::string output_of(const std::string& command, const std::string& dir, const std::string& name) {
  const std::string out = dir + "/" + name + ".out", err = dir + "/" + name + ".err";
  const int code = std::system((command + " >" + out + " 2>" + err).c_str());
  INFO(command << "\n" << read_file(err));
  REQUIRE(WIFEXITED(code));
  REQUIRE(WEXITSTATUS(code) == 0);
  return read_file(out);
}

// The lines of text that contain a match of pattern, from the match on.
std::vector<std::string> matching(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  std::vector<std::string> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    found.push_back(it->str());
  return found;
}

double eval_loss(const std::string& output) {
  std::smatch m;
  REQUIRE(std::regex_search(output, m, std::regex("loss ([0-9.]+), perplexity")));
  return std::stod(m[1]);
}

}  // namespace

TEST_CASE("generate from a checkpoint and from its export; eval on 1, 2 and 4 ranks", "[e2e][generate]") {
  const std::string dir = fresh_dir("generate");
  const int trained =
      run_command(kZt + " --steps 40 --set bf16.enabled=true --set training.checkpoint_dir=" + dir + "/ck" +
                      " --set training.save_final=" + dir + "/final --set training.eval_interval=40" +
                      " --set training.metrics=" + dir + "/m.jsonl",
                  dir + "/train.log");
  INFO(read_file(dir + "/train.log"));
  REQUIRE(trained == 0);

  const std::string greedy = " --prompt 'And God said' --max-new-tokens 40 --temperature 0";
  const std::string from_checkpoint = output_of(kZt + " generate --model " + dir + "/ck" + greedy, dir, "g1");
  CHECK(from_checkpoint.rfind("And God said", 0) == 0);
  CHECK(from_checkpoint.size() > std::string("And God said").size() + 20);
  CHECK(output_of(kZt + " generate --model " + dir + "/ck" + greedy, dir, "g2") == from_checkpoint);
  // The fp32 export holds the checkpoint's master weights: the same text.
  CHECK(output_of(kZt + " generate --model " + dir + "/final" + greedy, dir, "g3") == from_checkpoint);
  CHECK(read_file(dir + "/g1.err").find("generate: 40 tokens after a prompt of 12") != std::string::npos);

  const std::string sampled = " --prompt 'And' --max-new-tokens 60 --top-k 20 --top-p 0.9 --temperature 1.2";
  const std::string a = output_of(kZt + " generate --model " + dir + "/ck" + sampled + " --seed 3", dir, "s1");
  CHECK(output_of(kZt + " generate --model " + dir + "/ck" + sampled + " --seed 3", dir, "s2") == a);
  CHECK(output_of(kZt + " generate --model " + dir + "/ck" + sampled + " --seed 4", dir, "s3") != a);

  // The run's own evaluation: every window of 4 x 128 tokens of val.txt (training.eval_batches 0).
  const Metrics m = read_metrics(dir + "/m.jsonl");
  REQUIRE(m.evals.size() == 1);
  const double logged = m.evals[0]["val_loss"].get<double>();
  // The run trained in bf16 (the CPU's "auto"): eval rounds the fp32 master weights to bf16, as the
  // run computed with them (--dtype auto: the checkpoint's), and gives the run's val loss; the
  // masters themselves give another.
  const std::string same_windows_eval =
      kZt + " eval --model " + dir + "/ck --data " + kVal + " --batch-size 4 --seq-len 128";
  const double same_windows = eval_loss(output_of(same_windows_eval, dir, "e0"));
  CHECK(std::abs(same_windows - logged) <= 1e-6 * logged);  // printed with 6 decimals
  CHECK(eval_loss(output_of(same_windows_eval + " --dtype bf16", dir, "e0b")) == same_windows);
  CHECK(std::abs(eval_loss(output_of(same_windows_eval + " --dtype fp32", dir, "e0f")) - logged) > 1e-5 * logged);

  std::vector<double> losses;
  for (int ranks : {1, 2, 4}) {
    const std::string out = output_of(launch(ranks) + " eval --model " + dir + "/ck --data " + kVal + " --seq-len 64",
                                      dir, "e" + std::to_string(ranks));
    INFO(out);
    CHECK(out.find("(678 windows of 1 x 64 tokens) on " + std::to_string(ranks) + " rank") != std::string::npos);
    losses.push_back(eval_loss(out));
  }
  CHECK(losses[1] == losses[0]);  // 4 decimals: equal up to the order of the sums
  CHECK(losses[2] == losses[0]);
}

TEST_CASE("a llama-family checkpoint generates, greedy text repeating", "[e2e][generate]") {
  const std::string dir = fresh_dir("generate-llama");
  REQUIRE(run_command(kZt + " --model qwen3-tiny --steps 10 --set data.seq_len=64 --set training.eval_interval=0" +
                          " --set training.checkpoint_dir=" + dir + "/ck",
                      dir + "/train.log") == 0);
  const std::string cmd =
      kZt + " generate --model " + dir + "/ck --prompt 'Exodus' --max-new-tokens 30 --temperature 0";
  const std::string text = output_of(cmd, dir, "g1");
  CHECK(text.rfind("Exodus", 0) == 0);
  CHECK(output_of(cmd, dir, "g2") == text);
  CHECK(read_file(dir + "/g1.err").find("Qwen3 2 layers") != std::string::npos);
}

TEST_CASE("training.sample_every logs the same samples at every ZeRO stage", "[e2e][generate]") {
  const std::string dir = fresh_dir("generate-sample");
  std::vector<std::vector<std::string>> samples;
  for (std::string config : {"zero0", "zero3"}) {
    const std::string log = dir + "/" + config + ".log";
    REQUIRE(run_command(launch(2) + " --config " + config + " --steps 20 --set training.eval_interval=0" +
                            " --set training.sample_every=10 --set training.sample_tokens=32" +
                            " --set 'training.sample_prompt=And God'",
                        log) == 0);
    const std::string text = read_file(log);
    INFO(text);
    // A sample's text may hold line breaks: each sample up to the next log line's time.
    samples.push_back(matching(text, "sample step +[0-9]+ \\| 32 tokens: And God[^\\[]*"));
    REQUIRE(samples.back().size() == 2);
    CHECK(samples.back()[0].rfind("sample step    10 |", 0) == 0);
    CHECK(samples.back()[1].rfind("sample step    20 |", 0) == 0);
  }
  CHECK(samples[0] == samples[1]);  // stage 3 gathers the weights stage 0 holds: the same bits
}

TEST_CASE("bad input to generate, eval and training.sample_every: one line, exit 1", "[e2e][generate]") {
  const std::string dir = fresh_dir("generate-bad");
  // A model of 300 tokens trained on bytes: text needs a tokenizer it does not have.
  REQUIRE(run_command(kZt + " --steps 1 --set model.vocab_size=300 --set training.eval_interval=0" +
                          " --set training.checkpoint_dir=" + dir + "/ck",
                      dir + "/train.log") == 0);
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"generate --model " + dir + "/nowhere --prompt x",
       "error: generate: " + dir + "/nowhere: no such file or directory"},
      {"generate --model " + dir + "/ck --prompt ''", "error: generate: --prompt is empty"},
      {"generate --model " + dir + "/ck --prompt hello",
       "error: generate: the model's 300 tokens need the tokenizer its data was made with: give --tokenizer"},
      {"generate --model " + dir + "/ck --prompt hello --tokenizer " + dir + "/none",
       "error: generate: " + dir + "/none"},
      {"generate --model " + dir + "/ck/step_00000001/meta.json --prompt x", "error: generate: "},
      {"eval --model " + dir + "/ck --data " + dir + "/missing.bin", "error: eval: " + dir + "/missing.bin"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const std::string log = dir + "/case.log";
    CHECK(run_command(kZt + " " + c.args, log) == 1);
    const std::string text = read_file(log);
    INFO(text);
    CHECK(text.find(c.message) != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  }
  const int code = run_command(kZt + " --steps 1 --set model.vocab_size=300 --set training.sample_every=1",
                               dir + "/sample.log");
  const std::string text = read_file(dir + "/sample.log");
  INFO(text);
  CHECK(code != 0);
  CHECK(text.find("training.sample_tokenizer: a sample of a model of 300 tokens needs the tokenizer") !=
        std::string::npos);
  CHECK(text.find("step     1") == std::string::npos);  // refused before the first step
}

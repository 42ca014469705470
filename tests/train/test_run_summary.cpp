// The end of a run (multi-rank, under mpirun): every rank's ledger peaks reach the summary
// unchanged, the totals add up the step records, and the summary record is the JSON of
// docs/metrics.md ("summary").
#include <catch2/catch.hpp>
#include <mpi.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "comm/mpi_communicator.hpp"
#include "core/buffer.hpp"
#include "core/ledger.hpp"
#include "metrics/metrics_file.hpp"
#include "metrics/run_totals.hpp"
#include "mpi_world.hpp"
#include "train/run_summary.hpp"

using namespace zt;
using zt::test::world;

TEST_CASE("each rank's ledger peaks reach every rank unchanged, in rank order", "[summary][mpi]") {
  auto& comm = world();
  const int r = comm.rank(), W = comm.world_size();
  // Different bytes on every rank and in every category; a transient buffer makes a peak above
  // what is held at the end.
  Buffer<float> params(MemCategory::Params, 1000 * size_t(r + 1));
  Buffer<uint16_t> grads(MemCategory::Grads, 333 * size_t(r + 2));
  Buffer<double> optimizer(MemCategory::Optimizer, 77 + size_t(r));
  { Buffer<float> transient(MemCategory::Buffers, 50000 + 17 * size_t(r)); }
  Buffer<float> buffers(MemCategory::Buffers, 10);
  const MemStats mine = MemoryLedger::instance().stats();
  REQUIRE(mine.pk(MemCategory::Buffers) > mine.cur(MemCategory::Buffers));

  // The reference: every rank's ledger peaks through MPI itself, as 64-bit integers.
  const RankPeakMemory row = rank_peak_memory(mine, r);
  std::vector<uint64_t> own;
  for (const auto& [name, bytes] : row.fields()) own.push_back(bytes);
  own.pop_back();  // the resident set grows between two readings; the ledger's peaks do not
  std::vector<uint64_t> expected(own.size() * size_t(W));
  MPI_Allgather(own.data(), int(own.size()), MPI_UINT64_T, expected.data(), int(own.size()), MPI_UINT64_T,
                MPI_COMM_WORLD);

  const auto peaks = gather_memory_peaks(comm);
  REQUIRE(peaks.size() == size_t(W));
  for (int k = 0; k < W; ++k) {
    INFO("rank " << k);
    CHECK(peaks[size_t(k)].rank == k);
    const auto fields = peaks[size_t(k)].fields();
    for (size_t c = 0; c < own.size(); ++c) CHECK(fields[c].second == expected[size_t(k) * own.size() + c]);
    CHECK(peaks[size_t(k)].resident > 0);
  }
  // This rank's row is its own ledger's peaks: host buffers of the test count as offloaded only
  // when they are model states.
  CHECK(peaks[size_t(r)].buffers == mine.pk(MemCategory::Buffers));
  CHECK(peaks[size_t(r)].offload == mine.pk(MemSpace::Host, MemCategory::Params) +
                                        mine.pk(MemSpace::Host, MemCategory::Grads) +
                                        mine.pk(MemSpace::Host, MemCategory::Optimizer));
  if (W > 1) CHECK(peaks[1].offload > peaks[0].offload);
}

TEST_CASE("the summary adds up the steps and is written as the last metrics record", "[summary][mpi]") {
  auto& comm = world();
  RunTotals totals;
  for (int64_t s = 1; s <= 3; ++s) {
    StepRecord rec;
    rec.step = s;
    rec.loss = 5.0 - 0.5 * double(s);
    rec.aux_loss = 1.0 + 0.25 * double(s);  // a model with experts: the last step's reach the summary
    rec.expert_load = 3.0 - 0.5 * double(s);
    rec.tokens = 1024;
    rec.row_tokens = 1280;  // rows of samples: a fifth of them padding
    rec.flops = 1024 * 1e6;
    rec.comm.bytes_sent[size_t(CommOp::ReduceScatter)] = 1000 * uint64_t(s);
    rec.comm.calls[size_t(CommOp::ReduceScatter)] = 2;
    rec.comm.seconds[size_t(CommOp::ReduceScatter)] = 0.25;
    rec.comm.bytes_sent[size_t(CommOp::AllGather)] = 500;
    rec.comm.calls[size_t(CommOp::AllGather)] = 1;
    rec.comm.seconds[size_t(CommOp::AllGather)] = 0.125;
    StepBreakdown time;
    time.reduce_wait = 0.05;
    time.gather_wait = 0.025;
    rec.time = time;
    totals.add_step(rec);
  }
  totals.add_eval({2, 4.25});
  totals.add_eval({3, 3.75});
  SummaryRecord s = totals.summarize(comm, true, 2.0, 1e9);
  s.samples = true;
  CHECK(s.steps == 3);
  CHECK(s.interrupted);
  CHECK(s.tokens == 3072);
  CHECK(s.tokens_per_s == 1536.0);
  CHECK(s.mfu == Approx(1536.0 * 1e6 / (1e9 * comm.world_size())));
  CHECK(s.row_tokens == 3840);
  CHECK(s.packing_efficiency() == Approx(0.8));
  CHECK(s.loss == 3.5);
  CHECK(s.val_loss == 3.75);
  CHECK(s.aux_loss == 1.75);
  CHECK(s.expert_load == 1.5);
  CHECK(s.comm.bytes(CommOp::ReduceScatter) == 6000);
  CHECK(s.comm.calls[size_t(CommOp::AllGather)] == 3);
  CHECK(s.comm_in_flight_s == Approx(3 * 0.375));
  CHECK(s.comm_waited_s == Approx(3 * 0.075));
  CHECK(s.memory_peak.size() == size_t(comm.world_size()));

  if (comm.rank() != 0) return;
  const auto path = std::filesystem::temp_directory_path() / ("zt_summary_" + std::to_string(getpid()) + ".jsonl");
  {
    MetricsWriter w(path.string());
    w.eval({3, 3.75});
    w.summary(s);
  }
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) last = line;
  std::filesystem::remove(path);
  auto j = nlohmann::json::parse(last);
  CHECK(j["event"] == "summary");
  CHECK(j["steps"] == 3);
  CHECK(j["interrupted"] == true);
  CHECK(j["tokens"] == 3072);
  CHECK(j["wall_s"] == 2.0);
  CHECK(j["tokens_per_s"] == 1536.0);
  CHECK(j["packing_efficiency"].get<double>() == Approx(0.8));
  CHECK(j["padding"].get<double>() == Approx(0.2));
  CHECK(j["loss"] == 3.5);
  CHECK(j["val_loss"] == 3.75);
  CHECK(j["aux_loss"] == 1.75);
  CHECK(j["expert_load"] == 1.5);
  REQUIRE(j["memory_peak"].size() == size_t(comm.world_size()));
  for (int k = 0; k < comm.world_size(); ++k)
    for (const auto& [name, bytes] : s.memory_peak[size_t(k)].fields())
      CHECK(j["memory_peak"][size_t(k)][name] == bytes);
  CHECK(j["comm"] == nlohmann::json::parse(R"({"reduce_scatter":{"calls":6,"bytes":6000,"seconds":0.75},
                                               "all_gather":{"calls":3,"bytes":1500,"seconds":0.375}})"));
  CHECK(j["comm_overlap"]["in_flight_s"] == 1.125);
  CHECK(j["comm_overlap"]["waited_s"].get<double>() == Approx(0.225));

  // The console's table: the counts, the plan's formula, a row per rank.
  MemoryPlan plan;
  plan.formula = "2Ψ + 14Ψ/N";
  const auto lines = summary_lines(s, plan, 2);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  INFO(all);
  CHECK(all.find("summary: interrupted (stop requested) | 3 steps | 3072 tokens | 2.0 s | 1536 tokens/s") !=
        std::string::npos);
  CHECK(all.find("| packing efficiency 80.0% (20.0% padding)") != std::string::npos);
  CHECK(all.find("final loss 3.5000 (train, last step), 3.7500 (val, last evaluation)") != std::string::npos);
  CHECK(all.find("plan, ZeRO-2: 2Ψ + 14Ψ/N") != std::string::npos);
  CHECK(all.find("experts (last step): aux loss 1.7500, expert load 1.50") != std::string::npos);
  for (int k = 0; k < comm.world_size(); ++k)
    CHECK(all.find("    rank " + std::to_string(k) + " ") != std::string::npos);
  CHECK(all.find("reduce_scatter                    6       6.0 KB       750.0") != std::string::npos);
  if (comm.world_size() > 1) CHECK(all.find("80% overlapped with compute") != std::string::npos);
}

TEST_CASE("a preference run's summary holds the last step's rewards and the last evaluation's", "[summary]") {
  RunTotals totals;
  for (int64_t s = 1; s <= 2; ++s) {
    StepRecord rec;
    rec.step = s;
    rec.loss = 0.7 - 0.1 * double(s);
    rec.preference = PreferenceMetrics{0.25 * double(s), -0.5, 0.75, 0.5 + double(s), -31.5, -40.25, std::nullopt};
    totals.add_step(rec);
  }
  // ORPO's odds-ratio metrics beside the rewards in the evaluation.
  totals.add_eval({2, 0.625, PreferenceMetrics{0.125, -0.25, 1.0, 0.375, -30.0, -35.5,
                                               OddsRatioMetrics{5.75, -0.625, 0.25}}});
  const SummaryRecord s = totals.summarize(world(), false, 1.0, 1e9);
  REQUIRE(s.preference);
  REQUIRE(s.val_preference);
  CHECK(s.preference->rewards_margins == 2.5);
  CHECK(s.val_preference->rewards_accuracies == 1.0);
  if (world().rank() != 0) return;

  const auto path = std::filesystem::temp_directory_path() / ("zt_summary_dpo_" + std::to_string(getpid()) + ".jsonl");
  {
    MetricsWriter w(path.string());
    w.eval({2, 0.625, s.val_preference});
    w.summary(s);
  }
  std::ifstream in(path);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  std::filesystem::remove(path);
  REQUIRE(records.size() == 2);
  CHECK(records[0]["rewards/accuracies"] == 1.0);
  CHECK(records[0]["logps/rejected"] == -35.5);
  CHECK(records[1]["rewards/chosen"] == 0.5);
  CHECK(records[1]["rewards/margins"] == 2.5);
  CHECK(records[1]["eval_rewards/margins"] == 0.375);
  CHECK(records[1]["eval_logps/chosen"] == -30.0);
  CHECK(records[1]["val_loss"] == 0.625);
  CHECK(records[0]["nll_loss"] == 5.75);
  CHECK(records[1]["eval_log_odds_ratio"] == -0.625);
  CHECK(records[1]["eval_log_odds_chosen"] == 0.25);
  CHECK(!records[1].contains("nll_loss"));  // the train step's metrics had none

  std::string all;
  for (const auto& l : summary_lines(s, MemoryPlan{}, 0)) all += l + "\n";
  INFO(all);
  CHECK(all.find("  preference (train, last step): rewards accuracies 0.750, margins 2.5000, chosen 0.5000, rejected "
                 "-0.5000 | logps chosen -31.5000, rejected -40.2500") != std::string::npos);
  CHECK(all.find("  preference (val, last evaluation): rewards accuracies 1.000, margins 0.3750") != std::string::npos);
  CHECK(all.find("logps chosen -30.0000, rejected -35.5000 | nll_loss 5.7500, log_odds_ratio -0.6250, "
                 "log_odds_chosen 0.2500") != std::string::npos);
}

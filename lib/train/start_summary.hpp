#pragma once
// What rank 0 says at the start of a run: the model, the ZeRO stage and batch, the data it reads
// (for record data: its samples, their truncation and rows, the packing efficiency and padding) and
// how it optimizes, MFU's formula, and each rank's memory beside the ZeRO formula, one line
// each.
#include "config/config.hpp"
#include "data/data_sampler.hpp"
#include "data/dataset.hpp"
#include "metrics/peak_flops.hpp"
#include "metrics/records.hpp"
#include "model/gpt.hpp"
#include "train/memory_plan.hpp"

namespace zt {

void log_run_start(const config::Config& config, const SetupRecord& setup, const Gpt& model, const PeakFlops& peak,
                   const MemoryPlan& plan, const TokenDataset& train, const DataSampler& sampler,
                   const TokenDataset* val);

}  // namespace zt

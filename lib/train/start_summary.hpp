#pragma once
// What rank 0 says at the start of a run besides the model, the ZeRO stage and the memory
// (trainer.cpp): the data it reads and how it optimizes, one line each.
#include "config/config.hpp"
#include "data/dataset.hpp"

namespace zt {

void log_data_and_optimizer(const config::Config& config, const TokenDataset& train, const TokenDataset* val);

}  // namespace zt

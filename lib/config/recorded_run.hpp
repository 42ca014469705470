#pragma once
// What a run recorded of itself: the resolved config (to_json) a checkpoint's meta.json holds, read
// back once into typed values for those who read a checkpoint (generate, eval, export). A key that
// a run of an older zerotrain did not record reads as its default.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "data/tokenizer_identity.hpp"
#include "model/lora.hpp"

namespace zt::config {

struct RecordedRun {
  std::string model_path;        // model.path: the model directory it trained ("": a preset or block)
  std::string init_from;         // training.init_from ("": random values of the architecture)
  std::string lora_init_from;    // lora.init_from ("": PEFT's initialisation)
  uint64_t seed = 0;             // training.seed
  std::string sample_tokenizer;  // training.sample_tokenizer
  TokenizerMismatch tokenizer_mismatch = TokenizerMismatch::Error;  // data.tokenizer_mismatch
  TrainedParts parts;            // the lora block and training.freeze
};

// An unknown name is an error naming `where` (the meta.json) and the key.
RecordedRun read_recorded_run(const nlohmann::json& config, const std::string& where = "meta.json");

}  // namespace zt::config

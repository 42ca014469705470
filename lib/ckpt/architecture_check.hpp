#pragma once
// Whether a checkpoint's weights belong to the model a run builds, by the architecture meta.json
// records (its model block): a checkpoint of another model_type is refused by resume and by
// init_from alike (a llama's weights in a mistral compute something else, though the tensors are
// the same); resuming also refuses any other architecture key that differs (rope_theta, norm_eps,
// rope_scaling, ...: the run it continues had them), while init_from, which takes the weights to
// start something new, notes them. max_seq_len may differ (positions beyond it are never seen) and
// so may the preset's name. Shapes are checked tensor by tensor by CheckpointReader::check_layout.
#include <nlohmann/json.hpp>
#include <string>

#include "ckpt/checkpoint_format.hpp"

namespace zt {

// model_block: the run's (config::model_json). Throws zt::Error naming the step directory, the key
// and both values. The model type first, before the tensors are compared (their names differ
// between families); the other keys after, for what the tensors do not show (n_head and head_dim
// may trade places in the same shapes).
void check_checkpoint_model_type(const std::string& step_dir, const CheckpointMeta& saved,
                                 const nlohmann::json& model_block, bool weights_only);
void check_checkpoint_architecture(const std::string& step_dir, const CheckpointMeta& saved,
                                   const nlohmann::json& model_block, bool weights_only);

}  // namespace zt

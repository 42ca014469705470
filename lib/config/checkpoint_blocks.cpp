// checkpoint and activation_checkpointing: the DeepSpeed blocks about saving and recomputing.
#include "config/blocks.hpp"

namespace zt::config {

CheckpointConfig read_checkpoint(Block& top) {
  Block b = top.child("checkpoint", UnknownKeys::Warn);
  CheckpointConfig c;
  c.tag_validation = b.choice("tag_validation", c.tag_validation, {"Warn", "Ignore", "Fail"});
  c.load_universal = b.boolean("load_universal", c.load_universal);
  c.use_node_local_storage = b.boolean("use_node_local_storage", c.use_node_local_storage);
  b.unimplemented("parallel_write", {{"pipeline_stage", false}});
  b.unimplemented("writer", nullptr);
  b.finish();
  return c;
}

ActivationCheckpointingConfig read_activation_checkpointing(Block& top) {
  Block b = top.child("activation_checkpointing", UnknownKeys::Warn);
  ActivationCheckpointingConfig a;
  a.partition_activations = b.boolean("partition_activations", a.partition_activations);
  a.number_checkpoints = b.integer("number_checkpoints", a.number_checkpoints, IntRange::at_least(0));  // null: none
  a.contiguous_memory_optimization = b.boolean("contiguous_memory_optimization", a.contiguous_memory_optimization);
  a.cpu_checkpointing = b.boolean("cpu_checkpointing", a.cpu_checkpointing);
  b.unimplemented("synchronize_checkpoint_boundary", false);
  b.unimplemented("profile", false);
  b.finish();
  return a;
}

}  // namespace zt::config

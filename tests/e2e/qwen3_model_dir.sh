# Sourced by the shell tests: `qwen3_model_dir DIR POSITIONS FIXTURES` writes a Qwen3 model
# directory as a download holds it, the trimmed Qwen3 tokenizer's files (FIXTURES/qwen3) and a
# config.json of a tiny architecture with POSITIONS positions, no weights (runs start from random
# values of it).
qwen3_model_dir() {
  mkdir "$1" && cp "$3/qwen3/"* "$1/" || return 1
  cat >"$1/config.json" <<EOF
{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 32, "intermediate_size": 64,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "num_hidden_layers": 1,
 "max_position_embeddings": $2, "vocab_size": 151936, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
 "tie_word_embeddings": true, "torch_dtype": "float32"}
EOF
}

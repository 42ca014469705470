#!/usr/bin/env bash
# `zerotrain generate --chat` through the binary (docs/data.md): a small Qwen2.5-shaped model trained
# on one conversation (tokenized with --system, Qwen2.5's tokenizer and chat template) answers the
# same user's turn with the trained answer and stops at the end of its turn; the prompt is the
# fixture's apply_chat_template(add_generation_prompt=True) length, --system in place of the
# template's default system message; the same with a Llama-shaped model in Llama 2's [INST] format,
# whose answers end with </s>; a Gemma 3 text model in Gemma's format, whose answers end with
# <end_of_turn>, and --dry-run prints the memory its generation holds; what has no chat gets one line and
# exit 1.
#   test_chat_generate.sh ZEROTRAIN SOURCE_DIR
source "$(dirname "$0")/e2e_checks.sh"
fixtures=$(cd "$src/tests/fixtures/tokenizer" && pwd)
cd "$tmp" || exit 1

# A one-layer model directory DIR: config.json of ARCHITECTURE (MODEL_TYPE) over VOCAB ids, and the
# files of the trimmed tokenizer TOKENIZER (its chat template among them, when it has one).
tiny_model() {  # tiny_model DIR ARCHITECTURE MODEL_TYPE VOCAB TOKENIZER
  mkdir "$1" && cp "$fixtures/trimmed/$5/"* "$1/"
  cat >"$1/config.json" <<EOF
{"architectures": ["$2"], "model_type": "$3", "hidden_size": 32, "intermediate_size": 64,
 "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1,
 "max_position_embeddings": 128, "vocab_size": $4, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
 "tie_word_embeddings": true, "torch_dtype": "float32"}
EOF
}
# 60 steps on one conversation's tokens, from random weights: train_chat MODEL DATA RUN_DIR WHAT
train_chat() {
  solo "$zerotrain" --model "$1" --data "$2" --steps 60 --set data.seq_len=64 --set train_micro_batch_size_per_gpu=4 \
    --set gradient_accumulation_steps=1 --set data.val= --set training.init_from=random --set training.eval_interval=0 \
    --set optimizer.type=AdamW --set optimizer.params.lr=1e-2 --set training.checkpoint_dir="$3" >train.log 2>&1 ||
    fail "$4 exited $?: $(tail -3 train.log)"
}
tiny_model qwen Qwen2ForCausalLM qwen2 151936 qwen2.5
answer="Hello! How can I help?"
for _ in $(seq 20); do
  echo '{"messages": [{"role": "user", "content": "Say hello."}, {"role": "assistant", "content": "'"$answer"'"}]}'
done >chat.jsonl
"$zerotrain" tokenize --tokenizer qwen chat.jsonl -o chat.bin --system "You are terse." >tok.out 2>&1 ||
  fail "tokenize exited $?: $(cat tok.out)"
train_chat qwen chat.bin run "training"

# The lengths of the fixture's prompts (chat.json's prompt_ids: transformers' ids, which
# test_inference compares id by id; nothing before them): Qwen2.5's [system "You are terse.", user
# "Say hello."] 20 ids, [user "Say hello."] 32 with its default system message; ChatML's (Qwen3's
# without thinking) [user "Say hello."] 11.
with_system=20 default_system=32 chatml=11
solo "$zerotrain" generate --model run --chat --system "You are terse." --prompt "Say hello." --temperature 0 \
  --max-new-tokens 20 >gen.out 2>gen.err || fail "generate --chat exited $?: $(cat gen.err)"
[ "$(cat gen.out)" = "$answer" ] || fail "the answer: '$(cat gen.out)', expected '$answer' ($(cat gen.err))"
grep -q "generate: [0-9]* tokens after a prompt of $with_system in .*, ended at the end of its turn" gen.err ||
  fail "not the fixture's prompt of $with_system tokens, or not ended at the end of the turn: $(cat gen.err)"
# Without --system, Qwen2.5's default system message (its longer prompt); a format named instead.
solo "$zerotrain" generate --model run --chat --prompt "Say hello." --temperature 0 --max-new-tokens 2 >/dev/null 2>gen.err ||
  fail "generate --chat without --system exited $?: $(cat gen.err)"
grep -q "after a prompt of $default_system in" gen.err || fail "not the default system message's prompt: $(cat gen.err)"
solo "$zerotrain" generate --model run --chat --chat-format chatml --prompt "Say hello." --temperature 0 --max-new-tokens 2 \
  >/dev/null 2>gen.err || fail "--chat-format chatml exited $?: $(cat gen.err)"
grep -q "after a prompt of $chatml in" gen.err ||
  fail "chatml has no default system message: $(cat gen.err)"

# Llama 2's format, named (Llama 2's tokenizer has no template): <s>[INST] <<SYS>>...<</SYS>> QUESTION
# [/INST] ANSWER </s>; the answer ends at </s>; the prompt is the fixture's 29 ids.
tiny_model llama LlamaForCausalLM llama 32000 llama2
"$zerotrain" tokenize --tokenizer llama --chat-format llama2 chat.jsonl -o llama.bin --system "You are terse." >tok.out 2>&1 ||
  fail "tokenize --chat-format llama2 exited $?: $(cat tok.out)"
grep -q "20 chats, llama2 format, --chat-format" tok.out || fail "not the llama2 format: $(cat tok.out)"
train_chat llama llama.bin llama-run "training the llama2 format"
solo "$zerotrain" generate --model llama-run --chat --chat-format llama2 --system "You are terse." --prompt "Say hello." \
  --temperature 0 --max-new-tokens 20 >gen.out 2>gen.err || fail "generate --chat-format llama2 exited $?: $(cat gen.err)"
# The answer as the template writes it: between the spaces before it and before </s>.
[ "$(cat gen.out)" = " $answer " ] || fail "the llama2 answer: '$(cat gen.out)', expected ' $answer ' ($(cat gen.err))"
grep -q "generate: [0-9]* tokens after a prompt of 29 in .*, ended at the end of its turn" gen.err ||
  fail "llama2: not the fixture's prompt of 29 tokens, or not ended at </s>: $(cat gen.err)"

# Gemma's format, told by Gemma 3's template: <bos><start_of_turn>user\nSYSTEM\n\nQUESTION<end_of_turn>\n
# <start_of_turn>model\nANSWER<end_of_turn>; a Gemma 3 text model (a sliding layer whose window of 16
# the prompt and answer pass) answers and stops at <end_of_turn>; the prompt is the fixture's 21 ids.
mkdir gemma && cp "$fixtures/trimmed/gemma/"* gemma/
cat >gemma/config.json <<EOF
{"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 32, "intermediate_size": 64,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "num_hidden_layers": 2,
 "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 16, "query_pre_attn_scalar": 8,
 "max_position_embeddings": 128, "vocab_size": 32002, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
 "rope_local_base_freq": 10000.0, "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true,
 "torch_dtype": "float32"}
EOF
"$zerotrain" tokenize --tokenizer gemma chat.jsonl -o gemma.bin --system "You are terse." >tok.out 2>&1 ||
  fail "tokenize (gemma) exited $?: $(cat tok.out)"
grep -q "20 chats, gemma format, told by its chat template" tok.out || fail "not the gemma format: $(cat tok.out)"
train_chat gemma gemma.bin gemma-run "training the gemma format"
solo "$zerotrain" generate --model gemma-run --chat --system "You are terse." --prompt "Say hello." --temperature 0 \
  --max-new-tokens 20 >gen.out 2>gen.err || fail "generate --chat (gemma) exited $?: $(cat gen.err)"
[ "$(cat gen.out)" = "$answer" ] || fail "the gemma answer: '$(cat gen.out)', expected '$answer' ($(cat gen.err))"
grep -q "generate: [0-9]* tokens after a prompt of 21 in .*, ended at the end of its turn" gen.err ||
  fail "gemma: not the fixture's prompt of 21 tokens, or not ended at <end_of_turn>: $(cat gen.err)"
# --dry-run: the memory plan of the same generation (21 + 20 positions), nothing generated; the
# sliding layer's KV cache its window's 16 rows, the full layer's all 41.
solo "$zerotrain" generate --model gemma-run --chat --system "You are terse." --prompt "Say hello." \
  --max-new-tokens 20 --dry-run >plan.out 2>plan.err || fail "generate --dry-run exited $?: $(cat plan.err)"
grep -q "batch 1, 41 positions" plan.out && grep -qE "^  sliding \(window 16\), dense MLP +1 +[0-9.]+ MiB +16 " plan.out &&
  grep -qE "^  full attention, dense MLP +1 +[0-9.]+ MiB +41 " plan.out && grep -q "^  KV cache " plan.out ||
  fail "generate --dry-run's plan: $(cat plan.out)"
grep -q "tokens after a prompt" plan.err && fail "generate --dry-run generated: $(cat plan.err)"

# Bad input: one error line, exit 1.
check_refused() {
  local expected=$1
  shift
  solo "$zerotrain" generate "$@" >bad.out 2>&1
  local code=$?
  [ $code -eq 1 ] && grep -qF "$expected" bad.out && [ "$(grep -c error bad.out)" -eq 1 ] ||
    fail "generate $*: exit $code: $(cat bad.out)"
}
check_refused "error: generate: --system: a system message and a chat format are for a chat: add --chat" \
  --model run --prompt "Hi" --system "You are terse."
check_refused "error: generate: --chat-format vicuna: expected one of chatml, qwen2.5, qwen3, llama3, llama3.1, llama2, mistral, gemma" \
  --model run --chat --chat-format vicuna --prompt "Hi"
# GPT-2's tokenizer (with a warning: not the model's) has no chat format.
check_refused "has no chat template or chat tokens to tell its format by: name one with --chat-format" \
  --model run --chat --prompt "Hi" --tokenizer "$fixtures/trimmed/gpt2" --tokenizer-mismatch warn

finish

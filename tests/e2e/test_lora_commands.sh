#!/usr/bin/env bash
# docs/models.md's three commands of a LoRA fine-tune, from chat JSONL to a merged model, as written
# there: tokenize with the model's tokenizer, train adapters at ZeRO stage 3 on 2 ranks, export the
# merged model. The "downloaded" Qwen model is a small one made here (Qwen3's shape cut down, the
# trimmed Qwen3 tokenizer of tests/fixtures beside it); only the steps, the sequence length and the
# micro-batch are cut to fit a few conversations.
#   test_lora_commands.sh ZEROTRAIN SOURCE_DIR
set -u
zerotrain=$1
src=$2
source "$(dirname "$0")/../shell_checks.sh"

mapfile -t commands < <(documented_commands "$src/docs/models.md" "tests/e2e/test_lora_commands.sh runs these")
[ ${#commands[@]} -eq 3 ] || { echo "FAIL: expected three commands in docs/models.md, found ${#commands[@]}: ${commands[*]}"; exit 1; }
[[ ${commands[0]} == "build/zerotrain tokenize --tokenizer qwen3-0.6b chats.jsonl -o chats.bin" ]] ||
  fail "the first command does not tokenize chats.jsonl: ${commands[0]}"
[[ ${commands[1]} == *"--config zero3"*"lora="* ]] || fail "the second command is not a LoRA run at stage 3: ${commands[1]}"
[[ ${commands[2]} == "build/zerotrain export "*"--merge" ]] || fail "the third command does not merge: ${commands[2]}"

cd "$tmp" || exit 1
ln -s "$src/scripts" scripts
mkdir build && ln -s "$zerotrain" build/zerotrain
run() {  # run NAME COMMAND: stdout to NAME.out, stderr to NAME.err
  local name=$1
  shift
  (export OMP_NUM_THREADS=1; eval "$*") >"$name.out" 2>"$name.err"
}

# The downloaded model: a Qwen3 of Qwen's vocabulary and two small layers, as save_pretrained writes it.
run base build/zerotrain --model qwen3-tiny --set model.vocab_size=151936 --set model.d_model=32 \
  --set model.head_dim=16 --set model.d_ff=64 --set data.format=synthetic --set data.train=synthetic:vocab=65536 \
  --set data.seq_len=8 --set train_micro_batch_size_per_gpu=1 --set training.eval_interval=0 --steps 1 \
  --set training.save_final=qwen3-0.6b || fail "making the base model exited $?: $(tail -3 base.err)"
cp "$src/tests/fixtures/tokenizer/trimmed/qwen3/"* qwen3-0.6b/
for i in $(seq 1 24); do
  printf '{"messages": [{"role": "user", "content": "What is %d plus %d?"}, {"role": "assistant", "content": "%d plus %d is %d."}]}\n' \
    "$i" "$i" "$i" "$i" $((2 * i))
done >chats.jsonl

run tokenize "${commands[0]}" || fail "tokenize exited $?: $(cat tokenize.err)"
[ -s chats.bin ] && [ -s chats.mask ] || fail "tokenize wrote no chats.bin and chats.mask: $(cat tokenize.err)"
train=$(sed -E 's/--steps [0-9]+/--steps 4/; s/data.seq_len=[0-9]+/data.seq_len=32/;
                s/train_micro_batch_size_per_gpu=[0-9]+/train_micro_batch_size_per_gpu=1/' <<<"${commands[1]}")
run train "$train" || fail "training exited $?: $(tail -5 train.err)"
grep -q "finished at step 4 of 4" train.err train.out || fail "the run did not finish: $(tail -3 train.err)"
[ -s qwen3-lora/adapter_config.json ] && [ -s qwen3-lora/adapter_model.safetensors ] ||
  fail "save_final wrote no adapter directory: $(ls qwen3-lora 2>&1)"
grep -q '"peft_type": "LORA"' qwen3-lora/adapter_config.json || fail "no PEFT LoRA config: $(cat qwen3-lora/adapter_config.json)"
[ -s qwen3-lora/tokenizer.json ] || fail "the adapter directory has no tokenizer"
run export "${commands[2]}" || fail "export exited $?: $(cat export.err)"
[ -s qwen3-merged/model.safetensors ] && [ -s qwen3-merged/config.json ] && [ -s qwen3-merged/tokenizer.json ] ||
  fail "export --merge wrote no model directory: $(ls qwen3-merged 2>&1)"
cmp -s qwen3-merged/model.safetensors qwen3-0.6b/model.safetensors && fail "the merged weights are the base model's"
# The merged model writes what the run's checkpoint (read with its adapters merged) writes.
prompt="What is 3 plus 3?"
run greedy_ck build/zerotrain generate --model qwen3-lora-run --tokenizer qwen3-0.6b --prompt "'$prompt'" \
  --temperature 0 --max-new-tokens 8 || fail "generate from the checkpoint exited $?: $(cat greedy_ck.err)"
run greedy_merged build/zerotrain generate --model qwen3-merged --prompt "'$prompt'" --temperature 0 \
  --max-new-tokens 8 || fail "generate from the merged model exited $?: $(cat greedy_merged.err)"
cmp -s greedy_ck.out greedy_merged.out ||
  fail "the merged model writes other text: $(cat greedy_ck.out) / $(cat greedy_merged.out)"
finish

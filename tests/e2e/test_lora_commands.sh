#!/usr/bin/env bash
# docs/models.md's three commands of a LoRA fine-tune, from chat JSONL to a merged model, as written
# there: tokenize with the model's tokenizer, train adapters at ZeRO stage 3 on 2 ranks, export the
# merged model; then the adapter directory used as a model (generate, eval, export with and without
# --merge), and its base model changed or gone. The "downloaded" Qwen model is a small one made
# here (Qwen3's shape cut down, the trimmed Qwen3 tokenizer of tests/fixtures beside it); only the
# steps, the sequence length and the micro-batch are cut to fit a few conversations.
#   test_lora_commands.sh ZEROTRAIN SOURCE_DIR
source "$(dirname "$0")/e2e_checks.sh"

mapfile -t commands < <(documented_commands "$src/docs/models.md" "tests/e2e/test_lora_commands.sh runs these")
[ ${#commands[@]} -eq 3 ] || { echo "FAIL: expected three commands in docs/models.md, found ${#commands[@]}: ${commands[*]}"; exit 1; }
[[ ${commands[0]} == "build/zerotrain tokenize --tokenizer qwen3-0.6b chats.jsonl -o chats.bin" ]] ||
  fail "the first command does not tokenize chats.jsonl: ${commands[0]}"
[[ ${commands[1]} == *"--config zero3"*"lora="* ]] || fail "the second command is not a LoRA run at stage 3: ${commands[1]}"
[[ ${commands[2]} == "build/zerotrain export "*"--merge" ]] || fail "the third command does not merge: ${commands[2]}"

cd "$tmp" || exit 1
ln -s "$src/scripts" scripts
mkdir build && ln -s "$zerotrain" build/zerotrain

# The downloaded model: a small Qwen3 of Qwen's vocabulary.
small_qwen3 qwen3-0.6b
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

# The adapter directory (save_final's) is a model wherever one is asked for: on the base model its
# adapter_config.json names, the adapters merged, it is the merged model.
run greedy_adapter build/zerotrain generate --model qwen3-lora --prompt "'$prompt'" --temperature 0 \
  --max-new-tokens 8 || fail "generate from the adapter directory exited $?: $(cat greedy_adapter.err)"
cmp -s greedy_merged.out greedy_adapter.out ||
  fail "the adapter directory writes other text: $(cat greedy_merged.out) / $(cat greedy_adapter.out)"
loss() { sed -E 's/ in [0-9.]+ s$//; s/^eval: [^:]*: //' "$1.out"; }
run eval_merged build/zerotrain eval --model qwen3-merged --data chats.bin --seq-len 32 --dtype fp32 ||
  fail "eval of the merged model exited $?: $(cat eval_merged.err)"
run eval_adapter build/zerotrain eval --model qwen3-lora --data chats.bin --seq-len 32 --dtype fp32 ||
  fail "eval of the adapter directory exited $?: $(cat eval_adapter.err)"
[ -n "$(loss eval_merged)" ] && [ "$(loss eval_merged)" == "$(loss eval_adapter)" ] ||
  fail "eval of the adapter directory differs: $(loss eval_merged) / $(loss eval_adapter)"
run export_adapter_merged build/zerotrain export qwen3-lora -o adapter-merged --merge ||
  fail "export --merge of the adapter directory exited $?: $(cat export_adapter_merged.err)"
cmp -s adapter-merged/model.safetensors qwen3-merged/model.safetensors ||
  fail "export --merge of the adapter directory gives other weights than of the checkpoint"
cmp -s adapter-merged/config.json qwen3-merged/config.json || fail "export --merge of the adapter: another config.json"
run export_adapter build/zerotrain export qwen3-lora -o adapter-again ||
  fail "export of the adapter directory exited $?: $(cat export_adapter.err)"
for f in adapter_model.safetensors adapter_config.json tokenizer.json; do
  cmp -s adapter-again/$f qwen3-lora/$f || fail "export of the adapter directory changed $f"
done
# A base changed since the adapter was saved, or gone, is named in one line.
base_named="qwen3-lora: its base model qwen3-0.6b (adapter_config.json base_model_name_or_path)"
cp qwen3-0.6b/config.json config.json.saved
echo >>qwen3-0.6b/config.json
run changed build/zerotrain generate --model qwen3-lora --prompt "'$prompt'" --max-new-tokens 2 &&
  fail "generate on a changed base exited 0"
[ "$(wc -l <changed.err)" -eq 1 ] && grep -qF "$base_named changed since the adapter was saved: config.json is not" \
  changed.err || fail "a changed base is not named in one line: $(cat changed.err)"
cp config.json.saved qwen3-0.6b/config.json
mv qwen3-0.6b base-moved
run gone build/zerotrain export qwen3-lora -o gone-merged --merge && fail "export on a base that is gone exited 0"
[ "$(wc -l <gone.err)" -eq 1 ] && grep -qF "$base_named is gone" gone.err ||
  fail "a base that is gone is not named in one line: $(cat gone.err)"
[ -e gone-merged ] && fail "export on a base that is gone created its output"
mv base-moved qwen3-0.6b
finish

#!/usr/bin/env bash
# docs/preference.md's four commands of preference training, from preference JSONL to a merged model,
# as written there: tokenize the shipped pairs with a validation split, DPO with LoRA adapters
# evaluated on the held-out pairs, export --merge, plot. The "downloaded" Qwen3 is a small one made
# here (Qwen3's vocabulary, two layers of width 32, the trimmed Qwen3 tokenizer of tests/fixtures
# beside it); only the steps and the evaluation interval are cut.
#   test_preference_commands.sh ZEROTRAIN SOURCE_DIR
source "$(dirname "$0")/e2e_checks.sh"

mapfile -t commands < <(documented_commands "$src/docs/preference.md" "tests/e2e/test_preference_commands.sh runs these")
[ ${#commands[@]} -eq 4 ] || { echo "FAIL: expected four commands in docs/preference.md, found ${#commands[@]}: ${commands[*]}"; exit 1; }
[[ ${commands[0]} == "build/zerotrain tokenize --tokenizer qwen3-0.6b examples/preference/pairs.jsonl "* ]] ||
  fail "the first command does not tokenize the shipped pairs: ${commands[0]}"
[[ ${commands[1]} == *"--loss_type sigmoid"*"lora.enabled=true"* ]] || fail "the second command is not DPO with LoRA: ${commands[1]}"
[[ ${commands[2]} == "build/zerotrain export "*"--merge"* ]] || fail "the third command does not merge: ${commands[2]}"
[[ ${commands[3]} == "build/zerotrain plot "* ]] || fail "the fourth command does not plot: ${commands[3]}"

cd "$tmp" || exit 1
ln -s "$src/examples" examples
mkdir build && ln -s "$zerotrain" build/zerotrain

# The downloaded model: a small Qwen3 of Qwen's vocabulary.
small_qwen3 qwen3-0.6b

run tokenize "${commands[0]}" || fail "tokenize exited $?: $(cat tokenize.err tokenize.out)"
grep -q "30 pairs (60 samples) prefs.idx" tokenize.out && grep -q "10 pairs (20 samples) prefs.val.idx" tokenize.out ||
  fail "tokenize did not write 30 training and 10 validation pairs: $(cat tokenize.out)"
train=$(sed -E 's/--steps [0-9]+/--steps 4/; s/eval_interval=[0-9]+/eval_interval=2/' <<<"${commands[1]}")
run train "$train" || fail "training exited $?: $(tail -5 train.err)"
cat train.out train.err >train.log
grep -q "finished at step 4 of 4" train.log || fail "the run did not finish: $(tail -3 train.log)"
grep -q "reference log-probabilities of 10 validation pairs" train.log || fail "no reference of the validation pairs"
grep -Eq "eval  step     4 \| val loss [0-9.]+ \| rewards accuracies [0-9.]+ margins -?[0-9.]+" train.log ||
  fail "no evaluation of the held-out pairs in the log: $(grep eval train.log)"
grep -q "preference (val, last evaluation): rewards accuracies" train.log || fail "no preference metrics in the summary"
[ "$(grep -c '"event":"eval"' dpo.jsonl)" -eq 2 ] && grep '"event":"eval"' dpo.jsonl | grep -q '"rewards/accuracies":' &&
  grep '"event":"step"' dpo.jsonl | grep -q '"rewards/margins":' || fail "the metrics file lacks the rewards: $(cat dpo.jsonl)"
run export "${commands[2]}" || fail "export exited $?: $(cat export.err)"
[ -s dpo_merged/model.safetensors ] && [ -s dpo_merged/config.json ] && [ -s dpo_merged/tokenizer.json ] ||
  fail "export --merge wrote no model directory: $(ls dpo_merged 2>&1)"
[ ! -e dpo_merged/adapter_config.json ] || fail "export --merge wrote an adapter directory"
cmp -s dpo_merged/model.safetensors qwen3-0.6b/model.safetensors && fail "the merged weights are the base model's"
run generate build/zerotrain generate --model dpo_merged --chat --prompt "'What is 5 * 6?'" --max-new-tokens 4 ||
  fail "generate from the merged model exited $?: $(cat generate.err)"
run plot "${commands[3]}" || fail "plot exited $?: $(cat plot.err)"
grep -q "preference accuracy" dpo.svg && grep -q "reward margin" dpo.svg || fail "the plot has no preference charts"

# Another reference model (docs/preference.md, "Another reference model"): the merged model, by --ref_model.
one_step="build/zerotrain --model qwen3-0.6b --data prefs.bin --loss_type sigmoid --set data.seq_len=128 --steps 1"
run ref $one_step --ref_model dpo_merged || fail "a run with --ref_model exited $?: $(tail -3 ref.err)"
grep -q "reference log-probabilities of 30 pairs computed in one forward pass of the reference model dpo_merged" \
  ref.out ref.err || fail "no reference pass of the reference model: $(grep -h reference ref.out ref.err)"
# The same model with another tokenizer beside it: refused before the run, naming the key.
cp -r dpo_merged other_tokenizer && cp "$src/tests/fixtures/tokenizer/trimmed/llama3/"* other_tokenizer/
run other $one_step --ref_model other_tokenizer
status=$?
[ "$status" -eq 2 ] && grep -q "preference.reference" other.err ||
  fail "a reference model with another tokenizer than the data's: exit $status, $(tail -2 other.err)"
finish

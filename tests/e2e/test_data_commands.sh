#!/usr/bin/env bash
# docs/data.md's four commands from a text file to generated text, as written there: tokenize with
# GPT-2's tokenizer (here the trimmed copy of tests/fixtures), a ZeRO stage 2 run on 4 ranks with
# samples, generate from its checkpoint, export it; then generate from the export. Only tokenize names
# the tokenizer: the samples, generate and export find it in the token file's record and the
# checkpoint. Only the number of steps is cut (to 4) to keep the test short.
#   test_data_commands.sh ZEROTRAIN SOURCE_DIR
source "$(dirname "$0")/e2e_checks.sh"

# The block after the marker, a command per line once the lines ending in \ are joined.
mapfile -t commands < <(documented_commands "$src/docs/data.md" "tests/e2e/test_data_commands.sh runs these")
[ ${#commands[@]} -eq 4 ] || { echo "FAIL: expected four commands in docs/data.md, found ${#commands[@]}: ${commands[*]}"; exit 1; }
[[ ${commands[0]} == "build/zerotrain tokenize "* ]] || fail "the first command does not tokenize: ${commands[0]}"
[[ ${commands[1]} == *"--config zero2"* ]] || fail "the second command is not a ZeRO stage 2 run: ${commands[1]}"
[[ ${commands[2]} == "build/zerotrain generate "* ]] || fail "the third command does not generate: ${commands[2]}"
[[ ${commands[3]} == "build/zerotrain export "* ]] || fail "the fourth command does not export: ${commands[3]}"

# Where the commands expect to run: the repository's data and scripts, build/zerotrain, gpt2/.
cd "$tmp" || exit 1
ln -s "$src/data" data
ln -s "$src/scripts" scripts
mkdir build && ln -s "$zerotrain" build/zerotrain
ln -s "$src/tests/fixtures/tokenizer/trimmed/gpt2" gpt2
run tokenize "${commands[0]}" || fail "tokenize exited $?: $(cat tokenize.err tokenize.out)"
[ -s tiny.bin ] && [ -s tiny.val.bin ] || fail "tokenize wrote no tiny.bin and tiny.val.bin: $(cat tokenize.out)"
train=$(sed -E 's/--steps [0-9]+/--steps 4/; s/sample_every=[0-9]+/sample_every=2/' <<<"${commands[1]}")
run train "$train" || fail "training exited $?: $(tail -5 train.err)"
cat train.out train.err >train.log
grep -Eq "sample step     2 \| [0-9]+ tokens: " train.log || fail "no sample in the run's log: $(tail -5 train.log)"
grep -q "finished at step 4 of 4" train.log || fail "the run did not finish: $(tail -3 train.log)"
run generate "${commands[2]}" || fail "generate exited $?: $(cat generate.err)"
prompt=$(sed -E 's/.*--prompt "([^"]*)".*/\1/' <<<"${commands[2]}")
[[ $(cat generate.out) == "$prompt"?* ]] || fail "generate did not continue the prompt: $(cat generate.out)"
grep -q "text: .*gpt2" generate.err || fail "generate did not take the run's tokenizer: $(cat generate.err)"
run export "${commands[3]}" || fail "export exited $?: $(cat export.err)"
[ -s hf_model/model.safetensors ] && [ -s hf_model/config.json ] || fail "export wrote no hf_model: $(cat export.err)"
cmp -s hf_model/vocab.json gpt2/vocab.json && cmp -s hf_model/merges.txt gpt2/merges.txt ||
  fail "export did not ship the data's tokenizer: $(ls hf_model)"
# The export holds the checkpoint's fp32 weights: it writes the same greedy text.
run greedy_ck build/zerotrain generate --model run --prompt "'$prompt'" --temperature 0 --max-new-tokens 20 ||
  fail "greedy generate exited $?: $(cat greedy_ck.err)"
run greedy_hf build/zerotrain generate --model hf_model --prompt "'$prompt'" --temperature 0 \
  --max-new-tokens 20 || fail "generate from the export exited $?: $(cat greedy_hf.err)"
cmp -s greedy_ck.out greedy_hf.out || fail "the export writes other text: $(cat greedy_ck.out) / $(cat greedy_hf.out)"
finish

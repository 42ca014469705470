#!/usr/bin/env bash
# Which tokenizer made the tokens (docs/data.md): the record `zerotrain tokenize` writes beside a
# token file, refused against a model directory's other tokenizer by training, --dry-run, eval and
# generate, carried by checkpoints, shipped by save_final and export, and found by generate and the
# training samples without being named; data formats told by content (JSON lines under any name);
# --dry-run judging the data as training does.
#   test_data_tokenizers.sh ZEROTRAIN SOURCE_DIR
source "$(dirname "$0")/e2e_checks.sh"
source "$(dirname "$0")/qwen3_model_dir.sh"
fixtures=$(cd "$src/tests/fixtures/tokenizer/trimmed" && pwd)
cd "$tmp" || exit 1
head -c 4000 "$src/data/tinytext/train.txt" >text.txt
# The model directories here hold no weights: the runs start from random values of their architecture.
small=(--steps 1 --set data.seq_len=16 --set train_micro_batch_size_per_gpu=1 --set gradient_accumulation_steps=1
  --set data.val= --set training.init_from=random)

# A Qwen3 model directory as a download holds it: config.json and the tokenizer's files.
qwen3_model_dir qwen3 64 "$fixtures" || fail "no model directory"

# 1. Llama 3's tokens given to the Qwen3 model: refused, naming both tokenizers (their ids are all
# inside Qwen3's vocabulary, so nothing else stops the run); the override trains with a warning.
"$zerotrain" tokenize --tokenizer "$fixtures/llama3" text.txt -o llama.bin >tok.out 2>&1 || fail "tokenize: $(cat tok.out)"
grep -q '"source": "'"$fixtures"'/llama3"' llama.meta.json 2>/dev/null || fail "no record of the tokenizer beside llama.bin"
grep -q "the tokenizer, recorded in llama.meta.json: $fixtures/llama3 (byte-level BPE, 128256 ids" tok.out ||
  fail "tokenize does not say what it recorded: $(cat tok.out)"
solo "$zerotrain" --model qwen3 --data llama.bin "${small[@]}" >refused.log 2>&1
code=$?
[ $code -eq 2 ] || fail "item 2: a Llama 3 token file trained a Qwen3 model directory (exit $code)"
grep -q "error: data.train: llama.bin was tokenized with $fixtures/llama3 .*model directory qwen3 (tokenizer.json sha256" refused.log ||
  fail "item 2: the refusal does not name both tokenizers: $(grep -i error refused.log)"
solo "$zerotrain" --model qwen3 --data llama.bin "${small[@]}" --dry-run >dry.log 2>&1
[ $? -eq 2 ] && grep -q "error: data.train: llama.bin was tokenized with" dry.log || fail "item 7: --dry-run passed it: $(tail -2 dry.log)"
solo "$zerotrain" --model qwen3 --data llama.bin "${small[@]}" --set data.tokenizer_mismatch=warn \
  --set training.checkpoint_dir=run_w --set training.save_final=final_w >warned.log 2>&1 ||
  fail "data.tokenizer_mismatch=warn exited $?: $(tail -2 warned.log)"
grep -q "warning: data.train: llama.bin was tokenized with .*going on as told" warned.log || fail "no warning: $(cat warned.log)"
# The model was trained on Llama 3's ids: their tokenizer ships, with a warning; export refuses the
# model directory's other tokenizer unless told.
cmp -s final_w/tokenizer.json "$fixtures/llama3/tokenizer.json" || fail "item 2: save_final shipped the model directory's tokenizer"
solo "$zerotrain" export run_w -o exported_w --tokenizer-mismatch error >export_w.log 2>&1
[ $? -eq 1 ] && grep -q "error: export: run_w/step_00000001: the run's data was tokenized with $fixtures/llama3" export_w.log ||
  fail "item 2: export shipped a model directory's other tokenizer: $(cat export_w.log)"
solo "$zerotrain" export run_w -o exported_w >export_w.log 2>&1 || fail "export under the run's warn exited $?"
cmp -s exported_w/tokenizer.json "$fixtures/llama3/tokenizer.json" || fail "item 2: export shipped the model directory's tokenizer"

# 2. The model's own tokenizer trains without a word; a file without a record gets a warning.
"$zerotrain" tokenize --tokenizer qwen3 text.txt -o qwen.bin >/dev/null 2>&1 || fail "tokenize with qwen3"
cp qwen.bin old.bin
solo "$zerotrain" --model qwen3 --data qwen.bin "${small[@]}" --set training.checkpoint_dir=run_q >same.log 2>&1 ||
  fail "the model's own tokenizer exited $?: $(tail -2 same.log)"
grep -qi "tokeniz" <(grep -i warn same.log) && fail "a warning about the model's own tokenizer: $(grep -i warn same.log)"
solo "$zerotrain" --model qwen3 --data old.bin "${small[@]}" --set training.sample_every=1 --set training.sample_tokens=2 \
  >old.log 2>&1 || fail "an older file exited $?: $(grep error old.log)"
grep -q "warning: data.train: old.bin records no tokenizer" old.log || fail "no warning for an older file: $(grep -i warn old.log)"
grep -Eq "sample step     1 \| [0-9]+ tokens:" old.log || fail "item 9: no sample with the model directory's tokenizer"

# 3. The checkpoint records its data's tokenizer: eval and generate check against it and find it.
grep -q '"tokenizer"' run_q/step_00000001/meta.json || fail "item 2: meta.json records no tokenizer of the data"
solo "$zerotrain" eval --model run_q --data llama.bin >eval.log 2>&1
[ $? -eq 1 ] && grep -q "error: eval: --data: llama.bin was tokenized with $fixtures/llama3" eval.log ||
  fail "item 2: eval took a Llama 3 file for a Qwen3 checkpoint: $(cat eval.log)"
solo "$zerotrain" eval --model run_q --data qwen.bin --max-windows 2 --seq-len 16 >eval_ok.log 2>&1 ||
  fail "eval of the run's own data exited $?: $(cat eval_ok.log)"
solo "$zerotrain" generate --model run_q --prompt "And God said" --max-new-tokens 3 >gen.out 2>gen.err ||
  fail "item 9: generate found no tokenizer for the checkpoint: $(cat gen.err)"
grep -q "text: $tmp/qwen3/tokenizer.json" gen.err || fail "item 9: generate did not take the data's tokenizer: $(cat gen.err)"
solo "$zerotrain" generate --model run_q --tokenizer "$fixtures/llama3" --prompt "Hi" --max-new-tokens 1 >/dev/null 2>gen_bad.err
[ $? -eq 1 ] && grep -q "error: generate: --tokenizer: $fixtures/llama3 .*is not the tokenizer" gen_bad.err ||
  fail "item 2: generate took another tokenizer than the checkpoint's: $(cat gen_bad.err)"

# A run that starts from that checkpoint (its model directory without a tokenizer) is judged against
# the tokenizer of the checkpoint's data.
mkdir qwen3_config && cp qwen3/config.json qwen3_config/
solo "$zerotrain" --model qwen3_config --data llama.bin "${small[@]}" --set training.init_from=run_q >from_ckpt.log 2>&1
[ $? -eq 2 ] && grep -q "error: data.train: llama.bin was tokenized with .*the tokenizer checkpoint run_q/step_00000001's data was made with" from_ckpt.log ||
  fail "item 2: a run from a Qwen3 checkpoint took Llama 3 data: $(grep -i error from_ckpt.log)"

# 4. No model directory: samples, save_final and export take the data's tokenizer (GPT-2's).
"$zerotrain" tokenize --tokenizer "$fixtures/gpt2" "$src/data/tinytext/val.txt" -o tiny.bin >/dev/null 2>&1 || fail "gpt2 tokenize"
solo "$zerotrain" --model gpt2-tiny --data tiny.bin --steps 2 --set data.seq_len=16 --set train_micro_batch_size_per_gpu=1 \
  --set gradient_accumulation_steps=1 --set data.val= --set training.sample_every=2 --set training.sample_tokens=4 \
  --set training.checkpoint_dir=run_g --set training.save_final=final >gpt2.log 2>&1 ||
  fail "item 9: training samples without training.sample_tokenizer exited $?: $(grep -i error gpt2.log)"
grep -Eq "sample step     2 \| [0-9]+ tokens:" gpt2.log || fail "item 9: no sample: $(tail -3 gpt2.log)"
[ -s final/vocab.json ] && [ -s final/merges.txt ] || fail "item 2: save_final shipped no tokenizer: $(ls final)"
solo "$zerotrain" export run_g -o exported >export.log 2>&1 || fail "export exited $?: $(cat export.log)"
cmp -s exported/vocab.json "$fixtures/gpt2/vocab.json" || fail "item 2: export did not ship the data's tokenizer: $(ls exported)"
solo "$zerotrain" generate --model exported --prompt "And God said" --max-new-tokens 3 --temperature 0 >gen_hf.out 2>gen_hf.err ||
  fail "item 9: generate from the export found no tokenizer: $(cat gen_hf.err)"

# 5. JSON lines under any name are records to tokenize, and refused by training (and --dry-run)
# with the command that tokenizes them, never data.format text.
printf '%s\n' '{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}' \
  '{"text": "In the beginning"}' >chat.jsonl
"$zerotrain" tokenize --tokenizer qwen3 chat.jsonl -o chat_jsonl.bin >/dev/null 2>&1 || fail "tokenize chat.jsonl"
for name in chat.ndjson chat.arrow chat; do
  cp chat.jsonl "$name"
  "$zerotrain" tokenize --tokenizer qwen3 "$name" -o "out_$name.bin" >/dev/null 2>&1 || fail "tokenize $name exited $?"
  cmp -s chat_jsonl.bin "out_$name.bin" && cmp -s chat_jsonl.mask "out_$name.mask" ||
    fail "item 6: $name was not read as the records of chat.jsonl"
done
for dry in "" --dry-run; do
  solo "$zerotrain" --model qwen3 --data chat.jsonl "${small[@]}" $dry >jsonl.log 2>&1
  code=$?
  [ $code -eq 2 ] || fail "item 6/7: --data chat.jsonl $dry exited $code"
  grep -q 'error: chat.jsonl holds JSON lines, not tokens: .*`zerotrain tokenize --tokenizer qwen3 chat.jsonl -o chat.bin`' jsonl.log ||
    fail "item 6: no tokenize command for chat.jsonl $dry: $(grep error jsonl.log)"
  grep -q "data.format" jsonl.log && fail "item 6: chat.jsonl $dry is told about data.format: $(grep error jsonl.log)"
done
solo "$zerotrain" --model gpt2-tiny --data text.txt --dry-run >bytes.log 2>&1
grep -q "warning: data.train text.txt: text is read as bytes.*tokenize it first" bytes.log ||
  fail "item 6: no advice to tokenize text read as bytes: $(grep -i warn bytes.log)"
grep -q "GPT-2 tokens" bytes.log && fail "item 6: a warning speaks of GPT-2 tokens: $(grep -i warn bytes.log)"

# 6. --dry-run opens every file of a list as training does: a shard of JSON lines, or of another
# tokenizer, fails both with the same message; good data is described.
mkdir mixed records
cp qwen.bin records/
cp chat.jsonl records/part2.bin
cp qwen.bin llama.bin qwen.meta.json llama.meta.json mixed/ 2>/dev/null
mv mixed/llama.bin mixed/part2.bin
mv mixed/llama.meta.json mixed/part2.meta.json 2>/dev/null
for list in mixed records; do
  for dry in "" --dry-run; do
    solo "$zerotrain" --model qwen3 --data "$list/*.bin" "${small[@]}" $dry >list.log 2>&1
    code=$?
    [ $code -eq 2 ] && grep -q "error: .*$list/part2.bin" list.log || fail "item 7: the list $list/*.bin $dry exited $code: $(tail -1 list.log)"
    grep "error:" list.log >>"list_$list.errors"
  done
  [ "$(cut -d']' -f3- "list_$list.errors" | sort -u | wc -l)" -eq 1 ] ||
    fail "item 7: --dry-run and training judge $list/*.bin differently: $(cat "list_$list.errors")"
done
solo "$zerotrain" --model qwen3 --data qwen.bin "${small[@]:2}" --steps 10 --dry-run >plan.log 2>&1 ||
  fail "dry run exited $?: $(tail -2 plan.log)"
grep -q "data.train: qwen.bin (llmc, [0-9]* tokens, the largest id [0-9]* < model.vocab_size 151936); [0-9]* windows of 1 x 16 + 1 tokens" plan.log &&
  grep -q "data.train: 1 window per step (accumulation 1 x world 1): 10 steps = .* epochs" plan.log &&
  grep -q "data.train: tokenizer .*the same as the tokenizer of the model directory qwen3" plan.log ||
  fail "item 7: --dry-run does not describe the data: $(grep data plan.log)"
finish

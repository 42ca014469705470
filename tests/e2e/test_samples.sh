#!/usr/bin/env bash
# Record data as samples through the binary (docs/data.md, "Samples, packing and truncation"):
# tokenize keeps each conversation's start and --val takes whole records; --dry-run and the start
# line describe the samples, their rows, what truncation cut or left out and the packing
# efficiency; epochs count rows; the summary gives the efficiency and the padding; plain text keeps
# its windows; a bad data.packing is refused naming the key.
#   test_samples.sh ZEROTRAIN SOURCE_DIR
source "$(dirname "$0")/e2e_checks.sh"
source "$(dirname "$0")/qwen3_model_dir.sh"
fixtures=$(cd "$src/tests/fixtures/tokenizer/trimmed" && pwd)
cd "$tmp" || exit 1
qwen3_model_dir qwen3 64 "$fixtures" || fail "no model directory"
# 20 conversations of growing length: the last ones longer than seq_len 48.
words="the cat sat on the mat and the dog ran far away from home"
for i in $(seq 1 20); do
  answer=$(for k in $(seq 1 "$i"); do printf '%s ' $words; done | cut -d' ' -f1-$((i * 2)))
  printf '{"messages": [{"role": "user", "content": "question %d"}, {"role": "assistant", "content": "%s"}]}\n' "$i" "$answer"
done >chat.jsonl
"$zerotrain" tokenize --tokenizer qwen3 chat.jsonl -o chat.bin --val 10% >tok.out 2>&1 || fail "tokenize: $(cat tok.out)"
grep -q "wrote chat.bin: [0-9]* tokens (uint32), loss mask chat.mask, 18 samples chat.idx" tok.out &&
  grep -q "wrote chat.val.bin: [0-9]* tokens (uint32), loss mask chat.val.mask, 2 samples chat.val.idx" tok.out &&
  grep -q "validation: 2 records of 20 (--val 10%, seed 1234), whole, in chat.val.bin" tok.out ||
  fail "tokenize does not say it wrote samples and took whole records: $(cat tok.out)"

run=(--model qwen3 --data chat.bin --set data.val=chat.val.bin --set training.init_from=random --set data.seq_len=48
  --set train_micro_batch_size_per_gpu=2)
for packing in none pack; do
  solo "$zerotrain" "${run[@]}" --set data.packing=$packing --set training.epochs=1 --dry-run >dry_$packing.log 2>&1 ||
    fail "--dry-run with data.packing $packing exited $?: $(tail -2 dry_$packing.log)"
  # Padded to seq_len, the rows' count alone sets the efficiency.
  solo "$zerotrain" "${run[@]}" --set data.packing=$packing --set data.padding=max_length --dry-run >full_$packing.log 2>&1 ||
    fail "--dry-run with data.packing $packing exited $?: $(tail -2 dry_$packing.log)"
done
grep -q "data.train: chat.bin (llmc, .*a loss mask beside it); 18 samples, [0-9]* longer than seq_len 48 cut to it ([0-9]* tokens lost), one per row (18 rows), padded to the longest row of each micro-batch of 2: packing efficiency [0-9.]*% ([0-9.]*% padding)" dry_none.log &&
  grep -q "length 9 steps from training.epochs (--set training.epochs=1) 1: 1 x 18 rows of samples (2 a micro-batch) / 2 rows per step" dry_none.log ||
  fail "--dry-run does not describe one sample a row: $(grep -E 'data|length' dry_none.log)"
rows=$(sed -n 's/.*cut to it ([0-9]* tokens lost), packed into \([0-9]*\) rows of up to 48 tokens.*/\1/p' dry_pack.log | head -1)
[ -n "$rows" ] && [ "$rows" -lt 18 ] || fail "--dry-run does not describe packed rows: $(grep data.train dry_pack.log)"
eff() { sed -n "s/.*data.train: chat.bin.*packing efficiency \([0-9.]*\)%.*/\1/p" "$1" | head -1; }
awk -v a="$(eff full_pack.log)" -v b="$(eff full_none.log)" 'BEGIN { exit !(a > b) }' ||
  fail "packing is not more efficient than one sample a row: $(eff full_pack.log) vs $(eff full_none.log)"
solo "$zerotrain" "${run[@]}" --set data.packing=pack --set data.truncation=drop --dry-run >drop.log 2>&1 ||
  fail "data.truncation drop exited $?"
grep -q "[0-9]* samples, [0-9]* longer than seq_len 48 left out ([0-9]* tokens lost), packed into" drop.log ||
  fail "data.truncation drop does not count what it left out: $(grep data.train drop.log)"

# A run: the start line and the summary give the efficiency; the metrics the padding.
solo "$zerotrain" "${run[@]}" --set data.packing=pack --steps 2 --set training.metrics=m.jsonl >train.log 2>&1 ||
  fail "training on packed rows exited $?: $(tail -2 train.log)"
grep -q "info: data: chat.bin (llmc, .*18 samples, .*packed into $rows rows .*: packing efficiency [0-9.]*% ([0-9.]*% padding); .* epochs in 2 steps of 2 rows)" train.log ||
  fail "the start line does not describe the rows: $(grep 'info: data:' train.log)"
grep -q "summary: complete | 2 steps | [0-9]* tokens | .* | packing efficiency [0-9.]*% ([0-9.]*% padding)" train.log ||
  fail "the summary has no packing efficiency: $(grep summary: train.log)"
grep -q '"event":"summary".*"packing_efficiency":[0-9.]*,"padding":[0-9.e-]*,' m.jsonl ||
  fail "the metrics' summary has no packing efficiency: $(tail -1 m.jsonl)"

# Plain text keeps its windows; data.packing windows reads samples as windows too.
head -c 3000 "$src/data/tinytext/train.txt" >text.txt
"$zerotrain" tokenize --tokenizer qwen3 text.txt -o text.bin >/dev/null 2>&1 || fail "tokenize text.txt"
[ -e text.idx ] && fail "a text file got a sample index"
solo "$zerotrain" --model qwen3 --data text.bin --set data.val= --set training.init_from=random --set data.seq_len=16 \
  --set train_micro_batch_size_per_gpu=1 --set data.packing=pack --dry-run >text.log 2>&1 || fail "text --dry-run exited $?"
grep -q "data.train: text.bin (llmc, [0-9]* tokens, .*); [0-9]* windows of 1 x 16 + 1 tokens" text.log ||
  fail "plain text is not read as windows: $(grep data.train text.log)"
solo "$zerotrain" "${run[@]}" --set data.val= --set data.packing=windows --dry-run >windows.log 2>&1 ||
  fail "data.packing windows exited $?: $(grep error windows.log)"
grep -q "data.train: its samples are read as windows of the token stream (data.packing windows)" windows.log ||
  fail "data.packing windows does not say it reads windows: $(grep data.train windows.log)"

solo "$zerotrain" "${run[@]}" --set data.packing=multipack --dry-run >bad.log 2>&1
[ $? -ne 0 ] && grep -q "error: --set data.packing=multipack: data.packing: \"multipack\" is not valid" bad.log || fail "data.packing multipack was not refused by name: $(grep error bad.log)"
finish

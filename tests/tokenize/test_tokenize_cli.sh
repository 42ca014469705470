#!/usr/bin/env bash
# `zerotrain tokenize` through the binary: text to an llm.c file that zerotrain trains on; chat data
# gets its loss mask, which training takes (the loss on the answers only), each conversation as its
# template writes it; --system, --train-on and --skip-invalid (naming the records it leaves out); bad
# input: one message naming file and line, exit status 2 (as a bad command line).
#   test_tokenize_cli.sh ZEROTRAIN SOURCE_DIR
set -u
zerotrain=$1
src=$2
source "$(dirname "$0")/../shell_checks.sh"
fixtures=$src/tests/fixtures/tokenizer/trimmed

# 1. Text with GPT-2's tokenizer: llm.c's header (magic, version 1, count), uint16 tokens.
"$zerotrain" tokenize --tokenizer "$fixtures/gpt2" "$src/data/tinytext/val.txt" -o "$tmp/val.bin" >"$tmp/out" 2>&1 ||
  fail "tokenize exited $?: $(cat "$tmp/out")"
read -r magic version count <<<"$(od -A n -t d4 -N 12 "$tmp/val.bin")"
[ "$magic" = 20240520 ] && [ "$version" = 1 ] && [ "$count" -gt 1000 ] || fail "header: $magic $version $count"
[ "$(stat -c %s "$tmp/val.bin")" -eq $((1024 + 2 * count)) ] || fail "size $(stat -c %s "$tmp/val.bin") for $count tokens"
grep -q "wrote $tmp/val.bin: $count tokens (uint16)$" "$tmp/out" && grep -q "each after <|endoftext|> (50256)" "$tmp/out" ||
  fail "summary: $(cat "$tmp/out")"
[ ! -e "$tmp/val.mask" ] || fail "a mask for text"

# 2. zerotrain trains on it (read by its header).
solo "$zerotrain" --config zero1 --model gpt2-tiny --steps 2 --data "$tmp/val.bin" --set data.val= \
  --set train_micro_batch_size_per_gpu=1 --set gradient_accumulation_steps=1 --set data.seq_len=32 >"$tmp/run.log" 2>&1 ||
  fail "zerotrain on the .bin exited $?: $(tail -5 "$tmp/run.log")"
grep -q "data: $tmp/val.bin (llmc, $count tokens" "$tmp/run.log" || fail "not read as llmc: $(cat "$tmp/run.log")"

# 3. Chat data: uint32 tokens (Qwen's vocabulary), the mask beside; training reads both.
printf '%s\n' '{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}' \
  '{"conversations": [{"from": "human", "value": "2+2?"}, {"from": "gpt", "value": "4"}]}' >"$tmp/chat.jsonl"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen3" "$tmp/chat.jsonl" -o "$tmp/chat.bin" >"$tmp/out" 2>&1 ||
  fail "chat tokenize exited $?: $(cat "$tmp/out")"
read -r magic version count <<<"$(od -A n -t d4 -N 12 "$tmp/chat.bin")"
[ "$magic" = 20240801 ] && [ "$version" = 7 ] || fail "chat header: $magic $version $count"
read -r magic version mcount <<<"$(od -A n -t d4 -N 12 "$tmp/chat.mask")"
[ "$magic" = 20240523 ] && [ "$mcount" = "$count" ] || fail "mask header: $magic $version $mcount"
grep -q "2 documents (2 chats, qwen3 format, told by its chat template)" "$tmp/out" || fail "chat summary: $(cat "$tmp/out")"
# A conversation's sample starts as its template starts it (<|im_start|>, 151644), not after the
# separator.
[ "$(od -A n -t d4 -j 1024 -N 4 "$tmp/chat.bin" | tr -d ' ')" = 151644 ] ||
  fail "the first token of a conversation: $(od -A n -t d4 -j 1024 -N 8 "$tmp/chat.bin")"
# The conversations are samples (chat.idx): a row holds a whole one, its answer included.
[ -e "$tmp/chat.idx" ] || fail "no sample index beside chat.bin"
solo "$zerotrain" --config zero1 --model gpt2-tiny --steps 1 --data "$tmp/chat.bin" \
  --set data.val= --set model.vocab_size=151669 --set data.seq_len=64 --set train_micro_batch_size_per_gpu=1 \
  >"$tmp/run.log" 2>&1 || fail "training on a mask exited $?: $(tail -3 "$tmp/run.log")"
grep -q "data: $tmp/chat.bin (llmc, $count tokens, the loss on the targets its mask keeps" "$tmp/run.log" ||
  fail "mask not named: $(grep data: "$tmp/run.log")"
grep -q "step     1/1 | loss [0-9]" "$tmp/run.log" || fail "no loss of the masked step: $(tail -3 "$tmp/run.log")"

# 4. Bad input: file and line, exit 2, nothing written; a bad command line: exit 2.
printf '{"text": "ok"}\n{"text": }\n' >"$tmp/bad.jsonl"
"$zerotrain" tokenize --tokenizer "$fixtures/gpt2" "$tmp/bad.jsonl" -o "$tmp/bad.bin" >"$tmp/out" 2>&1
code=$?
[ $code -eq 2 ] || fail "bad line exited $code"
grep -q "error: tokenize: $tmp/bad.jsonl:2: not valid JSON" "$tmp/out" || fail "bad line message: $(cat "$tmp/out")"
[ ! -e "$tmp/bad.bin" ] && [ ! -e "$tmp/bad.bin.tmp" ] || fail "output left after an error"
"$zerotrain" tokenize --tokenizer "$fixtures/gpt2" "$tmp/bad.jsonl" >"$tmp/out" 2>&1
code=$?
[ $code -eq 2 ] && grep -q "output" "$tmp/out" || fail "no -o: exit $code: $(cat "$tmp/out")"

# 5. --system is the system message of the conversations without one: the same tokens as a file that
# writes it; --train-on last counts what "loss": false on the earlier answers counts; --skip-invalid
# leaves the bad line out, counts it and names it, and gives the tokens of the file without it.
qa='{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"'
qb='{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}'
printf '%s\n' "{\"messages\": [$qa}, $qb]}" >"$tmp/plain.jsonl"
printf '%s\n' "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, $qa, \"loss\": false}, $qb]}" >"$tmp/written.jsonl"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen2.5" "$tmp/plain.jsonl" -o "$tmp/plain.bin" --system "Be brief." \
  --train-on last >"$tmp/out" 2>&1 || fail "--system --train-on last exited $?: $(cat "$tmp/out")"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen2.5" "$tmp/written.jsonl" -o "$tmp/written.bin" >/dev/null 2>&1 ||
  fail "the written system message and loss flag: exit $?"
cmp -s "$tmp/plain.bin" "$tmp/written.bin" || fail "--system gave other tokens than the system message written"
cmp -s "$tmp/plain.mask" "$tmp/written.mask" || fail "--train-on last counted other tokens than the loss flag"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen2.5" "$tmp/plain.jsonl" -o "$tmp/all.bin" >/dev/null 2>&1
cmp -s "$tmp/all.mask" "$tmp/written.mask" && fail "--train-on all (the default) counted only the last answer"
cmp -s "$tmp/all.bin" "$tmp/written.bin" && fail "without --system, the tokens of the system message"
{ cat "$tmp/plain.jsonl"; echo '{"messages": [{"role": "user", "content": "x"}]}'; cat "$tmp/plain.jsonl"; } >"$tmp/some_bad.jsonl"
cat "$tmp/plain.jsonl" "$tmp/plain.jsonl" >"$tmp/good.jsonl"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen2.5" "$tmp/some_bad.jsonl" -o "$tmp/skip.bin" >"$tmp/out" 2>&1
code=$?
[ $code -eq 2 ] && grep -q "error: tokenize: $tmp/some_bad.jsonl:2: the conversation has no assistant message" "$tmp/out" ||
  fail "an invalid record without --skip-invalid: exit $code: $(cat "$tmp/out")"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen2.5" "$tmp/some_bad.jsonl" -o "$tmp/skip.bin" --skip-invalid >"$tmp/out" 2>&1 ||
  fail "--skip-invalid exited $?: $(cat "$tmp/out")"
grep -qx "tokenize: skipped 1 invalid record (--skip-invalid):" "$tmp/out" &&
  grep -qx "  $tmp/some_bad.jsonl:2: the conversation has no assistant message: nothing to train on" "$tmp/out" ||
  fail "--skip-invalid's count: $(cat "$tmp/out")"
# Every skipped record is named up to 20, the rest counted.
for i in $(seq 23); do echo '{"text": 1}'; done >"$tmp/many_bad.jsonl"
cat "$tmp/plain.jsonl" >>"$tmp/many_bad.jsonl"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen2.5" "$tmp/many_bad.jsonl" -o "$tmp/many.bin" --skip-invalid >"$tmp/out" 2>&1 ||
  fail "--skip-invalid of 23 exited $?: $(cat "$tmp/out")"
grep -qx "tokenize: skipped 23 invalid records (--skip-invalid):" "$tmp/out" &&
  [ "$(grep -c "^  $tmp/many_bad.jsonl:[0-9]*: text: expected a string, got number$" "$tmp/out")" -eq 20 ] &&
  grep -q "^  $tmp/many_bad.jsonl:20: text" "$tmp/out" && grep -qx "  and 3 more" "$tmp/out" ||
  fail "--skip-invalid of 23: $(cat "$tmp/out")"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen2.5" "$tmp/good.jsonl" -o "$tmp/good.bin" >/dev/null 2>&1
cmp -s "$tmp/skip.bin" "$tmp/good.bin" && cmp -s "$tmp/skip.mask" "$tmp/good.mask" ||
  fail "--skip-invalid gave other tokens than the file without the bad record"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen2.5" "$tmp/plain.jsonl" -o "$tmp/x.bin" --train-on first >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "error: tokenize: --train-on first: expected all or last" "$tmp/out" || fail "--train-on first: $(cat "$tmp/out")"

# 5. Preference pairs: the summary counts them, the index is of pairs (magic 20240525, S even); a
# record of another form than the file's first is refused by line.
printf '%s\n' '{"prompt": [{"role": "user", "content": "Hi"}], "chosen": [{"role": "assistant", "content": "Hello!"}], "rejected": [{"role": "assistant", "content": "Go."}]}' \
  '{"prompt": [{"role": "user", "content": "2+2?"}], "chosen": [{"role": "assistant", "content": "4"}], "rejected": [{"role": "assistant", "content": "5"}]}' >"$tmp/pairs.jsonl"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen3" "$tmp/pairs.jsonl" -o "$tmp/pairs.bin" >"$tmp/out" 2>&1 ||
  fail "pairs tokenize exited $?: $(cat "$tmp/out")"
grep -q "^tokenize: 1 file, 2 preference pairs (4 samples: TRL's prompt/chosen/rejected as conversations; qwen3 format, told by its chat template)" "$tmp/out" &&
  grep -q "^wrote $tmp/pairs.bin: [0-9]* tokens (uint32), loss mask $tmp/pairs.mask, 2 pairs (4 samples) $tmp/pairs.idx$" "$tmp/out" ||
  fail "pairs summary: $(cat "$tmp/out")"
read -r magic version samples <<<"$(od -A n -t d4 -N 12 "$tmp/pairs.idx")"
[ "$magic" = 20240525 ] && [ "$version" = 1 ] && [ "$samples" = 4 ] || fail "pair index header: $magic $version $samples"
printf '%s\n' '{"chosen": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], "rejected": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Go."}]}' >>"$tmp/pairs.jsonl"
"$zerotrain" tokenize --tokenizer "$fixtures/qwen3" "$tmp/pairs.jsonl" -o "$tmp/mixed.bin" --skip-invalid >"$tmp/out" 2>&1
code=$?
[ $code -eq 2 ] && grep -qx "error: tokenize: $tmp/pairs.jsonl:3: TRL's chosen/rejected as conversations with an implicit prompt, but the file's first record ($tmp/pairs.jsonl:1) is TRL's prompt/chosen/rejected as conversations: a file holds records of one form" "$tmp/out" ||
  fail "a mixed file: exit $code: $(cat "$tmp/out")"
[ ! -e "$tmp/mixed.bin" ] || fail "output left after a mixed file"

finish

#!/usr/bin/env bash
# scripts/text_to_bin.pl: text to llm.c .bin, one token per byte or GPT-2's BPE; zerotrain reads
# the result; bad input gets one message and a non-zero exit.
#   test_text_to_bin.sh SCRIPT ZEROTRAIN CORPUS_TXT
set -u
script=$1
zerotrain=$2
corpus=$3
failed=0
fail() { echo "FAIL: $*"; failed=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. Bytes: the header (magic, version, count) and one uint16 token per byte of the input.
perl "$script" "$corpus" "$tmp/val.bin" 2>"$tmp/err" || fail "byte mode exited $?: $(cat "$tmp/err")"
size=$(stat -c %s "$corpus")
read -r magic version count <<<"$(od -A n -t d4 -N 12 "$tmp/val.bin")"
[ "$magic" = 20240520 ] && [ "$version" = 1 ] && [ "$count" = "$size" ] ||
  fail "header: magic $magic version $version count $count (expected 20240520 1 $size)"
[ "$(stat -c %s "$tmp/val.bin")" -eq $((1024 + 2 * size)) ] || fail "size $(stat -c %s "$tmp/val.bin")"
cmp <(od -A n -v -t u1 -w1 "$corpus" | tr -d ' ') <(tail -c +1025 "$tmp/val.bin" | od -A n -v -t u2 -w2 | tr -d ' ') ||
  fail "tokens are not the bytes of the input"
grep -q "$size tokens" "$tmp/err" || fail "no token count said: $(cat "$tmp/err")"

# 2. zerotrain reads it by its header (data.format auto) and trains on it.
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE \
  "$zerotrain" --config zero1 --steps 2 --data "$tmp/val.bin" --set data.val= >"$tmp/run.log" 2>&1 ||
  fail "zerotrain on the .bin exited $?: $(cat "$tmp/run.log")"
grep -q "data: $tmp/val.bin (llmc, $size tokens" "$tmp/run.log" || fail "not read as llmc: $(cat "$tmp/run.log")"

# 3. GPT-2's BPE on a vocabulary small enough to follow by hand: "hello world" splits into "hello"
#    and " world" (space as Ġ); merges in rank order give hello, then Ġw + or + l + d.
printf '{"h": 0, "e": 1, "l": 2, "o": 3, "\\u0120": 4, "w": 5, "r": 6, "d": 7, "he": 8, "ll": 9,\n' >"$tmp/vocab.json"
printf ' "hell": 10, "hello": 11, "\\u0120w": 12, "or": 13, "\\u0120wor": 14, "\\"!\\"": 15, "!": 16}\n' >>"$tmp/vocab.json"
printf '#version: 0.2\nh e\nl l\nhe ll\nhell o\n\xc4\xa0 w\no r\n\xc4\xa0w or\n' >"$tmp/merges.txt"
printf 'hello world!' >"$tmp/hello.txt"
perl "$script" --gpt2 "$tmp/vocab.json" "$tmp/merges.txt" "$tmp/hello.txt" "$tmp/hello.bin" 2>"$tmp/err" ||
  fail "--gpt2 exited $?: $(cat "$tmp/err")"
tokens=$(tail -c +1025 "$tmp/hello.bin" | od -A n -v -t u2 | xargs)
[ "$tokens" = "11 14 2 7 16" ] || fail "--gpt2 tokens: '$tokens', expected '11 14 2 7 16'"
read -r _ _ count <<<"$(od -A n -t d4 -N 12 "$tmp/hello.bin")"
[ "$count" = 5 ] || fail "--gpt2 header count $count"

# 4. Bad input: one message naming the file, non-zero exit.
expect_error() {  # expect_error PATTERN ARGS...
  local pattern=$1 out code
  shift
  out=$(perl "$script" "$@" 2>&1)
  code=$?
  [ $code -ne 0 ] || fail "'$*' exited 0"
  echo "$out" | grep -qF -- "$pattern" || fail "'$*': message lacks '$pattern': $out"
}
expect_error "$tmp/missing.txt: cannot open" "$tmp/missing.txt" "$tmp/x.bin"
expect_error "$tmp: is a directory" "$tmp" "$tmp/x.bin"
expect_error "usage:" "$corpus"
printf 'hello world' >"$tmp/plain.txt"
printf 'h e\nnot a pair here\n' >"$tmp/bad_merges.txt"
expect_error "$tmp/bad_merges.txt line 2: expected two symbols" --gpt2 "$tmp/vocab.json" "$tmp/bad_merges.txt" "$tmp/plain.txt" "$tmp/x.bin"
printf '\xff\xfe' >"$tmp/latin.txt"
expect_error "$tmp/latin.txt: not UTF-8 text" --gpt2 "$tmp/vocab.json" "$tmp/merges.txt" "$tmp/latin.txt" "$tmp/x.bin"
printf 'hello zzz' >"$tmp/unknown.txt"
expect_error "is not in $tmp/vocab.json" --gpt2 "$tmp/vocab.json" "$tmp/merges.txt" "$tmp/unknown.txt" "$tmp/x.bin"

if [ $failed -ne 0 ]; then exit 1; fi
echo "PASS"

# Sourced first by the shell tests of the binary, run as `TEST ZEROTRAIN SOURCE_DIR`: $zerotrain and
# $src from the arguments, then tests/shell_checks.sh (fail, finish, $tmp, ...).
set -u
zerotrain=$1
src=$2
source "$(dirname "${BASH_SOURCE[0]}")/../shell_checks.sh"
# A command of the documents, in the current directory on one OpenMP thread: run NAME COMMAND, its
# stdout to NAME.out and its stderr to NAME.err.
run() {  # run NAME COMMAND: stdout to NAME.out, stderr to NAME.err
  local name=$1
  shift
  (export OMP_NUM_THREADS=1; eval "$*") >"$name.out" 2>"$name.err"
}
# A Qwen3 of Qwen's vocabulary and two small layers as save_pretrained writes it, the trimmed Qwen3
# tokenizer of tests/fixtures beside it (a downloaded Qwen3-0.6B's stand-in): small_qwen3 DIR, with
# build/zerotrain in the current directory.
small_qwen3() {
  run base build/zerotrain --model qwen3-tiny --set model.vocab_size=151936 --set model.d_model=32 \
    --set model.head_dim=16 --set model.d_ff=64 --set data.format=synthetic --set data.train=synthetic:vocab=65536 \
    --set data.seq_len=8 --set train_micro_batch_size_per_gpu=1 --set training.eval_interval=0 --steps 1 \
    --set training.save_final="$1" || fail "making the base model exited $?: $(tail -3 base.err)"
  cp "$src/tests/fixtures/tokenizer/trimmed/qwen3/"* "$1/"
}

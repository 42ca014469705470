#!/usr/bin/env bash
# The step's memory with the LM head on the rows whose target counts (the completions of preference
# pairs) against the head on every row, for pairs with long prompts (bench/RESULTS.md, "The LM head
# on the rows that count"). Not a test: it prints what each binary plans and measures.
#
#   bench/head_memory.sh BEFORE_ZEROTRAIN AFTER_ZEROTRAIN [TOKENIZER_DIR]
#
# BEFORE computes the head on every row (a build before the change), AFTER on the rows that count.
# The data: 8 pairs of TRL's text form, each a prompt of 1500 words and answers of 60 and 40, tokenized
# by AFTER with Qwen3's tokenizer (default ../shared/tokenizers/qwen3 beside the checkout).
# 1. --dry-run of Qwen3-0.6B, 2 pairs (4 rows) x 2048 tokens a micro-batch, fp32 on the CPU, with
#    and without activation checkpointing: the activations each binary plans.
# 2. A measured small shape: qwen3-tiny's two blocks with Qwen3's vocabulary (151,936 ids), 2 pairs x
#    2048 tokens, 3 DPO steps in one process: the summary's peak activations (the run's own ledger,
#    its measured bytes) and the median step time.
set -eu
before=$(realpath "$1")
after=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
tokenizer=$(realpath "${3:-$root/../shared/tokenizers/qwen3}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

python3 - <<'EOF'
import json, random
random.seed(1)
words = "the model reads a long prompt about rivers mountains cities and weather before it answers".split()
say = lambda n: " ".join(random.choice(words) for _ in range(n))
with open("pairs.jsonl", "w") as f:
    for _ in range(8):
        f.write(json.dumps({"prompt": say(1500), "chosen": " " + say(60), "rejected": " " + say(40)}) + "\n")
EOF
"$after" tokenize --tokenizer "$tokenizer" pairs.jsonl -o pairs.bin --quiet
common=(--data pairs.bin --set data.seq_len=2048 --set training.micro_batch_size=2
        --set preference.loss_type=sigmoid --set training.eval_interval=0 --set training.sample_every=0)

echo "## --dry-run, Qwen3-0.6B, 2 pairs x 2048 tokens, fp32"
for recompute in false true; do
  for binary in "$before" "$after"; do
    name=$([ "$binary" = "$before" ] && echo before || echo after)
    out=$("$binary" --model qwen3-0.6b "${common[@]}" --set training.gradient_checkpointing=$recompute --dry-run 2>&1)
    activations=$(grep -E '^  activations ' <<<"$out" | sed -E 's/ +/ /g')
    head=$(grep -F "the LM head's logits" <<<"$out" | sed -E 's/^ +//' || true)
    echo "$name, checkpointing $recompute: $activations"
    [ -z "$head" ] || echo "    $head"
  done
done

echo "## measured: qwen3-tiny blocks, vocabulary 151936, 2 pairs x 2048 tokens, 3 steps"
for binary in "$before" "$after"; do
  name=$([ "$binary" = "$before" ] && echo before || echo after)
  OMP_NUM_THREADS=2 "$binary" --model qwen3-tiny --set model.vocab_size=151936 --set model.max_seq_len=2048 \
    "${common[@]}" --steps 3 --set training.logging_steps=1 --set training.metrics="$name.jsonl" >"$name.log" 2>&1 ||
    { echo "$name failed:"; tail -5 "$name.log"; exit 1; }
  python3 - "$name" <<'EOF'
import json, statistics, sys
name = sys.argv[1]
records = [json.loads(line) for line in open(f"{name}.jsonl")]
steps = [r["step_ms"] for r in records if r["event"] == "step"]
summary = [r for r in records if r["event"] == "summary"][0]
peak = summary["memory_peak"][0]
print(f"{name}: peak activations {peak['activations'] / 2**20:.2f} MiB, resident {peak['resident'] / 2**20:.1f} MiB, "
      f"step {statistics.median(steps[1:]):.0f} ms (median of steps 2-3), loss {summary['loss']:.6f}")
EOF
done

#!/usr/bin/env bash
# Tokenizer throughput on 2 threads: zerotrain's, tiktoken's and Hugging Face tokenizers' on the
# same documents, for GPT-2 and Llama 3. Prints the command line and the machine's load first.
#   bench/tokenize/run.sh [BUILD_DIR] [TOKENIZERS_DIR] [TEXT]
#   (defaults: build, ../shared/tokenizers, bench/out/tokenize_text.txt made by reference.py)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
tokenizers=${2:-$root/../shared/tokenizers}
text=${3:-$root/bench/out/tokenize_text.txt}
python=${PYTHON:-python3}  # one with tiktoken and tokenizers installed
threads=${THREADS:-2}
echo "# $0 $*"
echo "# $(uname -n), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p "$(dirname "$text")"
[ -f "$text" ] || "$python" "$root/bench/tokenize/reference.py" --make-text "$text"
for name in gpt2 llama3; do
  echo "## $name"
  "$build/bench/tokenize/bench_tokenize" --tokenizer "$tokenizers/$name" --text "$text" --threads "$threads"
  "$python" "$root/bench/tokenize/reference.py" --tokenizer "$tokenizers/$name" --text "$text" --threads "$threads"
done

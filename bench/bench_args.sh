# Sourced by the bench/*.sh scripts right after `set -euo pipefail`: $root, the binary they time,
# --help and the refusal of an unknown argument, named after the script.
root=$(cd "$(dirname "$0")/.." && pwd)
zerotrain="$root/build/zerotrain"
script=$(basename "$0")
# usage LAST: the script's header comment (lines 2 to LAST) without its '# ', then exit 0.
usage() { sed -n "2,$1p" "$0" | sed 's/^# \{0,1\}//'; exit 0; }
unknown_argument() { echo "$script: unknown argument '$1' (see --help)" >&2; exit 2; }
require_zerotrain() { [[ -x "$zerotrain" ]] || { echo "$script: build first: $zerotrain not found" >&2; exit 1; }; }

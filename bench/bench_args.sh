# Sourced by the bench/*.sh scripts right after `set -euo pipefail`: $root, the binary they time,
# their options, --help and the refusal of an unknown argument, named after the script.
root=$(cd "$(dirname "$0")/.." && pwd)
zerotrain="$root/build/zerotrain"
script=$(basename "$0")
# usage LAST: the script's header comment (lines 2 to LAST) without its '# ', then exit 0.
usage() { sed -n "2,$1p" "$0" | sed 's/^# \{0,1\}//'; exit 0; }
unknown_argument() { echo "$script: unknown argument '$1' (see --help)" >&2; exit 2; }
require_zerotrain() { [[ -x "$zerotrain" ]] || { echo "$script: build first: $zerotrain not found" >&2; exit 1; }; }
# parse_options USAGE_LAST FLAG=VARIABLE... -- ARGS...: each "FLAG VALUE" of ARGS sets VARIABLE,
# -h/--help prints the usage, anything else is refused; what follows "--" is left in `passed_on`.
parse_options() {
  local usage_last=$1
  shift
  local -A variable_of=()
  while [[ $1 != -- ]]; do
    variable_of[${1%%=*}]=${1#*=}
    shift
  done
  shift
  passed_on=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --) shift; passed_on=("$@"); return ;;
      -h|--help) usage "$usage_last" ;;
      *) [[ -n ${variable_of[$1]:-} ]] || unknown_argument "$1"
         printf -v "${variable_of[$1]}" '%s' "$2"; shift 2 ;;
    esac
  done
}

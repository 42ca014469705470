# Sourced first by the shell tests of the binary, run as `TEST ZEROTRAIN SOURCE_DIR`: $zerotrain and
# $src from the arguments, then tests/shell_checks.sh (fail, finish, $tmp, ...).
set -u
zerotrain=$1
src=$2
source "$(dirname "${BASH_SOURCE[0]}")/../shell_checks.sh"

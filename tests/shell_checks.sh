# Sourced by the shell tests: `fail MESSAGE` records a failure and goes on, `finish` ends the test
# (PASS, or exit status 1 after any failure); $tmp is a scratch directory, removed on exit.
failed=0
fail() { echo "FAIL: $*"; failed=1; }
finish() {
  if [ $failed -ne 0 ]; then exit 1; fi
  echo "PASS"
}
# The command block of a document after an HTML comment holding MARKER, a command per line once
# the lines ending in \ are joined: documented_commands FILE MARKER
documented_commands() {
  awk -v marker="$2" 'index($0, "<!-- " marker) == 1 {found = 1; next}
    found && /^```$/ {if (inside) exit; inside = 1; next}
    inside {print}' "$1" | sed -e ':a' -e '/\\$/N; s/\\\n */ /; ta'
}
# A command run as one process outside any launcher's world, on one OpenMP thread: solo CMD ARGS...
solo() { env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u PMI_SIZE OMP_NUM_THREADS=1 "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Sourced by the shell tests: `fail MESSAGE` records a failure and goes on, `finish` ends the test
# (PASS, or exit status 1 after any failure); $tmp is a scratch directory, removed on exit.
failed=0
fail() { echo "FAIL: $*"; failed=1; }
finish() {
  if [ $failed -ne 0 ]; then exit 1; fi
  echo "PASS"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

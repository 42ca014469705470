#!/usr/bin/env bash
# The README's two set-up commands are the law: the first installs, builds what it runs (the
# zerotrain target alone) and trains; the second builds and runs the whole test suite, and .ci/run
# runs exactly it. The build times the README states are the ones bench/RESULTS.md records.
#   test_readme_commands.sh REPOSITORY_ROOT
set -u
root=$1
failed=0
fail() { echo "FAIL: $*"; failed=1; }
readme=$root/README.md
mapfile -t commands < <(grep '^\./scripts/install-deps\.sh && ' "$readme")
[ ${#commands[@]} -eq 2 ] || fail "expected the README's two set-up commands, found ${#commands[@]}: ${commands[*]}"
train=${commands[0]-}
suite=${commands[1]-}
[[ $train == *'cmake --build build -j"$(nproc)" --target zerotrain && '*'build/zerotrain '* ]] ||
  fail "the first command does not build the zerotrain target alone before running it: $train"
[[ $suite == *'cmake --build build -j"$(nproc)" && ctest --test-dir build'* ]] ||
  fail "the second command does not build everything and run ctest: $suite"
ci=$(grep '^\./scripts/install-deps\.sh && ' "$root/.ci/run")
[ "$ci" = "$suite" ] || fail ".ci/run does not run the README's test command: '$ci' against '$suite'"
grep -q -- '-DZT_CUDA=OFF' "$readme" || fail "the README does not say -DZT_CUDA=OFF for machines without a GPU"
for minutes in $(grep -Eo '[0-9]+\.[0-9] CPU-minutes' "$readme" | cut -d' ' -f1); do
  grep -q "| $minutes min |" "$root/bench/RESULTS.md" || fail "$minutes CPU-minutes in the README, not in bench/RESULTS.md"
done
grep -q 'CPU-minutes' "$readme" || fail "the README states no build time"
if [ $failed -ne 0 ]; then exit 1; fi
echo "PASS"

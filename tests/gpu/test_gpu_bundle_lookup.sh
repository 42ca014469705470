#!/usr/bin/env bash
# scripts/gpu_bundle.sh unpack takes each CUDA library the executables miss from the machine's
# toolkit first, then from its python3's CUDA wheels; a copy found anywhere else is taken only when
# it is the only one, never a driver stub; several such copies are an error naming them.
#   test_gpu_bundle_lookup.sh GPU_BUNDLE_SH
set -u
bundle=$1
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
lib=libzt_fake.so.13
put() { mkdir -p "$root/$1" && touch "$root/$1/$lib"; }
status=0
expect() {  # what: expected directory (empty: an error)
  local got code
  got=$(ZT_SYSROOT=$root bash "$bundle" find-library "$lib" 2>"$root/err")
  code=$?
  if [ -n "$2" ] && { [ $code -ne 0 ] || [ "$got" != "$root/$2" ]; }; then
    echo "FAIL $1: got '$got' (exit $code), expected $root/$2"; status=1
  elif [ -z "$2" ] && { [ $code -eq 0 ] || ! grep -q "several places" "$root/err"; }; then
    echo "FAIL $1: got '$got' (exit $code), expected an error naming the copies"; status=1
  else
    echo "ok $1"
  fi
}
put aaa/stubs
put opt/vendor/lib
expect "a stub and one other copy: the other" opt/vendor/lib
put home/user/old/lib
expect "two untrusted copies: an error" ""
put opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib
expect "a CUDA wheel before untrusted copies" opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib
put usr/local/cuda/lib64
expect "the toolkit before everything" usr/local/cuda/lib64
exit $status

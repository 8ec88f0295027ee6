#!/usr/bin/env bash
# Smoke run of the benchmark programs (ctest label `bench`): each must exit 0 and print figures.
# QSD_BENCH_QUICK=1 selects tiny sizes; no time is asserted.
set -u
status=0
for prog in "$@"; do
  name=$(basename "$prog")
  if ! out=$("$prog" --quick 2>&1); then
    echo "FAIL: $name exited with an error:"; echo "$out"; status=1; continue
  fi
  echo "$out"
  if ! grep -q '[0-9]' <<<"$out"; then
    echo "FAIL: $name printed no figures"; status=1
  fi
done
exit $status

#!/usr/bin/env bash
# Download the wheels of bench/gpu_wheels.txt for a GPU machine (Python 3.12, manylinux x86-64) into DIR
# (default .whl, ignored by .gitignore), for bench/gpu_check.sh to install there.
# usage: bench/gpu_wheels.sh [DIR] [--xgboost-gpu]
#
# --xgboost-gpu also fetches XGBoost's CUDA build (132 MB, more than the 64 MiB a device call carries) and
# splits it into .whl-parts/1, 2, 3 (at most 60 MiB each, with its name and SHA-256 in each MANIFEST): carry
# one part a call and keep it on the warm machine with bench/gpu_stash.sh; bench/gpu_check.sh joins, checks
# and installs it, and bench_gpu.py then times XGBoost GPU beside gputrees (docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.whl}
mkdir -p "$DIR"
grep -v '^#' bench/gpu_wheels.txt | while read -r req; do
  [ -n "$req" ] || continue
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$DIR" "$req"
done
du -sh "$DIR"
if [ "${2:-}" = "--xgboost-gpu" ]; then
  XGB=$(grep '^xgboost-cpu==' bench/gpu_wheels.txt | sed 's/^xgboost-cpu/xgboost/')
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 -d "$tmp" "$XGB"
  wheel=$(ls "$tmp"/*.whl)
  name=$(basename "$wheel")
  sum=$(sha256sum "$wheel" | cut -d' ' -f1)
  rm -rf .whl-parts
  split -b 60M -d -a 1 "$wheel" "$tmp/part."
  n=0
  for part in "$tmp"/part.*; do
    n=$((n + 1))
    mkdir -p ".whl-parts/$n"
    mv "$part" ".whl-parts/$n/"
  done
  for d in .whl-parts/*/; do
    printf '%s %s %s\n' "$name" "$sum" "$n" > "$d/MANIFEST"
  done
  rm -rf "$tmp"
  du -sh .whl-parts/*
fi

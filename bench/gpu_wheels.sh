#!/usr/bin/env bash
# Download the wheels of bench/gpu_wheels.txt for a GPU machine (Python 3.12, manylinux x86-64) into DIR
# (default .whl, which .git/info/exclude should ignore), for bench/gpu_check.sh to install there.
# usage: bench/gpu_wheels.sh [DIR]
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

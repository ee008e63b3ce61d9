#!/usr/bin/env bash
# On a GPU machine: keep the wheel parts carried in DIR (.whl-parts/N, made by bench/gpu_wheels.sh
# --xgboost-gpu) in /tmp/gputrees-parts, where bench/gpu_check.sh finds them once every part has come
# (one part a device call: each call carries at most 64 MiB; the machine stays warm between calls).
# usage: bench/gpu_stash.sh DIR
set -euo pipefail
DIR=${1:?usage: bench/gpu_stash.sh DIR}
mkdir -p /tmp/gputrees-parts
cp "$DIR"/part.* "$DIR"/MANIFEST /tmp/gputrees-parts/
read -r name sum total < /tmp/gputrees-parts/MANIFEST
have=$(ls /tmp/gputrees-parts/part.* | wc -l)
echo "$name: $have of $total parts kept in /tmp/gputrees-parts"

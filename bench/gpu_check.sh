#!/usr/bin/env bash
# The one-shot GPU check (issue 11): run from the repository root of a GPU machine that has no network.
#
#   bench/gpu_check.sh OUT [WHEELS]     # OUT: a folder for the results (at most 8 files); WHEELS: default .whl
#   bench/gpu_check.sh OUT --dry-run    # the same steps on a CPU, in numba-cuda's simulator, tiny sizes
#
# Steps, each under its own time limit so that the whole stays under 8 minutes: the wheels of
# bench/gpu_wheels.txt installed (made here by bench/gpu_wheels.sh), the device and the versions, a kernel
# smoke test (the device step against the CPU's kernels), bench/bench_gpu.py at 1M and 10M rows with
# XGBoost and LightGBM on the CPU beside it, then `pytest -m gpu`, then bench/gpu_profile.py. Files in OUT:
# device.txt, smoke.txt, bench_gpu.txt, pytest_gpu.txt, profile.txt and bench_gpu's gpu-*.json and gpu-*.md.
set -uo pipefail
OUT=${1:?usage: bench/gpu_check.sh OUT [WHEELS | --dry-run]}
ARG=${2:-.whl}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
DRY=0
if [ "$ARG" = "--dry-run" ]; then
  DRY=1
  export NUMBA_ENABLE_CUDASIM=1
elif [ -d "$ARG" ] && ls "$ARG"/*.whl > /dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/gputrees-site \
    "$ARG"/*.whl || exit 1
  export PYTHONPATH=/tmp/gputrees-site
fi
# XGBoost's CUDA build, carried in parts over earlier calls (bench/gpu_stash.sh): joined, checked, installed
# over the CPU build, and timed by bench_gpu.py as the xgboost-gpu peer
XGB_GPU=""
if [ $DRY = 0 ] && [ -f /tmp/gputrees-parts/MANIFEST ]; then
  read -r name sum total < /tmp/gputrees-parts/MANIFEST
  if [ "$(ls /tmp/gputrees-parts/part.* | wc -l)" = "$total" ]; then
    cat /tmp/gputrees-parts/part.* > "/tmp/$name"
    if echo "$sum  /tmp/$name" | sha256sum -c --quiet - && $PY -m pip install -q --no-index --no-deps \
        --no-compile --no-cache-dir --upgrade --target /tmp/gputrees-site "/tmp/$name"; then
      XGB_GPU="xgboost-gpu"
    fi
  fi
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
start=$(date +%s)

{
  date -u
  nvidia-smi 2>&1 | head -15
  $PY - <<'PYEOF'
import importlib, platform
print("python", platform.python_version())
for name in ("numpy", "numba", "numba.cuda", "cupy", "sklearn", "xgboost", "lightgbm", "gputrees"):
    try:
        m = importlib.import_module(name)
        print(name, getattr(m, "__version__", "?"), getattr(m, "__file__", ""))
    except Exception as exc:  # a missing peer is reported, not fatal
        print(name, "MISSING", type(exc).__name__, exc)
PYEOF
} > "$OUT/device.txt" 2>&1

# a small boosting fit on the GPU against the CPU's, and the time of the first (compiling) fit
timeout 150 $PY bench/gpu_smoke.py > "$OUT/smoke.txt" 2>&1
echo "smoke: exit $? after $(( $(date +%s) - start )) s" >> "$OUT/smoke.txt"

if [ $DRY = 0 ]; then
  # the CPU peers that finish in seconds; gputrees' own CPU kernels would spend the first minute compiling
  timeout 230 $PY bench/bench_gpu.py --rows 1000000 10000000 --defaults --peers xgboost lightgbm $XGB_GPU --out "$OUT" \
    > "$OUT/bench_gpu.txt" 2>&1
else
  timeout 300 $PY bench/bench_gpu.py --dry-run --out "$OUT" > "$OUT/bench_gpu.txt" 2>&1
fi
echo "bench_gpu: exit $? after $(( $(date +%s) - start )) s" >> "$OUT/bench_gpu.txt"
if [ $DRY = 0 ]; then
  timeout 170 $PY -m pytest -q -n 8 -m gpu tests -p no:cacheprovider > "$OUT/pytest_gpu.txt" 2>&1
  echo "pytest -m gpu: exit $? after $(( $(date +%s) - start )) s" >> "$OUT/pytest_gpu.txt"
  # where a fit's time goes: the device step's builds compared, a blocking-launch profile (bench/gpu_profile.py)
  timeout 100 $PY bench/gpu_profile.py --repeats 1 2>&1 | grep -v "NumbaPerformanceWarning\|warn(errors" \
    > "$OUT/profile.txt"
  echo "gpu_profile: exit ${PIPESTATUS[0]} after $(( $(date +%s) - start )) s" >> "$OUT/profile.txt"
fi
ls -l "$OUT"

#!/usr/bin/env bash
# The `gpu`-marked tests (tests/test_gpu.py) on the device machine, from the repository root
# (helion and litellm from .whl/: bench/device_site.sh).
# Usage: bash bench/run_gpu_tests.sh [pytest args...]   (writes $OUT/gpu_tests.log, .xml and .json)
set -u
OUT=${OUT:-/tmp/out}; SITE=${BENCH_GPU_SITE:-/tmp/site}; mkdir -p "$OUT"
. bench/device_site.sh
install_site "$SITE" || exit 1
export PYTHONPATH=$SITE PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name --format=csv,noheader
  python3 -c "import torch, triton, importlib.metadata as m; print('torch', torch.__version__, 'triton', triton.__version__, 'helion', m.version('helion'), 'litellm', m.version('litellm'))"
} | tee "$OUT/gpu_tests_env.txt"
python3 -m pytest -m gpu tests/test_gpu.py -v -p no:cacheprovider --junitxml="$OUT/gpu_tests.xml" "$@" > "$OUT/gpu_tests.log" 2>&1
rc=$?
tail -15 "$OUT/gpu_tests.log"
C=$(git rev-parse --short HEAD 2>/dev/null); python3 bench/gpu_tests_json.py --xml "$OUT/gpu_tests.xml" --env "$OUT/gpu_tests_env.txt" --log "$OUT/gpu_tests.log" \
  ${C:+--commit "$C"} --hash tests/test_gpu.py tests/conftest.py --what "python -m pytest -m gpu tests/test_gpu.py $*" --out "$OUT/gpu_tests.json"
echo "gpu tests rc=$rc"
exit $rc

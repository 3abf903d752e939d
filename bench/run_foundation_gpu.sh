#!/usr/bin/env bash
# Foundation GPU proof on the H200 (run through the device tool from the repo root).
# Carries helion 1.5.0 + filecheck as wheels in .whl/; everything else is on the image.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -c "import torch, importlib.metadata as m; print(torch.__version__, m.version('helion'), torch.cuda.get_device_name())" | tee "$OUT/env.txt"
: "${KILN_INCLUDE:=model_kernels.softmax:softmax,model_kernels.rms_norm:rms_norm}"
: "${KILN_SECONDS:=40}"
export KILN_INCLUDE KILN_SECONDS
start=$(date +%s)
timeout 480 python3 -m pip wheel . --no-deps --no-build-isolation -v -w "$OUT/dist" > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - start ))s" | tee -a "$OUT/env.txt"
cp kiln.lock "$OUT/kiln.lock" 2>/dev/null
grep -E "^ *kiln:" "$OUT/build.log" | tail -20
unset KILN_INCLUDE KILN_SECONDS
python3 -m pip install -q --no-deps --target /tmp/target "$OUT"/dist/*.whl || exit 1
timeout 120 python3 bench/foundation_gpu.py --target /tmp/target --lock kiln.lock --pyproject pyproject.toml \
  --out "$OUT/foundation_gpu.json" > "$OUT/verify.log" 2>&1
echo "verify rc=$?"; tail -8 "$OUT/verify.log"

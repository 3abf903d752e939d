#!/usr/bin/env bash
# CPU side of "one wheel, several GPU types": merge the committed H200 and Pallas-interpret locks of
# the tinypkg fixture and bake one wheel from them into .kiln-gpu/ (ignored; carried to the GPU with
# `carry: [".kiln-gpu", ".whl"]`), where `bash bench/run_x2_gpu.sh collect` runs
# `bench/multi_gpu_type_gpu.py verify` on it. No tuning happens here (device = none).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.kiln-gpu; rm -rf "$out"; mkdir -p "$out"
work=$(mktemp -d); cp -r "$root/tests/fixtures/tinypkg" "$work/"
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
python -m tuning.cli merge "$root/tests/fixtures/tinypkg_h200.lock.json" "$root/tests/fixtures/tinypkg_pallas.lock.json" \
  -o "$out/merged.lock.json"
(cd "$work/tinypkg" && KILN_DEVICE=none python -m pip wheel . --no-deps --no-build-isolation -q \
  -C kiln.lock="$out/merged.lock.json" -w "$out")
sha256sum "$out"/*.whl

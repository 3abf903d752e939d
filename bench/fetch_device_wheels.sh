#!/usr/bin/env bash
# Fills .whl/ for the GPU machines, which have no network (bench/device_site.sh installs it there).
# --no-deps with pinned lists, not a resolve: a resolve also takes what the image already holds and
# makes .whl/ too large to carry. Run on a connected machine from anywhere in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=(--only-binary=:all: --no-deps --python-version 3.12
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64)
mkdir -p .whl/llm
python3 -m pip download -q "${wheels[@]}" -d .whl -r requirements/device.txt
python3 -m pip download -q "${wheels[@]}" -d .whl/llm -r requirements/device-llm.txt
du -sh .whl

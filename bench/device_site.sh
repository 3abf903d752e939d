# Sourced by the device scripts (bench/run_x2_gpu.sh, bench/run_gpu_tests.sh), run from the repository root.
# The device image has torch, triton, pytest and the rest; helion 1.5.0, filecheck and litellm come as the
# wheels carried in .whl/ (carry [".whl"]), installed once per machine into one --target folder.
install_site() {  # install_site DIR: no-op where DIR already holds helion
  [ -d "$1/helion" ] || python3 -m pip install -q --no-index --no-deps --no-compile --target "$1" .whl/*.whl .whl/llm/*.whl
}

#!/usr/bin/env bash
# Every GPU check of the core-pass and rotary issues in one run, for a session
# that has the device machine (torch 2.11 + triton 3.6 there, no package index):
#
#   run(command="bash perf/gpu_check.sh", timeout_s=560)
#
# Writes under $OUT (the device tool's folder) or perf/results/gpu_check:
# env.txt, kernel_tests.txt, demo.txt, bench_log.txt and the benchmark's
# rotary_<gpu>_<date>.{json,md,png}. Commit them under perf/results/.
set -u
OUT=${OUT:-perf/results/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
{
  nvidia-smi -L
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
  git rev-parse HEAD 2>/dev/null || echo "git SHA: see the committing session"
} >"$OUT/env.txt" 2>&1
# Kernel numerics, the compiled (Inductor-launched) kernel and the Triton code of
# the rewritten pair math (kernels and buffers counted, values checked) on CUDA.
# CUDA graphs (mode="reduce-overhead") with the pass: tests/test_compile_modes.py.
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_rotary_kernel.py tests/test_compile_modes.py \
  tests/test_generated_triton_code.py >"$OUT/kernel_tests.txt" 2>&1
tail -3 "$OUT/kernel_tests.txt"
# The demo on CUDA: the pass against eager, bf16 activations.
timeout 120 python3 -m inductor_complex demo >"$OUT/demo.txt" 2>&1
cat "$OUT/demo.txt"
# Rotary providers at training, long-context and decode shapes.
timeout 260 python3 perf/bench_rotary.py --out "$OUT" >"$OUT/bench_log.txt" 2>&1
tail -40 "$OUT/bench_log.txt"

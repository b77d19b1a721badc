#!/usr/bin/env bash
# The benchmarks of `python -m perf` on a GPU, in one device call (torch 2.11 +
# triton 3.6 there, no package index):
#
#   run(command="bash perf/gpu_bench.sh", timeout_s=580)
#
# Three groups, each under its own timeout so a slow one cannot take the rest:
# the rope alone at Llama-3-8B shapes (bf16), the Llama decoder (training step,
# prefill, static-cache decode), and the other models at quick sizes. Each group
# writes perf_cuda_<size>.{json,md,png} under $OUT/<group>; commit them under
# perf/results/ with the GPU name, versions and git SHA they carry.
set -u
OUT=${OUT:-perf/results/gpu_bench}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
nvidia-smi -L >"$OUT/env.txt" 2>&1
timeout 170 python3 -m perf --device cuda --only rope_train,rope_long_context,rope_decode \
    --no-compile-cost --out "$OUT/rope" >"$OUT/rope.log" 2>&1
tail -25 "$OUT/rope.log"
timeout 230 python3 -m perf --device cuda --only llama_1b_train,llama_1b_prefill,llama_1b_decode,llama_8b_decode \
    --providers eager,stock,pass,pass_fused,limit --no-compile-cost --out "$OUT/llama" >"$OUT/llama.log" 2>&1
tail -25 "$OUT/llama.log"
timeout 150 python3 -m perf --device cuda --quick --only wan_block_train,fno_train,s4d_train,lru_train,complex_matmul_train,complex_product_inference \
    --providers eager,stock,pass,limit --no-compile-cost --out "$OUT/models" >"$OUT/models.log" 2>&1
tail -25 "$OUT/models.log"

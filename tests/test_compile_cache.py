"""Inductor's FX graph cache and AOTAutograd's cache with the pass installed.

Each compile runs in a fresh process sharing one cache directory, as a second
run of a user's program would: a hit must give eager's numbers without running
the pass; other options, or an edited package source, must miss.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import torch
from packaging.version import Version as torch_version

import inductor_complex

CHILD = pathlib.Path(__file__).with_name("compile_cache_child.py")
PACKAGE = pathlib.Path(inductor_complex.__file__).parent


def compile_in_new_process(cache_dir, options=None, package_parent=None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR_", "TORCH_COMPILE"))}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
    if package_parent is not None:
        env["PYTHONPATH"] = str(package_parent)  # ahead of the installed package
    done = subprocess.run(
        [sys.executable, str(CHILD), json.dumps(options or {})],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["max_output_error"] < 1e-5 and result["max_grad_error"] < 1e-5, result
    return result


def assert_missed(result):
    assert result["graphs_rewritten"] == 3, result  # Dynamo's graph, then AOTAutograd's forward and backward
    assert result["fx_graph_cache_hits"] == 0 and result["autograd_cache_hits"] == 0, result
    assert result["fx_graph_cache_misses"] == 2 and result["autograd_cache_misses"] == 1, result


# Before torch 2.13 Inductor runs pre-grad passes ahead of the AOTAutograd
# cache lookup, so a hit still rewrites Dynamo's graph (not the two AOT graphs).
PRE_GRAD_RUNS_ON_A_HIT = 0 if torch_version(torch.__version__).release >= (2, 13) else 1


def assert_hit(result):
    assert result["graphs_rewritten"] == PRE_GRAD_RUNS_ON_A_HIT, result
    assert result["autograd_cache_hits"] == 1 and result["autograd_cache_misses"] == 0, result
    assert result["fx_graph_cache_misses"] == 0, result


def test_a_second_process_hits_the_caches_and_does_not_run_the_pass(tmp_path):
    assert_missed(compile_in_new_process(tmp_path))
    assert_hit(compile_in_new_process(tmp_path))


def test_other_options_miss_then_hit_their_own_entry(tmp_path):
    assert_missed(compile_in_new_process(tmp_path, {}))
    assert_missed(compile_in_new_process(tmp_path, {"fused_rotary": False}))
    assert_hit(compile_in_new_process(tmp_path, {"fused_rotary": False}))


def test_an_edited_package_source_misses(tmp_path):
    cache_dir, copy_parent = tmp_path / "cache", tmp_path / "copy"
    shutil.copytree(PACKAGE, copy_parent / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    first = compile_in_new_process(cache_dir, package_parent=copy_parent)
    assert first["package"].startswith(str(copy_parent)), first  # the copy, not the installed package, ran
    assert_missed(first)
    rule = copy_parent / PACKAGE.name / "rules" / "arith.py"
    rule.write_text(rule.read_text() + "\n# an edit that changes no behaviour, only the source\n")
    assert_missed(compile_in_new_process(cache_dir, package_parent=copy_parent))

"""Differential fuzzing: random complex programs compiled with the pass, against eager.

See ``fuzz_programs.py`` for what the programs hold and what is compared.

Profiles:
* default (CI): a bounded, reproducible run, mostly through AOTAutograd with
  eager kernels (the pass's semantics, quick to compile), some with the rewrite
  after autograd too, a few through Inductor.
* ``INDUCTOR_COMPLEX_FUZZ=long``: fresh random programs, many of them
  (``INDUCTOR_COMPLEX_FUZZ_EXAMPLES``, default 3000 and 300), for a run of
  half an hour or more before an issue about exactness is closed.
"""

from __future__ import annotations

import os

from fuzz_programs import check_program, programs
from hypothesis import HealthCheck, given, note, settings

LONG = os.environ.get("INDUCTOR_COMPLEX_FUZZ") == "long"


def _profile(ci_examples: int, long_examples: int):
    examples = int(os.environ.get("INDUCTOR_COMPLEX_FUZZ_EXAMPLES", 0)) or long_examples
    return settings(
        max_examples=examples if LONG else ci_examples,
        derandomize=not LONG,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


@_profile(ci_examples=150, long_examples=3000)
@given(programs())
def test_random_programs_match_eager_through_aot_autograd(program):
    note(str(program))
    check_program(program, "aot_eager")


@_profile(ci_examples=15, long_examples=300)
@given(programs(max_statements=5))
def test_random_programs_match_eager_through_inductor(program):
    note(str(program))
    check_program(program, "inductor")


@_profile(ci_examples=40, long_examples=1000)
@given(programs())
def test_random_programs_match_eager_with_the_rewrite_after_autograd(program):
    # The post-grad door on AOTAutograd's forward and backward graphs, with
    # Inductor's decompositions and eager kernels (quick to compile).
    note(str(program))
    check_program(program, "aot_eager_post_grad")

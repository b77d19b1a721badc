import os

import pytest
import torch
from hypothesis import settings

# Property tests are reproducible in CI (the same examples every run); set
# INDUCTOR_COMPLEX_HYPOTHESIS=explore to draw fresh random examples.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("INDUCTOR_COMPLEX_HYPOTHESIS", "ci"))

# Every test must see the pass run: a cache hit would skip pre-grad passes.
torch._inductor.config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False
torch._dynamo.config.cache_size_limit = 64


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()

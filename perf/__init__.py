"""Benchmarks of inductor_complex: ``python -m perf`` (see ``perf/__main__.py``)."""

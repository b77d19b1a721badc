"""Hand-written kernels that the complex-to-real pass can emit.

Submodules may require Triton; import them explicitly (``inductor_complex.kernels.rotary``)
so that importing this package stays free of optional dependencies.
"""

"""inductor_complex: complex tensors compiled by Inductor as real arithmetic.

    import torch, inductor_complex
    inductor_complex.enable()        # before and after autograd
    torch.compile(model)(x)          # or: with inductor_complex.enabled(): ...
"""

from .complex_to_real_pass import ComplexToRealPass, PostGradComplexToRealPass
from .explain import explain
from .exported import REAL_SIGNATURE_KEY, real_signature, rewrite_exported_program
from .install import disable, enable, enabled
from .rotary_api import apply_rotary_emb

__all__ = ["ComplexToRealPass", "PostGradComplexToRealPass", "enable", "disable", "enabled", "explain", "apply_rotary_emb",
           "rewrite_exported_program", "real_signature", "REAL_SIGNATURE_KEY"]

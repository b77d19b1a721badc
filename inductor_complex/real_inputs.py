"""Clear errors for wrong inputs to a program whose complex inputs became real.

``rewrite_exported_program(ep, signature="real")`` takes each complex user
input as its real pairs (``torch.view_as_real(z)``: float, ``[..., 2]``). Given
the complex tensor itself, the program's ``module()`` failed inside torch's
generated shape guards with ``IndexError: tuple index out of range``. The
program's ``module()`` checks those inputs first and names the one that is off.
(A program saved and loaded is a plain ``ExportedProgram`` again: its module
runs torch's own checks alone.)
"""

from __future__ import annotations

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind


class RealSignatureProgram(ExportedProgram):
    """An :class:`ExportedProgram` whose ``module()`` checks the inputs made real."""

    real_inputs: dict[int, tuple[str, torch.Tensor]]  # user position → (name, the real form's fake value)

    def module(self, *args, **kwargs) -> torch.fx.GraphModule:
        module = super().module(*args, **kwargs)
        module.register_forward_pre_hook(_checker(self.real_inputs), prepend=True)
        return module


def with_input_checks(program: ExportedProgram, real_positions: list[int]) -> ExportedProgram:
    """``program`` (whose user inputs at ``real_positions`` are real pairs) with checked inputs."""
    if not real_positions:
        return program
    user_inputs = [spec for spec in program.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT]
    placeholders = {n.name: n for n in program.graph.find_nodes(op="placeholder")}
    program.__class__ = RealSignatureProgram
    program.real_inputs = {i: (user_inputs[i].arg.name, placeholders[user_inputs[i].arg.name].meta["val"])
                           for i in real_positions}
    return program


def _checker(real_inputs: dict[int, tuple[str, torch.Tensor]]):
    def check(module, args):
        for position, (name, form) in real_inputs.items():
            if position >= len(args) or not isinstance(args[position], torch.Tensor):
                continue  # (torch's own checks name a missing or non-tensor input)
            given = args[position]
            pairs = f"a real {form.dtype} tensor of rank {form.ndim} ending in 2, torch.view_as_real(z)"
            if given.is_complex():
                raise TypeError(f"input {position} ({name!r}) is a {given.dtype} tensor of shape {tuple(given.shape)}: "
                                f"this program takes complex inputs as their real pairs, {pairs} "
                                "(rewrite_exported_program(signature='real'); real_signature() lists them)")
            if given.dtype != form.dtype or given.ndim != form.ndim or given.shape[-1] != 2:
                raise TypeError(f"input {position} ({name!r}) is a {given.dtype} tensor of shape {tuple(given.shape)}; "
                                f"this program takes {pairs}")
    return check

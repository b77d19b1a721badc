"""What the pass decided, for logs, counters and ``explain``.

Every decision names the op and the user's source line, so "why was this
bridged?" is answered by ``TORCH_LOGS="+inductor_complex"`` without reading
the pass.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os

import torch
import torch.fx
from torch._dynamo.utils import counters

log = logging.getLogger("inductor_complex")

COUNTER = "inductor_complex"


_TORCH_DIR = os.path.dirname(torch.__file__)


def source_line(node: torch.fx.Node) -> str:
    """``file.py:27 in forward: xq_out = ...``: the innermost user frame of the node's stack trace.

    Frames inside torch itself (``F.pad`` calling ``torch._C._nn.pad``) are skipped
    so the line is the one the user wrote.
    """
    trace = node.meta.get("stack_trace") or ""
    lines = [line.strip() for line in trace.strip().splitlines()]
    frames = []
    for i, line in enumerate(lines):
        if line.startswith("File "):
            where = line[len("File "):].replace('", line ', ":").replace('"', "")
            code = lines[i + 1] if i + 1 < len(lines) and not lines[i + 1].startswith("File ") else ""
            frames.append((where, code))
    users = [frame for frame in frames if not frame[0].startswith(_TORCH_DIR)] or frames
    if not users:
        return "<no source line>"
    where, code = users[-1]
    return f"{where}: {code}" if code else where


@dataclasses.dataclass(frozen=True)
class Decision:
    node: str
    op: str
    action: str  # rewritten | bridged | kept | fused | fused_refused | entry_view | exit_view
    reason: str = ""
    source: str = ""


@dataclasses.dataclass
class Report:
    decisions: list[Decision] = dataclasses.field(default_factory=list)

    def add(self, node: torch.fx.Node, op: str, action: str, reason: str = "") -> None:
        decision = Decision(node.name, op, action, reason, source_line(node))
        self.decisions.append(decision)
        counters[COUNTER][action] += 1
        if action in ("bridged", "kept", "fused_refused"):
            log.info("%s %s (%s): %s [at %s]", action, op, node.name, reason, decision.source)
        else:
            log.debug("%s %s (%s) %s", action, op, node.name, reason)

    def count(self, action: str) -> int:
        return sum(1 for d in self.decisions if d.action == action)

    def summary(self) -> dict[str, int]:
        return dict(collections.Counter(d.action for d in self.decisions))

    def format(self) -> str:
        rows = [f"{d.action:<14} {d.op:<34} {d.node:<20} {d.reason} {d.source}" for d in self.decisions]
        return "\n".join(rows) if rows else "(no complex values)"

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
    emitted: int = 0  # nodes a rewrite put in the graph for this op


# One op whose rewrite puts this many nodes in a graph makes Inductor's compile
# of it slow: the inverse-trigonometric rules follow glibc's branchy kernels,
# 130-400 pointwise nodes each, whose compile with backward takes 2-4 s on
# one CPU thread (33-79 s before rules/eager_derivative.py; a product is ~10
# nodes). The report names such ops.
SLOW_COMPILE_NODES = 150


@dataclasses.dataclass
class Report:
    """Decisions about one graph. They reach the log and the counters only when
    committed, once the pass is done with the graph: a walk that is undone
    withdraws its decisions first, so diagnostics show what the graph now holds."""

    decisions: list[Decision] = dataclasses.field(default_factory=list)
    committed: int = 0  # decisions already logged and counted

    def add(self, node: torch.fx.Node, op: str, action: str, reason: str = "", *, emitted: int = 0) -> None:
        self.decisions.append(Decision(node.name, op, action, reason, source_line(node), emitted))

    def withdraw_since(self, mark: int) -> None:
        """Drop the decisions made after ``len(decisions)`` was ``mark``."""
        del self.decisions[max(mark, self.committed):]

    def commit(self) -> None:
        for decision in self.decisions[self.committed:]:
            counters[COUNTER][decision.action] += 1
            if decision.action in ("bridged", "kept", "fused_refused", "pass_failed"):
                log.info("%s %s (%s): %s [at %s]", decision.action, decision.op, decision.node, decision.reason, decision.source)
            else:
                log.debug("%s %s (%s) %s", decision.action, decision.op, decision.node, decision.reason)
        self.committed = len(self.decisions)

    def count(self, action: str) -> int:
        return sum(1 for d in self.decisions if d.action == action)

    def summary(self) -> dict[str, int]:
        return dict(collections.Counter(d.action for d in self.decisions))

    def slow_compile_note(self) -> str | None:
        """Why Inductor may take long over this graph, or None: the ops whose
        rewrite put :data:`SLOW_COMPILE_NODES` nodes or more in it each."""
        large: dict[str, list[int]] = collections.defaultdict(list)
        for d in self.decisions:
            if d.emitted >= SLOW_COMPILE_NODES:
                large[d.op].append(d.emitted)
        if not large:
            return None
        named = ", ".join(f"{op} ({len(n)}x, {max(n)} nodes each)" if len(n) > 1 else f"{op} ({n[0]} nodes)"
                          for op, n in sorted(large.items(), key=lambda item: -sum(item[1])))
        return (f"slow to compile: {named}; Inductor compiles every node of these rewrites "
                "(eager's branchy C kernels, written out as tensor ops)")

    def format(self) -> str:
        rows = [f"{d.action:<14} {d.op:<34} {d.node:<20} {d.reason} {d.source}" for d in self.decisions]
        note = self.slow_compile_note()
        if note:
            rows.append(note)
        return "\n".join(rows) if rows else "(no complex values)"

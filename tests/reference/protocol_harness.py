"""Drive one task's protocol state machine by hand: a ``TaskContext`` that records what the
handlers ask of it, so a test can replay an exact order of barriers, markers and notices
(including orders a simulation reaches only rarely) and assert on the calls."""

from __future__ import annotations

from types import SimpleNamespace


class Channel:
    """An input channel as a handler sees it (``id``, ``back_edge``, ``blocked``); hashed
    by identity, as the simulator's channels are."""

    def __init__(self, name: str, back_edge: bool = False) -> None:
        self.id = name
        self.back_edge = back_edge
        self.blocked = False

    def __repr__(self) -> str:
        return f"Channel({self.id})"


def marker(round: int) -> SimpleNamespace:
    """A barrier or cancellation marker of ``round``."""
    return SimpleNamespace(round=round, started=0, unaligned=False)


class Context:
    """A task with the given inputs (not a source) and one output; every service call is
    recorded in ``calls`` as ``(name, round or channel id)``."""

    def __init__(self, inputs: list) -> None:
        self.id = "task"
        self.inputs = inputs
        self.outputs = [Channel("task->out")]
        self.is_source = False
        self.now = 0
        self.calls: list[tuple] = []
        self.ckpts = 0

    def checkpoint(self, round: int) -> int:
        self.ckpts += 1
        self.calls.append(("checkpoint", round))
        return self.ckpts

    def send_barrier(self, round: int, priority: bool = False, unaligned: bool = False) -> dict:
        self.calls.append(("barrier", round))
        return {}

    def send_cancel(self, round: int) -> None:
        self.calls.append(("cancel", round))

    def complete(self, round: int) -> None:
        self.calls.append(("complete", round))

    def record(self, ckpt: int, ch, msgs: list, part: str = "input") -> None:
        self.calls.append(("record", ch.id))

    def block(self, ch) -> None:
        ch.blocked = True

    def unblock_all(self) -> None:
        for ch in self.inputs:
            ch.blocked = False

    def situation(self, name: str) -> None:
        pass

    def done(self, kind: str) -> list:
        """The rounds of every recorded call of ``kind`` (``checkpoint``, ``barrier``, …)."""
        return [arg for name, arg in self.calls if name == kind]

    def blocked(self) -> list[str]:
        return [c.id for c in self.inputs if c.blocked]

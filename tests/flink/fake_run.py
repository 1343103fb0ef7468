"""Synthetic Flink run directories (run.json + per-subtask files) for the merge tests.

``FakeRun`` writes exactly what ``snapcheck.flink.Main`` and the traced wrappers write,
with one global event counter ``g`` in call order, so a test scripts a Flink history
event by event.
"""

from __future__ import annotations

from pathlib import Path

import orjson

KEYED = [
    {
        "op": "src",
        "parallelism": 1,
        "role": "source",
        "inputs": ["@input"],
        "out": {"to": "sink", "mode": "keyed", "parallelism": 2, "max_parallelism": 128},
    },
    {"op": "sink", "parallelism": 2, "role": "sink", "inputs": ["src"], "out": None},
]


def rebalanced(p_src: int = 1, p_dst: int = 2) -> list[dict]:
    return [
        {
            "op": "src",
            "parallelism": p_src,
            "role": "source",
            "inputs": ["@input"],
            "out": {"to": "sink", "mode": "rebalance", "parallelism": p_dst, "max_parallelism": 128},
        },
        {"op": "sink", "parallelism": p_dst, "role": "sink", "inputs": ["src"], "out": None},
    ]


class FakeRun:
    def __init__(self, topology=None, mode: str = "aligned", status: str = "completed"):
        self.topology = topology or KEYED
        self.mode = mode
        self.status = status
        self.g = 0
        self.files: dict[tuple[str, int, int], list[dict]] = {}

    def _file(self, op: str, sub: int, att: int) -> list[dict]:
        key = (op, sub, att)
        if key not in self.files:
            o = next(x for x in self.topology if x["op"] == op)
            self.files[key] = [
                {
                    "op": op,
                    "subtask": sub,
                    "parallelism": o["parallelism"],
                    "attempt": att,
                    "role": o["role"],
                    "inputs": o["inputs"],
                    "out": o["out"],
                }
            ]
        return self.files[key]

    def ev(self, op: str, sub: int, attempt: int, e: str, /, **fields) -> int:
        self.g += 1
        self._file(op, sub, attempt).append({"g": self.g, "t": self.g * 100, "e": e, **fields})
        return self.g

    # shorthands --------------------------------------------------------------------------
    def read(self, sub: int, offset: int, att: int = 0, op: str = "src") -> None:
        self.ev(op, sub, att, "recv", **{"from": "@input", "src": sub, "att": -1, "n": offset})

    def send(self, op: str, sub: int, att: int, n: int, to: int | None = None) -> None:
        fields = {"n": n}
        if to is not None:
            fields["to"] = to
        self.ev(op, sub, att, "send", **fields)

    def recv(self, op: str, sub: int, att: int, frm: str, src: int, src_att: int, n: int) -> None:
        self.ev(op, sub, att, "recv", **{"from": frm, "src": src, "att": src_att, "n": n})

    def ckpt(self, cid: int, att: int = 0, procs=None) -> None:
        for op, sub in procs or self.procs():
            self.ev(op, sub, att, "ckpt", id=cid)

    def notify(self, cid: int, att: int = 0, procs=None) -> None:
        for op, sub in procs or self.procs():
            self.ev(op, sub, att, "notify", id=cid)

    def restore(self, cid: int, att: int, procs=None) -> None:
        for op, sub in procs or self.procs():
            self.ev(op, sub, att, "restore", id=cid, state=cid)

    def procs(self) -> list[tuple[str, int]]:
        return [(o["op"], i) for o in self.topology for i in range(o["parallelism"])]

    def write(self, directory: Path, fired=None, faults=None) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        run = {
            "job": "fake",
            "mode": self.mode,
            "parallelism": 2,
            "records": 10,
            "rate": 0,
            "interval_ms": 100,
            "seed": 1,
            "faults": faults or [],
            "fired": fired or {},
            "status": self.status,
            "error": None,
            "ended_us": self.g * 100,
            "flink_version": "2.3.0",
            "config": {},
            "topology": self.topology,
        }
        (directory / "run.json").write_bytes(orjson.dumps(run))
        for (op, sub, att), rows in self.files.items():
            (directory / f"{op}-{sub}-{att}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        return directory

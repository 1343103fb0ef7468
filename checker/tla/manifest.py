"""The model-checking manifest ``specs/manifest.json``: every TLC configuration
of the kit with the result it must produce.

Each entry names a root module and a ``.cfg`` and records the expected
``result`` (``pass``, ``invariant:NAME``, ``action-property:NAME``, ``deadlock``
or ``liveness`` -- see ``checker.tla.tlc.TlcResult``), the number of distinct
states and the depth TLC reports. A run *matches* its entry only if all three
are equal: a changed state count means the specification or its bounds changed,
which CI must notice. ``kind`` says what the configuration is for: ``check``
(the protocol's safety properties and refinement), ``liveness`` (termination
under fairness), ``mutant`` (a buggy variant that must fail on the named
property) or ``trap`` (an invariant that must be violated, proving that an
interesting state is reachable). ``heavy`` entries run only on request.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from snapcheck.checker.tla import packaged
from snapcheck.checker.tla.tlc import TlcJob, TlcResult, run_many
from snapcheck.traces.errors import UsageError

KINDS = ("check", "liveness", "mutant", "trap")
MANIFEST_NAME = "manifest.json"


def specs_dir() -> Path:
    """The ``specs/`` directory of this checkout (``$SNAPCHECK_SPECS`` overrides it)."""
    env = os.environ.get("SNAPCHECK_SPECS")
    if env:
        return Path(env)
    import snapcheck

    package = Path(snapcheck.__file__).resolve().parent
    installed = packaged.on_disk(package / "specs")  # a wheel (or the kit's zip) carries them as package data
    return installed if installed.is_dir() else package.parent / "specs"  # a checkout


@dataclass
class Entry:
    name: str  # the configuration's name: its .cfg file without the extension
    spec: str  # the protocol module it checks (e.g. ChandyLamport)
    module: str  # the root module TLC loads (e.g. MCChandyLamport)
    kind: str
    expected: str
    distinct: int | None
    depth: int | None
    description: str
    heavy: bool = False
    check_deadlock: bool = True
    seconds: float | None = None  # last measured wall-clock time (documentation only)
    cpu_seconds: float | None = None  # last measured CPU time (documentation only)

    @property
    def config(self) -> str:
        return self.name + ".cfg"

    def to_dict(self) -> dict:
        d: dict[str, object] = {
            "name": self.name,
            "spec": self.spec,
            "module": self.module,
            "kind": self.kind,
            "expected": self.expected,
            "distinct": self.distinct,
            "depth": self.depth,
            "description": self.description,
        }
        if self.heavy:
            d["heavy"] = True
        if not self.check_deadlock:
            d["check_deadlock"] = False
        if self.seconds is not None:
            d["seconds"] = round(self.seconds, 1)
        if self.cpu_seconds is not None:
            d["cpu_seconds"] = round(self.cpu_seconds, 1)
        return d


@dataclass
class Manifest:
    path: Path
    entries: list[Entry] = field(default_factory=list)

    def select(self, name: str | None = None, heavy: bool = False) -> list[Entry]:
        """Entries whose spec or configuration name contains ``name`` (case-insensitive);
        heavy ones only with ``heavy``. An unknown name is a usage error."""
        chosen = [e for e in self.entries if heavy or not e.heavy]
        if name:
            key = name.lower()
            exact = [e for e in chosen if key in (e.spec.lower(), e.name.lower())]
            chosen = exact or [e for e in chosen if key in e.spec.lower() or key in e.name.lower()]
            if not chosen:
                known = sorted({e.spec for e in self.entries})
                hint = "" if heavy else " (heavy configurations need --heavy)"
                raise UsageError(f"no configuration matches {name!r}{hint}; specs: {', '.join(known)}")
        return chosen

    def save(self) -> None:
        data = {
            "version": 1,
            "about": "Expected TLC results of every configuration in specs/ "
            "(checked by `snapcheck specs check`; see docs/specs.md).",
            "configs": [e.to_dict() for e in self.entries],
        }
        self.path.write_text(json.dumps(data, indent=1) + "\n")


def load_manifest(path: Path | None = None) -> Manifest:
    """Read and check ``specs/manifest.json``; every problem is a ``UsageError`` naming the entry."""
    path = path or specs_dir() / MANIFEST_NAME
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the manifest: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    man = Manifest(path)
    seen: set[str] = set()
    for i, d in enumerate(data.get("configs", [])):
        where = f"{path}: configs[{i}]"
        try:
            e = Entry(
                name=d["name"],
                spec=d["spec"],
                module=d["module"],
                kind=d["kind"],
                expected=d["expected"],
                distinct=d.get("distinct"),
                depth=d.get("depth"),
                description=d.get("description", ""),
                heavy=bool(d.get("heavy", False)),
                check_deadlock=bool(d.get("check_deadlock", True)),
                seconds=d.get("seconds"),
                cpu_seconds=d.get("cpu_seconds"),
            )
        except KeyError as exc:
            raise UsageError(f"{where}: missing field {exc.args[0]!r}") from None
        if e.kind not in KINDS:
            raise UsageError(f"{where}: kind {e.kind!r} is not one of {', '.join(KINDS)}")
        if e.name in seen:
            raise UsageError(f"{where}: configuration {e.name!r} listed twice")
        seen.add(e.name)
        for f in (e.config, e.module + ".tla"):
            if not (path.parent / f).is_file():
                raise UsageError(f"{where}: {f} does not exist in {path.parent}")
        man.entries.append(e)
    return man


@dataclass
class Outcome:
    entry: Entry
    result: TlcResult

    @property
    def matches(self) -> bool:
        r, e = self.result, self.entry
        return r.result == e.expected and r.distinct == e.distinct and r.depth == e.depth

    def differences(self) -> list[str]:
        r, e = self.result, self.entry
        out = []
        if r.result != e.expected:
            out.append(f"result {r.result} (expected {e.expected})")
        if r.distinct != e.distinct:
            out.append(f"distinct states {r.distinct} (expected {e.distinct})")
        if r.depth != e.depth:
            out.append(f"depth {r.depth} (expected {e.depth})")
        return out


def run_entries(
    entries: list[Entry], directory: Path, parallel: int = 1, timeout: float = 900.0, on_done=None
) -> list[Outcome]:
    """Run TLC on each entry (``parallel`` JVMs at a time, one worker each, so the
    state counts of violations are reproducible) and pair results with entries."""
    jobs = [
        TlcJob(
            directory=directory,
            module=e.module,
            config=e.config,
            timeout=timeout,
            deadlock=e.check_deadlock,
            workers=1,
            quick=not e.heavy,
        )
        for e in entries
    ]

    def done(i: int, res: TlcResult) -> None:
        if on_done is not None:
            on_done(Outcome(entries[i], res))

    results = run_many(jobs, parallel=parallel, on_done=done)
    return [Outcome(e, r) for e, r in zip(entries, results)]

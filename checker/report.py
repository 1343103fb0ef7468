"""The checker's result objects: ``Violation``, ``PropertyResult``, ``Report``.

``Report.to_json()`` produces the documented JSON schema (docs/checker.md,
"JSON report"); ``Report.render_text()`` the Elle-style human report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

JSON_SCHEMA_VERSION = 1

# Canonical violation kinds (checker API contract) and the property each belongs to.
KIND_PROPERTY = {
    "orphan": "consistency",
    "dropped": "channel-state",
    "phantom": "channel-state",
    "order": "channel-state",
    "duplicate-recorded": "channel-state",
    "wrong-channel": "channel-state",
    "aligned-in-flight": "channel-state",
    "incomplete-round": "termination",
    "useless-checkpoint": "z-cycles",
    "inconsistent-restore": "observed-recovery",
    "lost": "exactly-once",
    "duplicate-processing": "exactly-once",
    "rdt": "rdt",
    "missing-forced-checkpoint": "cic-conformance",
    "piggyback-mismatch": "cic-conformance",
    "vars-mismatch": "cic-conformance",
    "spurious-forced-checkpoint": "cic-efficiency",
    "timestamp-order": "timestamps",
    "premature-truncation": "log-retention",
    "premature-commit": "output-commit",
    "duplicate-commit": "output-commit",
    "uncommitted": "output-commit",
    "eos-before-commit": "output-commit",
    "control-dropped": "control-delivery",
    "restore-aborted": "recovery-lineage",
    "restore-stale": "recovery-lineage",
    "restore-mixed": "recovery-lineage",
    "changelog-gap": "changelog-restore",
    "changelog-overlap": "changelog-restore",
    "changelog-mismatch": "changelog-restore",
    "artifact-unknown": "changelog-restore",
    "artifact-deleted-referenced": "artifact-retention",
    "restore-missing-artifact": "artifact-retention",
    "replica-order-divergence": "replica-agreement",
    "replica-output-divergence": "replica-agreement",
    "dedup-lost": "replica-delivery",
    "dedup-duplicate": "replica-delivery",
    "replica-stalled": "replica-liveness",
    "restore-unnamed": "regional-restore",
    "restored-state": "regional-restore",
    "fallback-unresolved": "regional-cut",
    "stale-fallback": "regional-cut",
    "dependent-regions": "regional-cut",
    "fallback-commit": "regional-commit",
    "split-dropped": "split-assignment",
    "split-doubled": "split-assignment",
    "split-duplicate": "split-assignment",
    "split-lost": "split-assignment",
    "agreement-broken": "agreement",
    "unbounded-drift": "regional-drift",
}


@dataclass
class Violation:
    kind: str
    property: str
    subject: str
    message: str
    lines: list[int] = field(default_factory=list)
    witness: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lines = sorted({ln for ln in self.lines if ln})

    def to_json(self) -> dict:
        return {"kind": self.kind, "property": self.property, "subject": self.subject,
                "message": self.message, "lines": list(self.lines), "witness": self.witness}


@dataclass
class PropertyResult:
    """One property checked on one subject (a round, a cut, a recovery, the trace)."""

    property: str
    subject: str
    ok: bool
    violations: list[Violation] = field(default_factory=list)
    omitted: int = 0          # further violations of this result not listed (cap per result)

    def to_json(self) -> dict:
        return {"property": self.property, "subject": self.subject, "ok": self.ok,
                "violations": [v.to_json() for v in self.violations], "omitted": self.omitted}


@dataclass
class Report:
    trace: str = "<memory>"
    protocol: str = "unknown"
    results: list[PropertyResult] = field(default_factory=list)
    useless: list[tuple[str, int]] = field(default_factory=list)
    stably_unusable: list[tuple[str, int]] = field(default_factory=list)
    recovery_lines: dict[str, dict] = field(default_factory=dict)
    recovery: dict[str, dict] = field(default_factory=dict)     # label -> details (chain, distance, ...)
    certificates: dict[str, dict] = field(default_factory=dict)  # label -> z3 results
    rounds: dict[str, dict] = field(default_factory=dict)       # round -> status
    observed: list[dict] = field(default_factory=list)          # observed recoveries
    notes: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    @property
    def may_become_useless(self) -> list[tuple[str, int]]:
        """Checkpoints not (yet) useless that a continuation of the trace can make useless:
        exactly the stably unusable ones that are not useless (some V_j reaches them)."""
        useless = set(self.useless)
        return [c for c in self.stably_unusable if c not in useless]

    @property
    def violations(self) -> list[Violation]:
        return [v for r in self.results for v in r.violations]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def add(self, prop: str, subject: str, violations: list[Violation], cap: int | None = None,
            omitted: int = 0) -> PropertyResult:
        """Record one property result; violations beyond ``cap`` (and ``omitted`` ones
        found but not given a witness) are counted, not listed."""
        if cap is not None and len(violations) > cap:
            omitted += len(violations) - cap
            violations = violations[:cap]
        r = PropertyResult(prop, subject, not violations and not omitted, violations, omitted)
        self.results.append(r)
        return r

    def to_json(self) -> dict:
        return {
            "schema": "snapcheck-check-report",
            "version": JSON_SCHEMA_VERSION,
            "trace": self.trace,
            "protocol": self.protocol,
            "ok": self.ok,
            "violation_kinds": sorted(self.kinds),
            "violations": [v.to_json() for v in self.violations],
            "results": [r.to_json() for r in self.results],
            "useless": [f"{p}:{c}" for p, c in self.useless],
            "stably_unusable": [f"{p}:{c}" for p, c in self.stably_unusable],
            "may_become_useless": [f"{p}:{c}" for p, c in self.may_become_useless],
            "recovery_lines": self.recovery_lines,
            "recovery": self.recovery,
            "certificates": self.certificates,
            "rounds": self.rounds,
            "observed_recoveries": self.observed,
            "notes": list(self.notes),
            "stats": self.stats,
        }

    def render_text(self, verbose: bool = False) -> str:
        from snapcheck.checker.text import render_text

        return render_text(self, verbose)

"""The generated sections of the docs match the code they describe (``scripts/update_docs.py``)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_doc_sections_are_up_to_date():
    res = subprocess.run(
        [sys.executable, "scripts/update_docs.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_catalogue_table_lists_every_protocol_and_mutant():
    from snapcheck.reference.catalogue import MUTANTS, PROTOCOLS

    text = (ROOT / "docs" / "protocols.md").read_text()
    for name in list(PROTOCOLS) + list(MUTANTS):
        assert f"| `{name}` |" in text, name

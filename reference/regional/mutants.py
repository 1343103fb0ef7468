"""Mutants of ``regional-aligned`` (registered in the protocol catalogue)."""

from __future__ import annotations

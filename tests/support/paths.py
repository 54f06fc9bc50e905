"""Where things are: the repository root, tests/ and its shared fixtures."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
EXAMPLES = ROOT / "examples"
FIXTURES = TESTS / "fixtures"

"""The web UI's tests share one Chromium (tests/support/ui.py)."""

from support.ui import browser, page  # noqa: F401 - fixtures


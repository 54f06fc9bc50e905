"""The web UI's tests share one Chromium a session (tests/support/ui.py)."""

from support.ui import browser, page  # noqa: F401 - fixtures


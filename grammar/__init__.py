"""IQL's grammar, shipped as package data (`grammar/*.lark`) so installed wheels can parse."""

from __future__ import annotations

from importlib import resources


def load(name: str = "iql") -> str:
    """The text of grammar `name` (without the `.lark` suffix), read from the installed package."""
    return resources.files(__name__).joinpath(f"{name}.lark").read_text(encoding="utf-8")

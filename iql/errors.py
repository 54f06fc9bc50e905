"""IQL errors: every one is a `store.errors.UserError` that points at the query text."""

from __future__ import annotations

from dataclasses import dataclass

from iql.ast import Span
from store.errors import UserError


@dataclass(eq=False)
class IqlError(UserError):
    """Base of IQL errors; `span` is (start, end) character offsets into `source`."""

    prefix = "iql"

    @classmethod
    def at(cls, message: str, span: Span | None, source: str | None, hint: str | None = None):
        """An error located at a node's span."""
        if span is None:
            return cls(message, hint=hint, source=source)
        return cls(
            message,
            hint=hint,
            line=span.line,
            column=span.column,
            span=(span.start, span.end),
            source=source,
        )


class IqlSyntaxError(IqlError):
    """The text is not IQL: where, and what was expected instead."""


class IqlSemanticError(IqlError):
    """The query is IQL but means nothing against this store (unknown name, wrong kind, types)."""


class IqlRuntimeError(IqlError):
    """The query failed while running (e.g. a scalar subquery returned several rows)."""

"""Errors of the capture layer; all are Strata errors a user can act on."""

from __future__ import annotations

from store.errors import StrataError, UserError


class UnsupportedOperation(UserError):
    """The pipeline used a DataFrame operation the capture cannot record faithfully."""

    @classmethod
    def named(cls, operation: str, reason: str = "") -> UnsupportedOperation:
        why = f": {reason}" if reason else ""
        err = cls(
            f"capture: DataFrame operation '{operation}' is not supported on a tracked DataFrame{why}",
            hint=(
                "see docs/capture.md for the supported operators; call .untracked() to get the "
                "plain DataFrame (its results are then not captured)"
            ),
        )
        err.operation, err.reason = operation, reason
        return err


    @classmethod
    def plan_operator(cls, operator: str, reason: str = "") -> UnsupportedOperation:
        """A logical operator of Spark's analyzed plan that zero-change capture cannot track
        (capture/auto): raised before the write runs, so nothing was written."""
        why = f": {reason}" if reason else ""
        return cls(
            f"capture: Spark logical operator '{operator}' cannot be captured{why}. Nothing was written",
            hint="see docs/capture.md for the operators capture tracks; run the script without capture to write "
                 "it untracked",
        )


class CaptureError(StrataError):
    """The capture layer met a Spark plan it did not expect (a bug or an unsupported Spark)."""

"""Shared helpers for the capture tests (no tests here): tiny nested inputs, provenance readers."""

from __future__ import annotations

from support.paths import FIXTURES

TWEETS = str(FIXTURES / "capture" / "tweets.json")

USERS_SCHEMA = "id string, followers int"
USERS = [("lp", 10), ("jm", 20), ("zz", 0)]


def ids_by(tdf, key: str) -> dict:
    """visible column value -> provenance id of each row of a tracked DataFrame (key unique)."""
    rows = tdf.with_item_ids("_pid").select(key, "_pid").collect()
    out = {r[0]: r[1] for r in rows}
    assert len(out) == len(rows), f"{key} is not unique"
    return out


def assoc(tracker, tdf, oid: int) -> set[tuple]:
    """Pebble's P of operator `oid` as a set of (out_id, input, in_id, pos)."""
    df = tracker.capture(tdf).associations()
    return {(r.out_id, r.input, r.in_id, r.pos) for r in df.filter(df.oid == oid).collect()}


def normalize(rows) -> list:
    """Rows as sorted plain values, nested lists sorted too (collect_list order is not defined)."""

    def norm(v):
        if hasattr(v, "asDict"):
            return tuple((k, norm(x)) for k, x in v.asDict().items())
        if isinstance(v, list):
            return tuple(sorted((norm(x) for x in v), key=repr))
        return v

    return sorted((norm(r) for r in rows), key=repr)

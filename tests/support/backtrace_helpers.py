"""Backtracing helpers only the tests use: matching on any DataFrame, fetching associations from
an association DataFrame, and tracing a tracked DataFrame before it is committed."""

from __future__ import annotations

import json
from collections.abc import Iterable

from capture.operators import OperatorProv
from capture.storing.stored import StoredRun
from capture.tracing import Backtrace
from capture.tracing.backtrace import AssocRow, Fetch, backtrace
from capture.tracing.spark.compile import match_docs
from capture.tracing.spark.match import backtrace_run

_ISIN_LIMIT = 200


def _id_in(col: str, ids: list[int]):
    """``col IN ids`` as one Column (a few ids). The ids go to the JVM as one collection
    (``isInCollection``): ``Column.isin(*ids)`` makes several py4j calls per id."""
    from pyspark.sql import functions as F

    jc = getattr(F.col(col), "_jc", None)
    if jc is None:  # Spark Connect: no JVM in this process
        return F.col(col).isin(ids)
    from pyspark.sql.classic.column import Column

    return Column(jc.isInCollection(ids))


def _id_frame(spark, ids: list[int]):
    """A one-column (``out_id``) DataFrame of many ids, built in the JVM from ONE JSON string
    literal (no py4j call per id, no Python worker)."""
    from pyspark.sql import functions as F

    ids_json = F.lit(json.dumps(ids))
    return spark.range(1).select(F.explode(F.from_json(ids_json, "array<bigint>")).alias("out_id"))


def spark_fetcher(assoc) -> Fetch:
    """A fetch over an association DataFrame (``oid, out_id, input, in_id, pos``; e.g. a committed
    run's ``StoredRun.associations()``, or ``Captured.associations()``): a semi-join on the traced ids
    (an ``IN`` set for up to 200 ids, a broadcast hash semi-join beyond), collecting only those rows."""
    from pyspark.sql import functions as F

    def fetch(oid: int, ids: list[int]) -> list[AssocRow]:
        df = assoc.filter(F.col("oid") == F.lit(oid))
        if len(ids) <= _ISIN_LIMIT:
            df = df.filter(_id_in("out_id", ids))
        else:
            df = df.join(F.broadcast(_id_frame(assoc.sparkSession, ids)), "out_id", "left_semi")
        return [(r.out_id, r.input, r.in_id, r.pos) for r in df.select("out_id", "input", "in_id", "pos").collect()]

    return fetch


def match_items(result, pattern, id_col: str, limit: int | None = None) -> dict[int, list[str]]:
    """Match a tree pattern against every row of ``result`` in Spark (over each row's JSON); only
    the matching rows' ids and matched paths come back to the driver."""
    from pyspark.sql import functions as F

    visible = [c for c in result.columns if c != id_col]
    docs = result.select(F.col(f"`{id_col}`").alias("id"),
                         F.to_json(F.struct(*[F.col(f"`{c}`") for c in visible])).alias("doc"))
    return match_docs(docs, pattern, limit)


def trace_over(operators: Iterable[OperatorProv], result_oid: int, result, id_col: str, pattern, assoc,
               limit: int | None = None) -> Backtrace:
    """Match ``pattern`` on ``result`` (a DataFrame with each item's provenance id in ``id_col``)
    and backtrace the matches through ``operators`` using the associations in ``assoc``."""
    matched = match_items(result, pattern, id_col, limit)
    return backtrace(operators, result_oid, matched, spark_fetcher(assoc))


def trace_captured(tracker, tdf, pattern, limit: int | None = None) -> Backtrace:
    """Trace a tracked DataFrame before (or without) committing it: matches on ``tdf``'s annotated
    rows and derives the matched rows' associations from their hidden columns."""
    cap = tracker.capture(tdf)
    live = StoredRun("(not committed)", cap.operators, cap.result_oid, cap.annotated, cap.id_col, cap.slots)
    return backtrace_run(live, pattern, limit)

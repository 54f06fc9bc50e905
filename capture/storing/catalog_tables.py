"""The catalog tables a run read or wrote, as its commit records them (table ``capture_tables``).

For each table: where it lives (its storage location, else the catalog's default path for it),
its database, name and schema, and the session's warehouse location and Hive metastore URI —
what OpenLineage's Spark integration names a table by (capture/storing/ol_names.py); for the
table written, which result column went into which table column (an INSERT's query names its
columns `col1`, `col2` or as it likes; the table keeps its own). Spark's catalog is asked once,
at the commit, after the write: a table the write created is there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import DataFrame

from capture.storing.ol_names import TableFacts

SESSION_CATALOG = "spark_catalog"


def _seq(jseq) -> list:
    return [jseq.apply(i) for i in range(jseq.size())]


def _cls(obj) -> str:
    return obj.getClass().getSimpleName()


def session_facts(spark) -> tuple[str | None, str | None]:
    """(warehouse, Hive metastore URI) of the session, read where OpenLineage's Spark integration
    reads them: the warehouse from Spark's configuration (`spark.sql.warehouse.dir`, which Spark
    sets to the qualified location when the session starts), else Hadoop's
    `hive.metastore.warehouse.dir`; the metastore (its first URI) only with Hive support."""
    conf = spark.sparkContext.getConf()
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    warehouse = conf.get("spark.sql.warehouse.dir", None) or hadoop.get("hive.metastore.warehouse.dir")
    metastore = None
    if conf.get("spark.sql.catalogImplementation", None) == "hive":
        uris = conf.get("spark.sql.hive.metastore.uris", None) or conf.get("hive.metastore.uris", None) \
            or hadoop.get("hive.metastore.uris")
        if uris:
            metastore = str(uris).split(",")[0].strip() or None
    return (str(warehouse) if warehouse else None), metastore


def _metadata(spark, name: str):
    """The session catalog's ``CatalogTable`` of table ``name`` (as capture names it:
    ``spark_catalog.db.t``, or as a program wrote it), or None (not a table of the session
    catalog, gone, or a name Spark cannot parse)."""
    jvm = spark._jvm
    state = spark._jsparkSession.sessionState()
    try:
        parts = [str(p) for p in _seq(state.sqlParser().parseMultipartIdentifier(name))]
        if len(parts) == 3 and parts[0].lower() == SESSION_CATALOG:
            parts = parts[1:]
        if not 1 <= len(parts) <= 2:
            return None
        db = getattr(jvm, "scala.Option").apply(parts[0] if len(parts) == 2 else None)
        identifier = getattr(jvm, "org.apache.spark.sql.catalyst.TableIdentifier")
        return state.catalog().getTableMetadata(identifier(parts[-1], db))
    except (Py4JError, CapturedException):
        return None


def _facts(spark, meta, warehouse: str | None, metastore: str | None) -> TableFacts:
    ident = meta.identifier()
    stored = meta.storage().locationUri()
    location = stored.get() if stored.isDefined() else spark._jsparkSession.sessionState().catalog() \
        .defaultTablePath(ident)
    db = ident.database()
    return TableFacts(str(location.toString()), str(db.get()) if db.isDefined() else None, str(ident.table()),
                      warehouse, metastore)


def output_ids(df: DataFrame) -> dict[int, str]:
    """Expression id -> column name of ``df``'s analyzed output: the columns a write's query
    reads from the DataFrame written."""
    return {int(a.exprId().id()): str(a.name()) for a in _seq(df._jdf.queryExecution().analyzed().output())}


def traced_columns(executed: DataFrame, written: dict[int, str]) -> list[tuple[str, str]] | None:
    """(result column, table column) of an executed write command (a CTAS or INSERT run by the
    program's SQL statement): Spark's analyzed command projects the DataFrame written
    (``written``: its ``output_ids``) onto the table's columns — by position, through a column
    list, BY NAME, with a PARTITION clause's values as literals — so each table column is
    followed down its projections to the columns it reads. None when the plan is not such a
    command over projections."""
    try:
        plan = executed._jdf.queryExecution().analyzed()
        if _cls(plan) == "CommandResult":
            plan = plan.commandLogicalPlan()
        node = plan.query()
        cols = [(str(a.name()), {int(a.exprId().id())}) for a in _seq(node.output())]
        for _ in range(16):
            if all(ids <= written.keys() for _, ids in cols):
                return [(written[i], name) for name, ids in cols for i in sorted(ids)]
            if _cls(node) != "Project":
                return None
            made = {int(e.toAttribute().exprId().id()): {int(r.exprId().id()) for r in _seq(e.references().toSeq())}
                    for e in _seq(node.projectList())}
            cols = [(name, set().union(*(made.get(i, {i}) for i in ids))) for name, ids in cols]
            node = node.child()
    except (Py4JError, CapturedException):
        return None
    return None


def written_columns(method: str, result: list[str], table: list[str],
                    traced: list[tuple[str, str]] | None) -> list[tuple[str, str]]:
    """(result column, table column) of a write into a catalog table: as Spark resolved the
    statement (``traced``), else as the DataFrame writer does — ``insertInto`` by position,
    ``saveAsTable`` by name (case-insensitively)."""
    if traced is not None:
        return traced
    if method == "insertInto":
        return list(zip(result, table, strict=False))
    by_lower = {t.lower(): t for t in table}
    return [(c, by_lower[c.lower()]) for c in result if c.lower() in by_lower]


def table_rows(spark, run: str, reads: Iterable[str], written: str | None, method: str | None,
               result: list[str], traced: list[tuple[str, str]] | None) -> list[tuple[Any, ...]]:
    """Rows of ``capture_tables`` (capture/storing/tables.py ``TABLES_SCHEMA``) for the tables
    ``reads`` and the table ``written`` (None: the run wrote a path); tables the session catalog
    does not know are left out."""
    warehouse, metastore = session_facts(spark)
    rows = []
    for name in dict.fromkeys([*reads, *([written] if written else [])]):
        meta = _metadata(spark, name)
        if meta is None:
            continue
        f = _facts(spark, meta, warehouse, metastore)
        columns = None
        if name == written:
            table = [str(c) for c in meta.schema().fieldNames()]
            columns = json.dumps(written_columns(method or "", result, table, traced))
        rows.append((run, name, f.database, f.name, f.location, f.warehouse, f.metastore,
                     str(meta.schema().json()), columns))
    return rows

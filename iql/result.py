"""The result of an IQL statement, and its pure text renderings (table, CSV, JSON)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from iql.ast import Form


class Result:
    """Rows of a query: `.columns`, `.rows()`, `.warnings`, `.engine` (what answered and why).

    The local engine has the rows already; Spark's are a lazy DataFrame, collected by `rows()`.
    `.df` is the rows as a Spark DataFrame (for callers that go on in Spark; for a local answer
    it is made from the rows on first use, which starts Spark).
    `warnings` are the open-world caveats of Ibis Section 4 (NOT EXISTS, negated provenance,
    aggregates over provenance): the rows are returned, but they are not certain answers.
    `form` says how the statement was written: the rows of a `TRACE ...` statement
    (`Form.TRACE`) are TRACE rows, which front ends may draw as trees (`trace_tree`).
    """

    def __init__(self, data: Any, columns: tuple[str, ...], warnings: tuple[str, ...] = (),
                 explain: bool = False, form: Form = Form.SELECT, engine: Any = None,
                 spark: Any = None) -> None:
        self.columns = tuple(columns)
        self.warnings = tuple(warnings)
        self.explain = explain
        self.form = form
        self.engine = engine
        self._rows: list[tuple] | None = None
        self._df = None
        self._spark = spark
        if isinstance(data, list):
            self._rows = data
        else:
            self._df = data

    def rows(self) -> list[tuple]:
        """The rows as plain tuples, in the query's column order (collected once)."""
        if self._rows is None:
            self._rows = [tuple(row) for row in self._df.collect()]
        return self._rows

    @property
    def df(self):
        """The rows as a Spark DataFrame."""
        if self._df is None:
            spark = self._spark() if callable(self._spark) else self._spark
            if spark is None:
                raise RuntimeError("this result has no Spark session to make a DataFrame with")
            import pyspark.sql.types as T  # deferred: only this path needs pyspark

            from store.spark.frames import local_frame  # deferred: pyspark too

            rows = self._rows or []
            fields = [T.StructField(c, _spark_type([r[i] for r in rows])) for i, c in enumerate(self.columns)]
            self._df = local_frame(spark, rows, T.StructType(fields))
        return self._df


def _spark_type(values: list[Any]):
    """The Spark type of a result column from its Python values (strings when all are null)."""
    import pyspark.sql.types as T  # deferred: only this path needs pyspark

    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            return T.BooleanType()
        if isinstance(v, int):
            return T.LongType()
        if isinstance(v, float):
            return T.DoubleType()
        if isinstance(v, (list, tuple)):
            return T.ArrayType(T.IntegerType())
        return T.StringType()
    return T.StringType()


def cell_text(value: Any) -> str:
    """One value as every text result table shows it (CLI, REPL): NULL for missing,
    true/false for booleans, JSON for lists and maps."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        if type(value) is list and all(type(v) is int for v in value):  # a trace's operator ids, per row
            return "[" + ", ".join(map(str, value)) + "]"
        return _ENCODER.encode(value)
    return str(value)


_ENCODER = json.JSONEncoder(default=str)


def format_table(columns, rows) -> str:
    """An aligned text table with a header rule, and a row count."""
    cells = [[cell_text(v) for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in cells:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(),
             "-+-".join("-" * w for w in widths)]
    lines += [" | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.append(f"({len(cells)} row{'s' if len(cells) != 1 else ''})")
    return "\n".join(lines)


def trace_tree(rows, width: int = 60) -> str:
    """The rows of a TRACE statement (columns `iql.TRACE_COLUMNS`) as indented trees, one per
    traced input item, headed by where it lives (else its dataset) and its store element, each
    node with its value when it was read back (cut to `width` characters), for the CLI and the
    REPL:

        /data/tweets.json:3  dataset:tweets#e30a59a421e0f527
          retweet_cnt  influencing  accessed by 2  = 0
          text  contributing  accessed by 3,7,8; manipulated by 3,7,8  = "Hello World"
    """
    lines: list[str] = []
    current = None
    for dataset, item, _, path, role, accessed, manipulated, source, value in rows:
        if (dataset, item) != current:
            current = (dataset, item)
            lines.append(f"{source or dataset}  {item}")
        segs = path.split(".")
        ops = [f"{word} by {','.join(map(str, v))}"
               for word, v in (("accessed", accessed), ("manipulated", manipulated)) if v]
        shown = "" if value is None else f"  = {value if len(value) <= width else value[:width - 1] + '…'}"
        lines.append(f"{'  ' * len(segs)}{segs[-1]}  {role}" + (f"  {'; '.join(ops)}" if ops else "") + shown)
    return "\n".join(lines)


def format_csv(columns, rows) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if v is None else cell_text(v) for v in row])
    return buf.getvalue()


def format_csv_columns(table) -> str | None:
    """:func:`format_csv` of a pyarrow Table's rows, column by column with Arrow (a trace's
    TRACE table can be millions of rows: no Python object per cell), or None when a column's type
    is not one it writes (strings, dictionary-coded strings, integers, booleans, lists of
    integers without nulls; the caller then renders the rows). The same text as the csv module
    writes of :func:`cell_text`: a field quoted only when it holds a comma, a double quote
    (doubled) or a newline; nulls empty."""
    import pyarrow as pa  # deferred: only this path needs pyarrow
    import pyarrow.compute as pc  # deferred: and its compute functions

    text = pa.large_string()

    def lit(value: str):
        return pa.scalar(value, text)

    def cells(col):
        t = col.type
        if pa.types.is_dictionary(t):
            col, t = col.cast(t.value_type), t.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t):
            return col.cast(text)
        if pa.types.is_boolean(t):
            return pc.if_else(col, lit("true"), lit("false"))
        if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_integer(t.value_type) \
                and pc.list_flatten(col).null_count == 0:
            joined = pc.binary_join(col.cast(pa.list_(text)), lit(", "))
            return pc.binary_join_element_wise(lit("["), joined, lit("]"), lit(""))
        return None

    def quoted(values):  # the csv module's QUOTE_MINIMAL, its delimiter "," and lineterminator "\n"
        needs = pc.fill_null(pc.match_substring_regex(values, '[,"\n]'), False)
        wrapped = pc.binary_join_element_wise(lit('"'), pc.replace_substring(values, '"', '""'), lit('"'), lit(""))
        return pc.fill_null(pc.if_else(needs, wrapped, values), lit(""))

    fields = [cells(col) for col in table.columns]
    if any(f is None for f in fields):
        return None
    header = format_csv(table.column_names, [])
    if not fields or not table.num_rows:
        return header
    row = [quoted(f) for f in fields]
    if len(row) == 1:  # the csv module writes an empty field alone on its row as ""
        row = pc.if_else(pc.equal(row[0], lit("")), lit('""'), row[0])
    else:
        row = pc.binary_join_element_wise(*row, lit(","))
    lines = pc.binary_join_element_wise(row, lit("\n"), lit(""))  # each row's fields, then its newline
    if isinstance(lines, pa.ChunkedArray):
        lines = lines.combine_chunks()
    return header + _concatenated(lines)


def _concatenated(array) -> str:
    """The strings of a pyarrow large_string array without nulls, one after the other: its data
    buffer between its first and last offsets."""
    import numpy as np  # deferred: only this path needs numpy

    offsets = np.frombuffer(array.buffers()[1], np.int64, len(array) + 1, array.offset * 8)
    return memoryview(array.buffers()[2])[offsets[0]:offsets[-1]].tobytes().decode()


def format_json(columns, rows, warnings=()) -> str:
    """`{"columns": [...], "rows": [[...], ...], "warnings": [...]}` (docs/cli.md, "Output")."""

    def plain(v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        return str(v)

    return json.dumps({
        "columns": list(columns),
        "rows": [[plain(v) for v in row] for row in rows],
        "warnings": list(warnings),
    })

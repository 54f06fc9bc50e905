"""TPC-H / TPC-DS data, queries and answers from DuckDB's TPC extensions, written as files.

Runs in its own environment (benchmarks/tpc/run.py makes it: build/tpc-venv): the extensions on
PyPI (``duckdb-extension-tpch``, ``duckdb-extension-tpcds``) are built for one DuckDB version and
load only into it, which is not the DuckDB Strata runs with.

    python gen.py OUT --suite tpch --sf 0.01

writes ``OUT/data/<table>.parquet`` (one file per table, as ``dbgen``/``dsdgen`` make them),
``OUT/queries.json`` (query number -> DuckDB's SQL text of it, as the extension gives it) and
``OUT/answers.json`` (query number -> the answer the extension ships for this scale factor, as
pipe-separated text with a header; absent where it ships none: the tpcds extension's
``tpcds_answers()`` fails, so TPC-DS has none).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import duckdb


def extension(name: str) -> str:
    """The extension file the PyPI package ``duckdb-extension-<name>`` installs."""
    module = __import__(f"duckdb_extension_{name}")
    found = sorted(Path(module.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension"))
    if not found:
        raise SystemExit(f"gen.py: the package duckdb-extension-{name} holds no {name}.duckdb_extension")
    return str(found[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--suite", choices=("tpch", "tpcds"), default="tpch")
    parser.add_argument("--sf", type=float, default=0.01)
    args = parser.parse_args()
    con = duckdb.connect()
    con.load_extension(extension(args.suite))
    gen = "dbgen" if args.suite == "tpch" else "dsdgen"
    con.execute(f"CALL {gen}(sf = {args.sf})")
    data = args.out / "data"
    data.mkdir(parents=True, exist_ok=True)
    for (table,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
        con.execute(f"COPY {table} TO '{data / (table + '.parquet')}' (FORMAT parquet)")
    # the suite is one of two names (argparse's choices), the scale factor a parameter
    queries = {int(n): q for n, q in con.execute(
        f"SELECT query_nr, query FROM {args.suite}_queries()").fetchall()}  # noqa: S608
    try:
        answers = {int(n): a for n, a in con.execute(
            f"SELECT query_nr, answer FROM {args.suite}_answers() WHERE scale_factor = ?", [args.sf]).fetchall()}  # noqa: S608
    except duckdb.NotImplementedException:  # the tpcds extension fails listing its answers (it has none for sf 10)
        answers = {}
    (args.out / "queries.json").write_text(json.dumps(queries, indent=1))
    (args.out / "answers.json").write_text(json.dumps(answers, indent=1))
    print(f"{args.suite} sf {args.sf}: {len(queries)} queries, {len(answers)} answers, data in {data}")


if __name__ == "__main__":
    main()

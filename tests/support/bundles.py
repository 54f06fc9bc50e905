"""A bundle document written as the other sources ingest reads: one JSON Lines file, or a
folder of JSONL or Parquet sections (docs/bundle-format.md)."""

from __future__ import annotations

import json

MOVIES_SECTIONS = ("elements", "vertices", "edges")


def write_jsonl(path, movies):
    header = {k: movies[k] for k in ("format", "gsets", "types")}
    lines = [json.dumps(header)]
    for s in MOVIES_SECTIONS:
        lines += [json.dumps({"section": s, **rec}) for rec in movies.get(s, [])]
    path.write_text("\n".join(lines) + "\n")


def write_folder(path, movies, spark, fmt):
    path.mkdir()
    (path / "bundle.json").write_text(json.dumps({k: movies[k] for k in ("format", "gsets", "types")}))
    for s in MOVIES_SECTIONS:
        recs = movies.get(s, [])
        if fmt == "jsonl":
            (path / f"{s}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        else:
            rows = [{**r, "attrs": json.dumps(r["attrs"])} if "attrs" in r else r for r in recs]
            # Parquet columns have one type: a type name becomes a one-element list of names.
            rows = [{**r, "type": [r["type"]]} if isinstance(r.get("type"), str) else r for r in rows]
            spark.createDataFrame(rows).coalesce(1).write.parquet(str(path / f"{s}.parquet"))

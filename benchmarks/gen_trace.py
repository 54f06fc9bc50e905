"""Synthetic attribute-value provenance trace shaped like the CSProv paper's (Section 4).

At scale 1: a 29-table workflow (3 input tables, 7 layers), about 4.6M values and 6.4M triples,
three large components (about 1.2M, 0.9M and 0.7M values), 132 mid-size components (about
900-7500 values) and several hundred thousand small ones (2-20 values); fan-in up to 450.

Table counts per layer are chosen so the automatic rank bands of the index (3 bands of about
equal table count) fall on layers {0,1}, {2,3}, {4,5,6}, where the paper split by hand.
A large component is built the way a curation workflow connects everything:
- sp1-like layers 0-1: 20 source groups (an input value fanning out to 20 values);
- layers 2-3: "units" of ~15 values, each rooted in 1-2 source values of random groups;
- layers 4-6: "leaves" of 4 values, each derived from 2-3 unit values (a few from 10-15:
  the LC-SL candidates), plus "reports" derived from up to 450 unit values (LC-LL candidates).
Each layer band alone falls apart into many small pieces, so the workflow splits cut the large
component into many small connected sets, as in Table 9 of the paper.

    python benchmarks/gen_trace.py --scale 0.1 --out benchmarks/out/trace   # writes triples.parquet, queries.json

The command streams (`generate_to`): memory follows the largest component, not the trace.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

LAYERS = [3, 7, 5, 5, 3, 3, 3]  # 29 tables; 3 inputs
TABLES: list[list[str]] = []
_n = 0
for _size in LAYERS:
    TABLES.append([f"T{_n + i + 1:02d}" for i in range(_size)])
    _n += _size


def workflow_parents(layer: int, i: int) -> list[str]:
    """Tables a table derives from: an overlapping window of the previous layer, so every
    table feeds some table of the next layer and the workflow is one connected DAG."""
    prev, n = TABLES[layer - 1], len(TABLES[layer])
    lo, hi = i * len(prev) // n, -(-(i + 1) * len(prev) // n)
    return sorted({prev[j] for j in range(lo, min(hi + 1, len(prev)))})


CHUNK = 1_000_000  # triples per Parquet row group when streaming


class Trace:
    """The triples generated so far. With a `sink`, finished components are handed to it in
    chunks and forgotten (a value is only ever referenced inside its own component), so memory
    stays bounded by the largest component; without one, everything is kept."""

    def __init__(self, seed: int, sink=None) -> None:
        self.rng = random.Random(seed)
        self.sink = sink
        self.src: list[str] = []
        self.dst: list[str] = []
        self.op: list[str] = []
        self.src_table: list[str] = []
        self.dst_table: list[str] = []
        self.table: dict[str, str] = {}
        self.workflow: set[tuple[str, str]] = set()
        self.n = 0
        self.triples = 0

    def end_component(self) -> None:
        if self.sink is None:
            return
        self.table = {}
        if len(self.src) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.sink is not None and self.src:
            self.sink({"src": self.src, "dst": self.dst, "op": self.op,
                       "src_table": self.src_table, "dst_table": self.dst_table})
            self.src, self.dst, self.op, self.src_table, self.dst_table = [], [], [], [], []

    def lane(self) -> list[str]:
        """A random path of tables through the workflow, one table per layer."""
        i = self.rng.randrange(len(TABLES[-1]))
        path = [TABLES[-1][i]]
        for layer in range(len(LAYERS) - 1, 0, -1):
            path.append(self.rng.choice(workflow_parents(layer, TABLES[layer].index(path[-1]))))
        return path[::-1]

    def value(self, table: str) -> str:
        self.n += 1
        vid = f"v{self.n}"
        self.table[vid] = table
        return vid

    def derive(self, parent: str, child: str) -> None:
        pt, ct = self.table[parent], self.table[child]
        self.src.append(parent)
        self.dst.append(child)
        self.op.append(f"R{pt}_{ct}")
        self.src_table.append(pt)
        self.dst_table.append(ct)
        self.workflow.add((pt, ct))
        self.triples += 1

    def child(self, parents: list[str], table: str) -> str:
        v = self.value(table)
        for p in parents:
            self.derive(p, v)
        return v


def large_component(tr: Trace, n_values: int, extra: float, queries: dict, key: str) -> None:
    rng = tr.rng
    lane = tr.lane()  # one table per layer: the component follows one path of the workflow
    groups = []
    for _ in range(20):
        root = tr.value(lane[0])
        groups.append([tr.child([root], lane[1]) for _ in range(20)])
    units: list[list[str]] = []
    n_units = max(2, int(n_values * 0.3 / 15))
    for u in range(n_units):
        g = groups[rng.randrange(20)] if u else groups[0]
        roots = [rng.choice(g)] + ([rng.choice(rng.choice(groups))] if rng.random() < 0.4 else [])
        unit = [tr.child(sorted(set(roots)), lane[2])]
        for _ in range(14):
            parents = [rng.choice(unit)]
            if len(unit) > 2 and rng.random() < extra:
                parents.append(rng.choice(unit))
            unit.append(tr.child(sorted(set(parents)), lane[3]))
        units.append(unit)
    n_leaves = max(1, int(n_values * 0.65 / 4))
    bs = []
    for _ in range(n_leaves):
        wide = rng.random() < (0.01 if n_values > 10_000 else 0.02)
        k = rng.randint(12, 18) if wide else rng.randint(2, 3)
        a = tr.child(sorted({rng.choice(rng.choice(units)[-5:]) for _ in range(k)}), lane[4])
        b = tr.child([a], lane[5])
        c = tr.child([a, b] if rng.random() < extra else [b], lane[6])
        d = tr.child([b, c] if rng.random() < extra else [b], lane[6])
        if not wide:
            bs.append(b)  # reports draw from ordinary leaves only
        else:
            queries.setdefault(f"{key}-SL", []).append(d)
    for _ in range(12 if key == "LC1" else 2):
        k = min(len(bs), rng.randint(380, 450))
        queries.setdefault(f"{key}-LL", []).append(tr.child(sorted(rng.sample(bs, k)), lane[6]))
    tr.end_component()


def small_component(tr: Trace) -> None:
    rng = tr.rng
    lane = tr.lane()
    layer = rng.randrange(len(LAYERS) - 1)
    nodes = [tr.value(lane[layer])]
    size = min(20, 2 + int(rng.expovariate(0.8)))
    while len(nodes) < size and layer < len(LAYERS) - 1:
        layer += 1
        nodes.append(tr.child([nodes[-1]], lane[layer]))
    tr.end_component()


def generate(scale: float, seed: int = 1, sink=None) -> tuple[Trace, dict]:
    tr = Trace(seed, sink)
    queries: dict[str, list[str]] = {}
    for n, extra, key in ((1_200_000, 0.9, "LC1"), (900_000, 0.3, "LC2"), (700_000, 0.45, "LC3")):
        large_component(tr, int(n * scale), extra, queries, key)
    n_mid = max(2, int(132 * scale))
    for i in range(n_mid):
        size = 7_453 if i == 0 else tr.rng.randint(910, 7_453)
        large_component(tr, size, 0.3, queries, f"MID{i}")
    for _ in range(int(430_000 * scale)):
        small_component(tr)
    return tr, queries


def write(tr: Trace, queries: dict, out: Path, per_class: int = 10) -> dict:
    """Write a trace generated without a sink: triples.parquet and queries.json in `out`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"src": tr.src, "dst": tr.dst, "op": tr.op, "src_table": tr.src_table,
                             "dst_table": tr.dst_table}), out / "triples.parquet")
    return _queries(tr, queries, out, per_class)


def generate_to(scale: float, out: Path, seed: int = 1, per_class: int = 10) -> dict:
    """`generate` + `write` streaming: the triples go to Parquet a chunk at a time, so a scale-10
    trace (about 59M triples) needs memory for its largest component only. Same triples, same
    order, same queries as generate + write for the same scale and seed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    writer = None

    def sink(columns: dict) -> None:
        nonlocal writer
        table = pa.table(columns)
        if writer is None:
            writer = pq.ParquetWriter(out / "triples.parquet", table.schema)
        writer.write_table(table)

    tr, queries = generate(scale, seed, sink)
    tr.flush()
    if writer is not None:
        writer.close()
    return _queries(tr, queries, out, per_class)


def _queries(tr: Trace, queries: dict, out: Path, per_class: int) -> dict:
    rng = random.Random(7)

    def pick(key: str) -> list[str]:
        items = queries.get(key, [])
        return rng.sample(items, min(per_class, len(items)))

    classes = {"SC-SL": pick("MID0-SL"), "LC-SL": pick("LC1-SL"), "LC-LL": pick("LC1-LL")}
    if len(classes["LC-LL"]) < per_class:  # small scales: top up from the other large components
        classes["LC-LL"] += pick("LC3-LL")[: per_class - len(classes["LC-LL"])]
    stats = {"values": tr.n, "triples": tr.triples, "tables": sum(LAYERS), "workflow_edges": len(tr.workflow)}
    (out / "queries.json").write_text(json.dumps({"classes": classes, "stats": stats}, indent=1))
    return {"classes": classes, "stats": stats}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    info = generate_to(args.scale, args.out, args.seed)
    print(json.dumps(info["stats"]), {k: len(v) for k, v in info["classes"].items()})


if __name__ == "__main__":
    main()

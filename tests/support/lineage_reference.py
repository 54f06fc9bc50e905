"""A plain reference for lineage, independent of store.lineage: paths by exact length.

R_0 = {q}; R_{j+1} = the values with a triple into R_j (backward) or out of R_j (forward).
The lineage within k steps is R_1 ∪ … ∪ R_k, and its triples are those whose derived end is in
R_0 ∪ … ∪ R_{k-1}. Unlimited depth iterates until nothing new appears (at most |V| + 1 steps).
"""

from __future__ import annotations


def union_find(ids, edges) -> dict:
    """Each of `ids` (and every end of `edges`) -> the smallest member of its weakly connected
    component: the reference the component builds are checked against."""
    parent = {v: v for v in ids}
    for a, b in edges:
        parent.setdefault(a, a)
        parent.setdefault(b, b)

    def find(v):
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {v: find(v) for v in parent}


def reference_lineage(triples, item, depth=None, forward=False):
    triples = list(triples)
    values = {t[0] for t in triples} | {t[1] for t in triples} | {item}
    limit = depth if depth is not None else len(values) + 1
    level, reached = {item}, set()
    heads = {item} if depth is None or depth >= 1 else set()
    for _ in range(limit):
        if forward:
            level = {d for s, d, _ in triples if s in level}
        else:
            level = {s for s, d, _ in triples if d in level}
        reached |= level
        if depth is not None and _ < depth - 1 or depth is None:
            heads |= level
    if forward:
        edges = {t for t in triples if t[0] in heads}
    else:
        edges = {t for t in triples if t[1] in heads}
    return reached, edges


def random_graphs(seed: int, count: int, max_nodes: int = 12):
    """Disjoint random provenance graphs with tables T0..T3 along a layered workflow.

    Most triples go from a table to the next; some go back (cycles, also in the table graph),
    some are self-loops; a few values stand alone (only a self-loop). Returns (triples, tables)
    with ids prefixed by the graph number so the graphs stay disjoint.
    """
    import random

    rng = random.Random(seed)
    triples, tables = [], {}
    for g in range(count):
        n = rng.randint(1, max_nodes)
        ids = [f"g{g}v{i}" for i in range(n)]
        for i, v in enumerate(ids):
            tables[v] = f"T{min(3, i * 4 // max(n, 1))}"
        for _ in range(rng.randint(0, 2 * n)):
            a, b = sorted(rng.sample(range(n), 2)) if n > 1 else (0, 0)
            if rng.random() < 0.15:
                a, b = b, a  # a back edge: cycles
            triples.append((ids[a], ids[b], rng.choice(["op1", "op2"])))
        if rng.random() < 0.2:
            triples.append((ids[0], ids[0], "loop"))
    return triples, tables


# The paper's Table 4: a component of triples (source, derived, operation).
TABLE4 = [
    ("1", "13", "R1"), ("4", "16", "R1"), ("7", "19", "R1"), ("2", "14", "R1"),
    ("5", "17", "R1"), ("14", "22", "R2"), ("17", "22", "R2"), ("8", "20", "R1"),
    ("20", "24", "R2"), ("3", "15", "R1"), ("6", "18", "R1"), ("15", "23", "R2"),
    ("18", "23", "R2"), ("9", "21", "R1"), ("21", "25", "R2"),
]

# The paper's Table 6/7 component, with one table per set so automatic splits find S1..S4.
TABLE6 = [("1", "2"), ("1", "3"), ("2", "4"), ("3", "4"), ("4", "5"), ("4", "6"), ("5", "7"),
          ("7", "8"), ("7", "9"), ("6", "10"), ("10", "11"), ("10", "12")]
TABLE6_TABLES = {**dict.fromkeys(["1", "2", "3"], "Ta"), **dict.fromkeys(["4", "5", "6"], "Tb"),
                 **dict.fromkeys(["7", "8", "9"], "Tc"), **dict.fromkeys(["10", "11", "12"], "Td")}
THETA = 4
_CACHE: dict = {}


def batch_triples():
    """Table 6 + Table 4 (prefixed 'p') + random graphs: one index build serves many tests."""
    rnd, rnd_tables = random_graphs(seed=11, count=25)
    triples = [(s, d, "-") for s, d in TABLE6] + [("p" + s, "p" + d, o) for s, d, o in TABLE4] + rnd
    tables = {**TABLE6_TABLES, **rnd_tables}
    return triples, tables


def shared_index(spark):
    """(triples, tables, IndexFrames) for batch_triples(), computed once per test session."""
    if "frames" not in _CACHE:
        from store.index import CCEngine, IndexParams
        from store.spark.frames import local_frame
        from store.spark.index.build import compute_index

        triples, tables = batch_triples()
        tdf = local_frame(spark, triples, "src string, dst string, op string")
        tab = local_frame(spark, sorted(tables.items()), "id string, table string")
        frames = compute_index(tdf, tab, IndexParams(theta=THETA, engine=CCEngine.STARS))
        _CACHE["frames"] = (triples, tables, frames, tdf)
    return _CACHE["frames"]


def shared_store(spark, root):
    """A store at `root` (created once per test session) holding batch_triples(), ingested as a
    triples file with each value's table (the Table 4 values have none), and the index of
    shared_index() written for it: what the lineage tests run against on either engine."""
    if "store" not in _CACHE:
        from store.index import CCEngine, IndexParams
        from store.spark.index.build import write_index
        from store.store import Store

        triples, tables, frames, _ = shared_index(spark)
        root.mkdir(parents=True, exist_ok=True)
        path = root / "batch.csv"
        path.write_text("src,dst,op,src_table,dst_table\n" + "".join(
            f"{s},{d},{o},{tables.get(s, '')},{tables.get(d, '')}\n" for s, d, o in triples))
        st = Store.open(root / "store", spark=spark)
        st.ingest(str(path))
        write_index(st, frames, IndexParams(theta=THETA, engine=CCEngine.STARS), "index: shared test index")
        _CACHE["store"] = st.root
    return _CACHE["store"]

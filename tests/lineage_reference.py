"""A plain reference for lineage, independent of store.lineage: paths by exact length.

R_0 = {q}; R_{j+1} = the values with a triple into R_j (backward) or out of R_j (forward).
The lineage within k steps is R_1 ∪ … ∪ R_k, and its triples are those whose derived end is in
R_0 ∪ … ∪ R_{k-1}. Unlimited depth iterates until nothing new appears (at most |V| + 1 steps).
"""

from __future__ import annotations


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

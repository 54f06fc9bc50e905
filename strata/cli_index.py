"""`strata index` and `strata lineage` (docs/cli.md): thin wrappers over the library.

`index` builds the component index, or merges edges ingested since the last build into it
(in this process or on Spark: store/duckdb/index.py `choose_builder`).
`lineage ITEM` prints the lineage of one item; `--format json` prints the object docs/cli.md
describes.
Data goes to stdout; warnings and progress to stderr.
"""

from __future__ import annotations

import json

import click

from store.errors import UserError
from store.index import CCEngine, IndexParams
from store.index.layout import META_KEY
from store.index.params import params_from_meta
from store.indexing import build_index, update_index
from store.lineage import Method
from store.lineage import lineage as run
from strata import progress
from strata.app import store_of


def _splits(path: str | None) -> tuple[tuple[str, ...], ...] | None:
    """User-given top-level splits: a JSON list of lists of table names."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read splits file {path}: {e}",
                        hint='it holds a JSON list of table lists, e.g. [["A","B"],["C"]]') from e
    if not isinstance(data, list) or not all(
        isinstance(g, list) and g and all(isinstance(t, str) for t in g) for g in data
    ):
        raise UserError(f"splits file {path} must hold a JSON list of non-empty lists of table names",
                        hint='e.g. [["FINDocs","IRP"],["MTRCS"]]')
    return tuple(tuple(g) for g in data)


@click.command()
@click.option("--theta", type=int, default=None,
              help="Split components with at least this many values [default 25000, or as built].")
@click.option("--splits", "splits_file", type=click.Path(exists=True, dir_okay=False),
              help="JSON file with top-level splits of the workflow graph (lists of tables).")
@click.option("--bands", type=int, default=None, help="Number of automatic top-level rank bands [3].")
@click.option("--engine", type=click.Choice(["auto", "graphframes", "stars"]), default=None,
              help="Connected components of a build on Spark [auto: GraphFrames when on the classpath]; "
                   "where the build runs is the global --engine.")
@click.option("--buckets", type=int, default=None, help="Parquet buckets of the index tables [16].")
@click.option("--rebuild", is_flag=True, help="Rebuild from scratch instead of merging new edges.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
@progress.around
def index(ctx, theta, splits_file, bands, engine, buckets, rebuild, fmt) -> None:
    """Build or update the component index (components, connected sets, set dependencies).

    It is built in this process when the store is a local folder whose edges fit in memory
    (at most $STRATA_LOCAL_TRIPLES rows), else on Spark; the global --engine local|spark
    forces either (docs/index.md)."""

    st = store_of(ctx, write=True)
    old = st.meta(META_KEY)
    overrides = {"theta": theta, "bands": bands, "buckets": buckets,
                 "engine": CCEngine(engine) if engine else None, "splits": _splits(splits_file)}
    if old:
        params = params_from_meta(old, **overrides)
    else:
        params = IndexParams(**{k: v for k, v in overrides.items() if v is not None})
    meta = build_index(st, params) if rebuild else update_index(st, params)
    if fmt == "json":
        click.echo(json.dumps({k: v for k, v in meta.items() if k != "edges_segments"}, indent=2))
        return
    where = {"local": ", in-process", "spark": ", on Spark"}.get(meta.get("builder", ""), "")
    click.echo(
        f"index ({meta.get('mode')}{where}): {meta['components']} components, {meta['sets']} connected sets "
        f"({meta['split_components']} components split, θ={meta['theta']}), "
        f"{meta['set_dependencies']} set dependencies over {meta['triples']} triples"
        + (f" in {meta['build_s']} s" if "build_s" in meta else "")
        + (f"; lineage skeletons of {meta['skeletons']} large components in {meta['skeletons_s']} s"
           if meta.get("skeletons") else ""))


@click.command()
@click.argument("item")
@click.option("--depth", type=click.IntRange(min=0), default=None, help="At most K derivation steps.")
@click.option("--forward", is_flag=True, help="Descendants instead of ancestors.")
@click.option("--method", type=click.Choice(["auto", "rq", "cc", "cs"]), default="auto",
              help="rq: recursive querying; cc: component-pruned; cs: set-pruned [auto: cs if indexed].")
@click.option("--tau", type=click.IntRange(min=0), default=None,
              help="Trace at most this many triples in memory [2000000 on the local engine, 200000 on Spark].")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def lineage(ctx, item, depth, forward, method, tau, fmt) -> None:
    """Lineage of ITEM: every value with a path to it (or from it, with --forward)."""

    result = run(store_of(ctx), item, depth, forward, Method(method), tau)
    for w in result.warnings:
        click.echo(f"strata: warning: {w}", err=True)
    if fmt == "json":
        click.echo(json.dumps(result.to_json()))
        return
    from strata.render import console, result_table  # deferred: it loads rich

    key = "descendants" if forward else "ancestors"
    out = console()
    out.print(result_table(["src", "op", "dst"], [(s, o, d) for s, d, o in result.edges],
                           title=f"lineage of {item} ({result.direction.value})"))
    click.echo(f"{len(result.nodes)} {key}, {len(result.edges)} triples; method {result.method.value}, "
               f"{result.triples_read} triples read; {result.engine.line()}", err=True)

"""`strata demo` / `make demo`: build a store from the bundled examples and ask it questions.

The questions are the Ibis paper's Table 1 (examples/movies.json reconstructs its Figure 2),
asked in IQL exactly as the paper writes them, with the parenthesised descriptions replaced by
string ids.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from rich.panel import Panel

import iql
from store.export import extract
from store.export.html import write_html
from store.export.neo4j import Target, export
from store.export.selection import result_ids
from strata.render import console, result_table

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@dataclass(frozen=True)
class Question:
    text: str
    iql: str
    expected: str


TABLE1 = (
    Question("Which web pages influence V1 of the Avatar lead actor in the combined table?",
             "select p.id from WebPage p, Version v where p influences(2) v and v.id = 'avatar_lead_actor_v1'",
             "imdb_page"),
    Question("Which data items influence the combined extracted table?",
             "select d.id from AnyData d, Table t where d influences(2) t and t.id = 'combined_table'",
             "map_outputs, combined_table"),
    Question("Map task 2 (attempt 1) of the merge job failed: which table did it read?",
             "select t.id from MRTaskAttempt a, Table t where t feeds a and a.id = 'merge_map_task2_attempt1'",
             "ymovies_table"),
    Question("Version 3 of the extract script is buggy: which tables did it contaminate?",
             "select t.id from PigScript p, PigJob j, AnyData d1, AnyData d2, Table t "
             "where p.id = 'extract_script' and j under p and j.version = 3 and j emits d1 "
             "and d1 influences(2) d2 and d2 under t",
             "ymovies_table, combined_table"),
    Question("Which versions of combined cells derive only from Yahoo-licensed sources?",
             "select v.id from Version v, Table t where t.id = 'combined_table' and v under t and "
             "not exists (select * from WebPage source where source influences(2) v "
             "and source.license != 'yahoo')",
             "avatar_lead_actor_v2"),
    Question("Which cell version derives from the most authoritative web page?",
             "select v.id, source.authScore from Version v, WebPage source where source influences(2) v "
             "and source.authScore = (select max(source2.authScore) from Version v2, WebPage source2, "
             "(Row,Column) commonParent where source2 influences(2) v2 and v under commonParent "
             "and v2 under commonParent)",
             "avatar_lead_actor_v2 | 5"),
)


def run_demo(app, fresh: bool = True) -> None:
    out = console()
    path = Path(app.store_path or ".strata-demo")
    if fresh and path.exists():
        shutil.rmtree(path)
    app.store_path = str(path)
    out.print(Panel.fit("Strata demo: the Ibis paper's movie-extraction provenance (Figure 2) "
                        "and its Table 1 questions, on embedded Spark", style="bold"))
    t0 = time.time()
    st = app.store()
    out.print(f"Spark {st.spark.version} ({st.spark.sparkContext.master}) ready in {time.time() - t0:.1f}s; "
              f"store at {st.root}")
    t0 = time.time()
    commit = st.ingest(EXAMPLES / "movies.json")
    c = commit.counts
    out.print(f"ingested examples/movies.json as version {commit.version}: {c.elements} basic elements, "
              f"{c.vertices} complex vertices, {c.edges} three-way edges ({time.time() - t0:.1f}s)\n")
    for i, q in enumerate(TABLE1, 1):
        t0 = time.time()
        result = iql.run(st, q.iql)
        rows = result.rows()
        distinct = list(dict.fromkeys(rows))  # SQL keeps one row per binding; show each answer once
        out.print(f"[bold]Q{i}. {q.text}[/bold]")
        out.print(f"[dim]{q.iql}[/dim]")
        out.print(result_table(result.columns, distinct))
        if len(distinct) < len(rows):
            out.print(f"[dim]({len(rows)} rows, one per binding of the FROM aliases; "
                      f"{len(distinct)} distinct shown)[/dim]")
        for w in result.warnings:
            out.print(f"[yellow]warning:[/yellow] {w}")
        out.print(f"[dim]paper's answer: {q.expected}   ({time.time() - t0:.1f}s)[/dim]\n")
    _pictures(st, path, out)
    out.print("Try your own:  .venv/bin/strata --store " + str(path) + " query \"select ...\"")


PICTURE_QUERY = ("select d.id from AnyData d, Version v "
                 "where d influences(2) v and v.id = 'avatar_lead_actor_v1'")


def _pictures(st, path: Path, out) -> None:
    """End with a picture for people without Neo4j, and a script for people with it."""

    sg = extract(st, result_ids(iql.run(st, PICTURE_QUERY)))
    html = path / "lineage-v1.html"
    cypher = path / "movies.cypher"
    write_html(sg, html, title="What made V1 of the Avatar lead actor (influences(2))")
    export(extract(st, st.table("vertices").select("id")), Target.CYPHER, cypher)
    out.print(f"[bold]Pictures and exports[/bold]\n"
              f"  {html}  — open it in a browser (self-contained, no network needed)\n"
              f"  {cypher}  — paste into Neo4j Browser, or: cypher-shell -f {cypher}\n")

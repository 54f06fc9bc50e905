"""The web UI in Chromium on a generated store (docs/ui.md, benchmarks/RESULTS.md): first paint
of a node's neighbourhood, an expand, and a 2,000-node view (first paint, then frame times while
it is zoomed with the wheel and dragged).

The store: OpenLineage runs of a chain `d0000 -> job c0000 -> d0001 -> ...` (`--chain` jobs) and a
hub dataset `events` read by `--fanout` jobs `load_NNNN`, each writing `t_NNNN`; one COMPLETE event
per run. Ingested with `strata ingest --format openlineage`, served by `strata ui`.

    .venv/bin/python benchmarks/bench_ui.py --chain 2000 --fanout 2000 --work benchmarks/out/ui

With `--store PATH --item ID ...` (or `--queries queries.json`, the first item of each class
gen_trace.py wrote), the same first paint and expand on an existing store of items (triples,
bundles, PROV), found by id prefix in the search box: the item's neighbourhood, then one of its
sources expanded.

    .venv/bin/python benchmarks/bench_ui.py --store benchmarks/out/lineage/scale-10.0/store \
        --queries benchmarks/out/lineage/scale-10.0/queries.json

Times are measured in the page (performance.now() around the request and the drawing, as the
page records them in `window.strataUi`) and from Python (keypress to the status line), the
median and worst of `--repeat` runs. Needs Debian's Chromium (/usr/bin/chromium) and Playwright.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from support.ui import UiServer, chromium, event, strata  # noqa: E402


def generate(path: Path, chain: int, fanout: int) -> int:
    events = []
    for i in range(chain):
        events.append(event(f"c{i:04d}", f"00000000-0000-0000-0002-{i:012d}", "2024-01-01T00:00:00Z", "COMPLETE",
                            (f"d{i:04d}",), (f"d{i + 1:04d}",), ns="bench"))
    for i in range(fanout):
        events.append(event(f"load_{i:04d}", f"00000000-0000-0000-0003-{i:012d}", "2024-01-01T01:00:00Z",
                            "COMPLETE", ("events",), (f"t_{i:04d}",), ns="bench"))
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return len(events)


def ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.0f} ms, worst {max(xs):.0f} ms"


def bench_items(page, url: str, items: list[str], repeat: int) -> None:
    """First paint of each item's neighbourhood (search by its id, Enter) and an expand of one
    of its sources (the first drawn), `repeat` times each."""
    for name in items:
        node = f"element:{name}"
        search, paint, paint_page, fetch, expand, expand_page, expand_draw, sizes = [], [], [], [], [], [], [], []
        for _ in range(repeat):
            page.goto(url)
            page.wait_for_function("document.getElementById('status').textContent.includes('store version')")
            t0 = time.perf_counter()
            page.fill("#search", name)
            page.wait_for_selector(f"#search-results li[data-id='{node}']")
            search.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            page.keyboard.press("Enter")
            page.wait_for_function("window.strataUi.painted === true", polling=10)
            paint.append((time.perf_counter() - t0) * 1000)
            paint_page.append(page.evaluate("window.strataUi.lastFrameMs"))
            fetch.append(page.evaluate("window.strataUi.lastFetchMs"))
            drawn = page.evaluate("window.strataUi.cy.nodes().length")
            other = page.evaluate("""(start) => [...window.strataUi.nodes.values()]
                .filter((n) => n.kind === 'element' && n.id !== start && n.distance > 0)
                .sort((a, b) => (b.up + b.down) - (a.up + a.down))[0]?.id ?? null""", node)
            if other is None:  # nothing to expand: an isolated item
                sizes.append((drawn, drawn))
                continue
            t0 = time.perf_counter()
            page.locator(f"#node-list li[data-id='{other}'] button.toggle").click()
            page.wait_for_function("document.getElementById('status').textContent.startsWith('expanded')")
            expand.append((time.perf_counter() - t0) * 1000)
            expand_page.append(page.evaluate("window.strataUi.lastExpandMs"))
            expand_draw.append(page.evaluate("window.strataUi.lastDrawMs"))
            sizes.append((drawn, page.evaluate("window.strataUi.cy.nodes().length")))
        print(f"{name}: search to its hit {ms(search)}; first paint (Enter to first frame) {ms(paint)}, "
              f"in the page {ms(paint_page)} (request {ms(fetch)}); "
              + (f"expand a source: click to status {ms(expand)}, in the page {ms(expand_page)} (redraw "
                 f"{ms(expand_draw)}); " if expand else "")
              + f"nodes drawn {sizes[-1][0]} then {sizes[-1][1]}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chain", type=int, default=2000)
    ap.add_argument("--fanout", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--view", type=int, default=2000, help="nodes of the big view (a third each jobs, runs, datasets)")
    ap.add_argument("--work", default="benchmarks/out/ui")
    ap.add_argument("--reuse", action="store_true", help="keep the store of an earlier run")
    ap.add_argument("--store", help="an existing store of items (triples, bundles, PROV): measure it instead")
    ap.add_argument("--item", action="append", default=[], help="with --store: an item id to open (repeatable)")
    ap.add_argument("--queries", help="with --store: gen_trace.py's queries.json; the first item of each class")
    args = ap.parse_args()
    if chromium() is None:
        sys.exit("chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    if args.store:
        items = list(args.item)
        if args.queries:
            items += [ids[0] for ids in json.loads(Path(args.queries).read_text())["classes"].values()]
        if not items:
            ap.error("--store needs --item or --queries")
        srv = UiServer(str(Path(args.store).resolve())).start(timeout=300)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 850})
                page.set_default_timeout(120_000)
                bench_items(page, srv.url, items, args.repeat)
                browser.close()
        finally:
            srv.stop()
        return

    work = Path(args.work).resolve()
    root = work / "store"
    if not args.reuse or not root.exists():
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        n = generate(work / "events.jsonl", args.chain, args.fanout)
        t0 = time.perf_counter()
        strata(str(root), "ingest", "--format", "openlineage", str(work / "events.jsonl"))
        print(f"store: {n:,} runs ({args.chain:,} chained jobs, {args.fanout:,} readers of one dataset), "
              f"ingested in {time.perf_counter() - t0:.1f} s")
    srv = UiServer(str(root)).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 850})
            page.set_default_timeout(120_000)
            mid = f"d{args.chain // 2:04d}"
            paint, paint_page, expand, expand_page = [], [], [], []
            for _ in range(args.repeat):
                page.goto(srv.url)
                page.wait_for_function("document.getElementById('status').textContent.includes('store version')")
                page.fill("#search", mid)
                page.wait_for_selector(f'#search-results li[data-id="dataset:bench:{mid}"]')
                t0 = time.perf_counter()
                page.keyboard.press("Enter")
                page.wait_for_function("window.strataUi.painted === true", polling=10)
                paint.append((time.perf_counter() - t0) * 1000)
                paint_page.append(page.evaluate("window.strataUi.lastFrameMs"))
                prev = f"d{args.chain // 2 - 1:04d}"
                t0 = time.perf_counter()
                page.locator(f'#node-list li[data-id="dataset:bench:{prev}"] button.toggle').click()
                page.wait_for_function("document.getElementById('status').textContent.startsWith('expanded')")
                expand.append((time.perf_counter() - t0) * 1000)
                expand_page.append(page.evaluate("window.strataUi.lastExpandMs"))
            print(f"first paint of {mid}'s neighbourhood (depth 1, both ways): keypress to first frame {ms(paint)}; "
                  f"in the page (request, layout, first frame) {ms(paint_page)}")
            print(f"expand one node: click to status {ms(expand)}; in the page {ms(expand_page)}")
            big = min(args.fanout, (args.view - 1) // 2)  # jobs drawn, each with its output (a large view omits runs)
            t0 = time.perf_counter()
            page.goto(f"{srv.url}/?node=dataset:bench:events&direction=down&limit={big}")
            page.wait_for_function("window.strataUi.painted === true", polling=50)
            load = (time.perf_counter() - t0) * 1000
            frame = page.evaluate("window.strataUi.lastFrameMs")
            nodes = page.evaluate("window.strataUi.cy.nodes().length")
            in_page = page.evaluate("window.strataUi.lastPaintMs")
            parts = page.evaluate("({fetch: window.strataUi.lastFetchMs, ...window.strataUi.drawParts})")
            # a user's pan and zoom: wheel turns and a drag over the canvas, frame gaps recorded in the page
            page.evaluate("""() => { window.gaps = []; let last = performance.now();
                const step = (now) => { window.gaps.push(now - last); last = now;
                                        if (!window.stopFrames) requestAnimationFrame(step); };
                requestAnimationFrame(step); }""")
            page.mouse.move(450, 450)
            for i in range(20):
                page.mouse.wheel(0, -120 if i < 10 else 120)
                page.wait_for_timeout(30)
            page.mouse.down()
            for i in range(20):
                page.mouse.move(450 + 10 * i, 450 + 5 * i)
                page.wait_for_timeout(16)
            page.mouse.up()
            page.wait_for_timeout(300)
            frames = page.evaluate("() => { window.stopFrames = true; return window.gaps.slice(1); }")
            print(f"{nodes:,}-node view: page load to its first frame {load:.0f} ms (in the page: graph ready "
                  f"{in_page:.0f} ms — " + ", ".join(f"{k} {v:.0f}" for k, v in parts.items())
                  + f" — first frame drawn at {frame:.0f} ms); "
                  f"pan and zoom ({len(frames)} frames): median {statistics.median(frames):.0f} ms, "
                  f"worst {max(frames):.0f} ms")
            browser.close()
    finally:
        srv.stop()


if __name__ == "__main__":
    main()

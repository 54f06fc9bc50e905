"""`strata capture [--pipeline NAME] [--no-model] -- SCRIPT.py [ARGS...]` and `strata model [RUN...]`
(docs/cli.md, docs/capture.md).

Runs an unmodified PySpark script in this process, as `spark-submit` would (`runpy`, with
`sys.argv` set to the script and its arguments, `__name__ == "__main__"`), inside
`capture.capturing`: every write the script makes is captured into the store given by the
global `--store`, one run per write, each committed with its write. The script starts its own
SparkSession, configured as it would be without Strata (its builder's settings,
`spark-defaults.conf`; `--master` and `--conf` given to Strata act as `spark-submit`'s), with
capture's jar added (`strata.spark.job_spark`); the store commits in that session. A summary line per captured run
goes to stderr, so the script's stdout stays its own; on a terminal, a progress line per write
(translated, written and committed) too. With `--no-model` each write commits its capture tables
only (TRACE sees the run; IQL over elements and edges, lineage and export do not, until
`strata model` maps the runs captured so into the multi-granularity model, one commit per run).
"""

from __future__ import annotations

import os
import sys

import click

from capture import capturing, run_script
from store.errors import StrataError, UserError
from store.spark.session import parse_conf
from strata import progress
from strata.app import App
from strata.spark import job_spark


class ScriptFailed(StrataError):
    """The captured script raised (its own error, not Strata's)."""


@click.command("capture", context_settings={"ignore_unknown_options": True})
@click.option("--pipeline", metavar="NAME", help="Pipeline name of the captured runs [default: the script's name].")
@click.option("--model/--no-model", default=True, show_default=True,
              help="Map each run into the multi-granularity model as it commits; --no-model commits the capture "
                   "tables only (cheaper; `strata model` adds the model later).")
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
@progress.around
def capture(app: App, pipeline: str | None, model: bool, script: str, args: tuple[str, ...]) -> None:
    """Run an unmodified PySpark script and capture every write it makes (one run per write)."""

    if not os.path.isfile(script):
        raise UserError(f"no such script: {script}", hint="strata capture -- path/to/job.py [ARGS...]")
    app.job = True
    store = app.writer()
    name = pipeline or os.path.splitext(os.path.basename(script))[0]
    program = {"script": os.path.abspath(script), "args": list(args), "cwd": os.getcwd()}
    argv, path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        with job_spark(app.master, parse_conf(app.conf)), capturing(None, store, pipeline=name, model=model,
                                                                             program=program) as cap:
            try:
                run_script(script, ScriptFailed)
            except ScriptFailed as e:
                if cap.failed:  # the script went on after a failed capture and failed for its sake
                    raise cap.failed[0] from e
                raise
            if cap.failed:  # the script caught the capture's error and finished: still a failed capture
                raise cap.failed[0]
    finally:
        sys.argv = argv
        if path0 is not None and sys.path and sys.path[0] != path0:
            sys.path.pop(0)
        for info in cap.runs if "cap" in locals() else ():
            click.echo(f"captured {info.run}: {info.output_path} ({info.items} items, "
                       f"{info.operators} operators, version {info.version})", err=True)
    if not cap.runs:
        click.echo("strata capture: the script made no write to capture", err=True)


@click.command("model")
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@click.pass_obj
@progress.around
def model(app: App, runs: tuple[str, ...]) -> None:
    """Map runs captured with --no-model into the multi-granularity model (default: every such run)."""

    from capture.storing.model_later import model_runs  # deferred: `strata --help` imports no capture code

    store = app.writer()

    def each(done) -> None:
        where = "Spark" if done.spark else "the driver"
        click.echo(f"modelled {done.run}: {done.elements} elements, {done.edges} edges on {where} in "
                   f"{done.seconds:.1f} s (version {done.version})", err=True)

    if not model_runs(store, runs or None, each):
        click.echo("strata model: every captured run is in the model already", err=True)

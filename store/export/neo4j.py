"""Neo4j targets for a `Subgraph`: live push over Bolt, a `.cypher` script, CSV for neo4j-admin.

No value is ever pasted into Cypher text: statements are fixed templates over `$rows`; the
only names in them are labels and relationship types, which are sanitized identifiers (see
`model.sanitize_label`) and backtick-quoted anyway. The `.cypher` script sets `$rows` with
`:param rows => [...]` whose values are Cypher literals made by `cypher_literal`, which escapes
every quote, backslash and control character.
"""

from __future__ import annotations

import csv
import enum
import math
import os
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store import progress
from store.errors import StrataError, UserError
from store.export.property_graph import ROOT_LABEL, Node, Rel, RelType, Subgraph

CONSTRAINT_NAME = "strata_node_id"
PUSH_BATCH = 1000
SCRIPT_BATCH = 200
BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
ENV_URI, ENV_USER, ENV_PASSWORD = "STRATA_NEO4J_URI", "STRATA_NEO4J_USER", "STRATA_NEO4J_PASSWORD"


@dataclass(frozen=True, slots=True)
class Statement:
    """One parameterised Cypher statement: fixed text plus `$rows`."""

    text: str
    rows: tuple[dict[str, Any], ...] = ()

    @property
    def parameters(self) -> dict[str, Any]:
        return {"rows": [_plain(r) for r in self.rows]} if self.rows else {}


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote_name(name: str) -> str:
    """A label, relationship type or map key as a Cypher symbolic name (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def map_key(name: str) -> str:
    """A map key: bare when it is a plain identifier, else backtick-quoted."""
    return name if _PLAIN_NAME.fullmatch(name) else quote_name(name)


def _plain(value: Any) -> Any:
    """Tuples (our frozen property values) as lists, for the driver and for literals."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------- statements

CONSTRAINT = (
    f"CREATE CONSTRAINT {CONSTRAINT_NAME} IF NOT EXISTS "
    f"FOR (n:{ROOT_LABEL}) REQUIRE n.id IS UNIQUE"
)


def node_statement(labels: Sequence[str]) -> str:
    extra = "".join(":" + quote_name(label) for label in labels if label != ROOT_LABEL)
    return (
        f"UNWIND $rows AS row MERGE (n:{ROOT_LABEL} {{id: row.id}}) "
        f"SET n{extra} SET n += row.props"
    )


def rel_statement(rel_type: RelType) -> str:
    head = (
        f"UNWIND $rows AS row MATCH (a:{ROOT_LABEL} {{id: row.src}}) "
        f"MATCH (b:{ROOT_LABEL} {{id: row.dst}}) "
    )
    name = quote_name(rel_type.value)
    if rel_type is RelType.DERIVED:  # several processes may derive b from a: one rel each
        return head + f"MERGE (a)-[r:{name} {{via: row.via}}]->(b)"
    return head + f"MERGE (a)-[r:{name}]->(b) SET r += row.props"


def _chunks(rows: Sequence[dict], size: int) -> Iterator[tuple[dict, ...]]:
    for i in range(0, len(rows), size):
        yield tuple(rows[i : i + size])


def statements(sg: Subgraph, batch_size: int = PUSH_BATCH) -> list[Statement]:
    """The constraint, then node batches per label set, then relationship batches per type."""
    out = [Statement(CONSTRAINT)]
    by_labels: dict[tuple[str, ...], list[dict]] = {}
    for n in sg.nodes:
        by_labels.setdefault(n.labels, []).append({"id": n.id, "props": n.props})
    for labels in sorted(by_labels):
        text = node_statement(labels)
        out += [Statement(text, rows) for rows in _chunks(by_labels[labels], batch_size)]
    by_type: dict[RelType, list[dict]] = {}
    for r in sg.rels:
        row: dict[str, Any] = {"src": r.src, "dst": r.dst}
        if r.type is RelType.DERIVED:
            row["via"] = r.props["via"]
        else:
            row["props"] = r.props
        by_type.setdefault(r.type, []).append(row)
    for rel_type in RelType:
        rows = by_type.get(rel_type, [])
        out += [Statement(rel_statement(rel_type), chunk) for chunk in _chunks(rows, batch_size)]
    return out


# ---------------------------------------------------------------------------- Cypher literals

_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _escape_char(ch: str) -> str:
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    code = ord(ch)
    if ch == " " or (code < 0x80 and ch.isprintable()) or (code >= 0x80 and _visible(ch)):
        return ch
    if code > 0xFFFF:  # as a UTF-16 surrogate pair, the form Neo4j's (Java) strings use
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _visible(ch: str) -> bool:
    # Control, format (BOM, bidi overrides), surrogate, private-use, unassigned and separator
    # characters other than the plain space are escaped: they are invisible or move text around.
    return unicodedata.category(ch)[0] not in "CZ"


def cypher_string(text: str) -> str:
    """A single-quoted Cypher string literal for any text: quotes, backslashes and invisible
    characters escaped (\\uXXXX); other non-ASCII text is kept as it is (the file is UTF-8)."""
    return "'" + "".join(_escape_char(ch) for ch in text) + "'"


def cypher_literal(value: Any) -> str:
    """A Cypher literal for a property value, a list or a map (keys backtick-quoted)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Cypher has no literal for {value!r}")
        return repr(value)
    if isinstance(value, str):
        return cypher_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{map_key(str(k))}: {cypher_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no Cypher literal for {type(value).__name__}")


def script_text(sg: Subgraph, batch_size: int = SCRIPT_BATCH) -> str:
    """A script for Neo4j Browser (multi-statement editor) or `cypher-shell -f`."""
    lines = [
        f"// Strata export: {len(sg.nodes)} nodes, {len(sg.rels)} relationships.",
        "// Run it in Neo4j Browser (paste, or drag the file in) or with",
        "//   cypher-shell -a neo4j://localhost:7687 -u neo4j -f this-file.cypher",
        "// Re-running it is harmless: nodes are merged on their id (constraint strata_node_id).",
    ]
    lines += [f"// warning: {w}" for w in sg.warnings if "\n" not in w]
    for st in statements(sg, batch_size):
        if st.rows:
            lines.append(f":param rows => {cypher_literal(st.parameters['rows'])};")
        lines.append(st.text + ";")
    return "\n".join(lines) + "\n"


def write_script(sg: Subgraph, path: str | os.PathLike, batch_size: int = SCRIPT_BATCH) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(script_text(sg, batch_size), encoding="utf-8")
    return out


# ---------------------------------------------------------------------------- CSV for neo4j-admin

def _csv_type(values: Sequence[Any]) -> str:
    kinds = {type(v) for v in values if v is not None}
    if kinds == {bool}:
        return "boolean"
    if kinds == {int}:
        return "long"
    if kinds and kinds <= {int, float}:
        return "double"
    if kinds == {tuple}:
        inner = _csv_type([x for v in values if v is not None for x in v])
        return inner + "[]"
    return "string"


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ";".join(_csv_value(v) for v in value)
    return str(value)


def _header_name(key: str) -> str:
    # neo4j-admin reads `name:type`; a ':' inside a property name would be taken for the type.
    return key.replace(":", "_")


def _write_table(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def write_csv(sg: Subgraph, folder: str | os.PathLike, database: str = "neo4j") -> list[str]:
    """Node files (one per type: each has its own columns) and relationship files (one per
    type) with neo4j-admin headers; returns the import command line (also in IMPORT.txt)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    # The database comes first: --nodes and --relationships take several files each, so a name
    # after them would be read as one more file.
    args = ["neo4j-admin", "database", "import", "full", database, "--multiline-fields=true"]
    groups: dict[tuple[str, ...], list[Node]] = {}
    for n in sg.nodes:
        groups.setdefault(n.labels, []).append(n)
    for labels, nodes in sorted(groups.items()):
        keys = sorted({k for n in nodes for k in n.props if k != "id"})
        types = {k: _csv_type([n.props.get(k) for n in nodes]) for k in keys}
        header = ["id:ID", ":LABEL"] + [f"{_header_name(k)}:{types[k]}" for k in keys]
        rows = [[n.id, ";".join(n.labels)] + [_csv_value(n.props.get(k)) for k in keys] for n in nodes]
        name = "nodes_" + "_".join(labels[1:]) + ".csv"
        _write_table(out / name, header, rows)
        args.append(f"--nodes={name}")
    rels: dict[RelType, list[Rel]] = {}
    for r in sg.rels:
        rels.setdefault(r.type, []).append(r)
    for rel_type, items in sorted(rels.items(), key=lambda kv: kv[0].value):
        keys = sorted({k for r in items for k in r.props})
        types = {k: _csv_type([r.props.get(k) for r in items]) for k in keys}
        header = [":START_ID", ":END_ID", ":TYPE"] + [f"{_header_name(k)}:{types[k]}" for k in keys]
        rows = [[r.src, r.dst, r.type.value] + [_csv_value(r.props.get(k)) for k in keys] for r in items]
        name = f"rels_{rel_type.value}.csv"
        _write_table(out / name, header, rows)
        args.append(f"--relationships={name}")
    (out / "IMPORT.txt").write_text(
        "Stop the database, then from this folder run (Neo4j 5):\n\n  "
        + " ".join(args)
        + "\n\nAdd --overwrite-destination to replace an existing database. Afterwards, create the\n"
        "constraint Strata's scripts rely on:\n\n  " + CONSTRAINT + ";\n",
        encoding="utf-8",
    )
    return args


# ---------------------------------------------------------------------------- live push

@dataclass(frozen=True, slots=True)
class Credentials:
    uri: str
    user: str
    password: str = ""  # never printed: repr hides it

    def __repr__(self) -> str:
        return f"Credentials(uri={self.uri!r}, user={self.user!r}, password=***)"

    @classmethod
    def resolve(cls, uri: str | None = None, user: str | None = None, password: str | None = None,
                env: Mapping[str, str] | None = None) -> Credentials:
        env = os.environ if env is None else env
        uri = uri or env.get(ENV_URI)
        if not uri:
            raise UserError(
                "no Neo4j server given",
                hint=f"pass --uri neo4j://HOST:7687 or set ${ENV_URI} (user and password: "
                f"--user/--password or ${ENV_USER}/${ENV_PASSWORD})",
            )
        scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
        if scheme not in BOLT_SCHEMES:
            raise UserError(
                f"not a Bolt URI: {uri!r}",
                hint="use neo4j://HOST:7687 or bolt://HOST:7687 (+s / +ssc for TLS); "
                "Strata pushes over Bolt, not HTTP",
            )
        return cls(uri, user or env.get(ENV_USER) or "neo4j", password or env.get(ENV_PASSWORD) or "")


@dataclass(frozen=True, slots=True)
class PushResult:
    statements: int
    nodes: int
    relationships: int


def push(sg: Subgraph, creds: Credentials, database: str | None = None,
         batch_size: int = PUSH_BATCH) -> PushResult:
    """Write the subgraph to a running Neo4j with the official driver (idempotent: MERGE)."""
    from neo4j import GraphDatabase  # deferred: only this path needs neo4j

    # deferred: only this path needs neo4j
    from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable

    stmts = statements(sg, batch_size)
    try:
        with GraphDatabase.driver(creds.uri, auth=(creds.user, creds.password)) as driver, \
                progress.step("push to Neo4j (batches)", total=len(stmts)) as step:
            driver.verify_connectivity()
            for st in stmts:
                driver.execute_query(st.text, parameters_=st.parameters, database_=database)
                step.advance()
    except AuthError as e:
        raise UserError(
            f"Neo4j at {creds.uri} refused user {creds.user!r}: wrong user or password",
            hint=f"check --user/--password or ${ENV_USER}/${ENV_PASSWORD}",
        ) from e
    except ServiceUnavailable as e:
        raise UserError(
            f"cannot reach Neo4j at {creds.uri}",
            hint="is the server running and the Bolt port open? (default neo4j://localhost:7687)",
        ) from e
    except ValueError as e:  # the driver rejects a malformed URI with ValueError
        raise UserError(f"invalid Neo4j URI {creds.uri!r}: {e}", hint="neo4j://HOST:7687 or bolt://HOST:7687") from e
    except Neo4jError as e:
        raise StrataError(f"Neo4j rejected the export: {e.message or e}") from e
    except DriverError as e:  # configuration problems (TLS settings, unsupported URI details)
        raise UserError(f"cannot use Neo4j at {creds.uri}: {e}") from e
    return PushResult(len(stmts), len(sg.nodes), len(sg.rels))


class Target(str, enum.Enum):
    BOLT = "bolt"
    CYPHER = "cypher"
    CSV = "csv"

    @classmethod
    def infer(cls, output: str | os.PathLike | None) -> Target:
        """`-o x.cypher` -> script, another `-o` -> CSV folder, no output -> push over Bolt."""
        if output is None:
            return cls.BOLT
        return cls.CYPHER if Path(output).suffix.lower() in (".cypher", ".cql", ".cyp") else cls.CSV


def check_target(target: Target, output, creds: Credentials | None) -> None:
    """Fail before any Spark work when the target cannot be written."""
    if target is Target.BOLT and creds is None:
        raise UserError("pushing to Neo4j needs a server", hint=f"pass --uri or set ${ENV_URI}")
    if target is not Target.BOLT and output is None:
        raise UserError(f"--to {target.value} needs --output", hint="e.g. -o lineage.cypher or -o csv-folder/")


def export(sg: Subgraph, target: Target, output=None, creds: Credentials | None = None,
           database: str | None = None, batch_size: int | None = None) -> dict[str, Any]:
    """Write `sg` to one target; returns `summary(sg)` plus where it went and `how` to open it."""
    target = Target(target)
    check_target(target, output, creds)
    info = summary(sg)
    info["target"] = target.value
    if target is Target.BOLT:
        res = push(sg, creds, database, batch_size or PUSH_BATCH)
        info.update(uri=creds.uri, statements=res.statements,
                    how="open Neo4j Browser and run: MATCH (n:Strata) RETURN n LIMIT 300")
    elif target is Target.CYPHER:
        path = write_script(sg, output, batch_size or SCRIPT_BATCH)
        info.update(path=str(path),
                    how=f"drag {path} into Neo4j Browser, or run: cypher-shell -u neo4j -f {path}")
    else:
        cmd = write_csv(sg, output, database or "neo4j")
        info.update(path=str(output), command=" ".join(cmd),
                    how=f"see {Path(output) / 'IMPORT.txt'}: from that folder run {' '.join(cmd)}")
    return info


def summary(sg: Subgraph) -> dict[str, Any]:
    """Counts per label and relationship type (what `export` prints)."""
    labels: dict[str, int] = {}
    for n in sg.nodes:
        key = ":".join(n.labels[1:])
        labels[key] = labels.get(key, 0) + 1
    rels: dict[str, int] = {}
    for r in sg.rels:
        rels[r.type.value] = rels.get(r.type.value, 0) + 1
    return {"nodes": len(sg.nodes), "relationships": len(sg.rels), "labels": labels, "types": rels,
            "warnings": list(sg.warnings)}


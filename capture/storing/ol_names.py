"""OpenLineage's names for the datasets a captured run read and wrote (docs/openlineage.md, "Export").

OpenLineage's naming spec names a dataset in a file system by its location (namespace: the
scheme and authority, `file` for a local path; name: the path), and a catalog table by its
location too, with the table's name as a symlink. This module does it as OpenLineage's Spark
integration does (openlineage-java `FilesystemDatasetUtils`, openlineage-spark `PathUtils`, 1.53),
so that a captured run's events and the listener's events of the same job name the same
datasets. Pure: strings in and out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

LOCAL = "file"
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")
# object stores: (scheme prefix, the scheme OpenLineage writes); s3a and s3n are s3, abfs is abfss
_OBJECT_STORES = (("s3", "s3"), ("gs", "gs"), ("abfs", "abfss"), ("wasb", "wasbs"))


@dataclass(frozen=True, slots=True)
class OLName:
    """A dataset's OpenLineage identity: namespace, name, and the symlink (namespace, name) of
    its catalog name, if any."""

    namespace: str
    name: str
    symlink: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class TableFacts:
    """What a run's commit records of a catalog table (table ``capture_tables``): its location
    URI, its database and name, and the session's warehouse location and Hive metastore URI."""

    location: str
    database: str | None
    name: str
    warehouse: str | None = None
    metastore: str | None = None


def _store(scheme: str) -> str | None:
    return next((canon for prefix, canon in _OBJECT_STORES if scheme.startswith(prefix)), None)


def _parts(location: str) -> tuple[str, str, str]:
    """(scheme, authority, decoded path) of a URI; no scheme is a local path."""
    u = urlsplit(location)
    return u.scheme.lower(), u.netloc, unquote(u.path)


def location_dataset(location: str) -> OLName:
    """The dataset at a location URI (FilesystemDatasetUtils.fromLocation): `file:/a/b/` and
    `/a/b` are `file`, `/a/b` (a name without a scheme is a local one); `s3a://bucket/k/` is
    `s3://bucket`, `k`; `hdfs://nn:8020/a` is `hdfs://nn:8020`, `/a`."""
    if not _URI.match(location):  # a local path, or a name given to the read (`name=`)
        return OLName(LOCAL, location.rstrip("/") or "/")
    scheme, authority, path = _parts(location)
    if scheme == LOCAL:
        return OLName(LOCAL, path.rstrip("/") or "/")
    canon = _store(scheme)
    if canon is not None:
        return OLName(f"{canon}://{authority}", path.strip("/") or "/")
    return OLName(f"{scheme}://{authority}" if authority else scheme, path.rstrip("/") or "/")


def _named_in(location: str, name: str) -> tuple[str, str]:
    """(namespace, name) of `name` in the namespace of a location (FilesystemDatasetUtils.fromLocationAndName)."""
    scheme, authority, path = _parts(location)
    if scheme in ("", LOCAL):
        path = path.rstrip("/")
        return (f"{LOCAL}:{path}" if path else LOCAL), name
    canon = _store(scheme)
    if canon is not None:
        return f"{canon}://{authority}{path}".rstrip("/"), name.strip("/") or "/"
    root = f"{scheme}://{authority}" if authority else f"{scheme}:"
    return (root + path).rstrip("/").rstrip(":"), name.rstrip("/") or "/"


def _as_location(d: OLName) -> str:
    """A dataset's name back as a location URI (FilesystemDatasetUtils.toLocation)."""
    ns = d.namespace if ":/" in d.namespace else d.namespace + ":/"
    return ns if d.name == "/" else ns.rstrip("/") + "/" + d.name.lstrip("/")


def _under(base: str, child: str) -> bool:
    """Whether java.net.URI's `base.relativize(child)` is relative: same scheme and authority,
    and `child`'s path is `base`'s or below it."""
    b, c = urlsplit(base), urlsplit(child)
    if (b.scheme.lower(), b.netloc) != (c.scheme.lower(), c.netloc):
        return False
    return c.path == b.path or c.path.startswith(b.path.rstrip("/") + "/")


def table_dataset(t: TableFacts) -> OLName:
    """A catalog table as OpenLineage's Spark integration names it (PathUtils.fromTableIdentifier):
    the dataset at its location, with a symlink of type TABLE named `database.table` in the
    namespace of the Hive metastore (`hive://host:port`) when the session has one, else of the
    warehouse location when the table lies under it (a table elsewhere cannot be found through
    the warehouse: no symlink). AWS Glue and Databricks Unity Catalog names are not made here."""
    at = location_dataset(t.location)
    name = f"{t.database}.{t.name}" if t.database else t.name
    if t.metastore:
        authority = urlsplit(t.metastore).netloc
        return OLName(at.namespace, at.name, (f"hive://{authority}", name))
    if t.warehouse:
        warehouse = _as_location(location_dataset(t.warehouse))
        if _under(warehouse, _as_location(at)):
            return OLName(at.namespace, at.name, _named_in(warehouse, name))
    return at

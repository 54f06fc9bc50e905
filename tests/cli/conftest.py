"""Fixtures of the CLI tests."""

from __future__ import annotations

import pytest
from support.paths import EXAMPLES


@pytest.fixture(scope="module")
def movies_root(spark, tmp_path_factory):
    """examples/movies.json ingested into a new store (its root), for `strata` in a new process."""
    from store import Store

    st = Store.open(str(tmp_path_factory.mktemp("no-jvm") / "movies"), spark=spark)
    st.ingest(str(EXAMPLES / "movies.json"))
    return st.root

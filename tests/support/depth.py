"""How deeply the suite checks: `make test` (every push) or `make test-deep` (STRATA_TEST_DEEP=1).

`make test` has to end within its time line on 2 cores (README, "Two commands"), so it runs
every behaviour at least once and leaves the repetitions to the deep run:

- property tests run `examples(quick, deep)` examples: the quick count in `make test`, the deep
  one in `make test-deep`;
- tests marked `deep` (pytest.mark.deep), and the cases a test skips with `SKIP_REASON` when not
  `DEEP`, are skipped in `make test`, each saying so. Only where a test of `make test` runs the
  same code path against the same reference (a second engine's repetition of a differential
  test, the installed-wheel variant of a build `make test` runs in the checkout, ...); a comment
  beside the marker or the skip names that test.

`make test-deep` runs all of them with the deep counts. STRATA_SPARK_EXAMPLES and
STRATA_INCREMENTAL_EXAMPLES set the counts of the tests that ingest into Spark and of the
in-process index update in either run (tests/support/strategies.py, tests/index/test_index_inmemory.py).
"""

from __future__ import annotations

import os

DEEP = os.environ.get("STRATA_TEST_DEEP", "").strip() not in ("", "0")

SKIP_REASON = "the deep run checks it: make test-deep"


def examples(quick: int, deep: int) -> int:
    """A property test's example count: `quick` in `make test`, `deep` in `make test-deep`."""
    return deep if DEEP else quick

"""One SparkSession for the whole suite (local[2], few shuffle partitions, UI off)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from strata.spark import get_session

    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.driver.memory": "2g",
        "spark.local.dir": str(tmp_path_factory.mktemp("spark-local")),
    }
    session = get_session(master="local[2]", conf=conf)
    session.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("checkpoints")))
    yield session
    session.stop()


@pytest.fixture()
def store_path(tmp_path):
    return tmp_path / "store"


@pytest.fixture()
def examples_dir():
    return ROOT / "examples"

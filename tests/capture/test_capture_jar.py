"""Strata's JVM classes reach a `pip install` user: the Java sources ship in the wheel and are
compiled into the user's cache the first time Strata starts Spark; without a JDK that is said on
stderr, once, and Strata goes on without them."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

PROBE = """
import sys
sys.path.insert(0, {target!r})
import capture.jvm as jvm
assert jvm.__file__.startswith({target!r}), jvm.__file__
print(jvm.ensure_jar())
print(jvm.ensure_jar())
"""


def _probe(tmp_path, target, env):
    script = tmp_path / "probe.py"
    script.write_text(PROBE.format(target=str(target)))
    return subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, cwd=tmp_path,
                          env=env, check=False)


# `make test` compiles the same sources with the same `ensure_jar` in the checkout (`make jvm`,
# into build/jvm); what this adds is the installed package's cache folder, and javac takes most
# of a minute on a busy machine.
@pytest.mark.deep
@pytest.mark.slow
def test_an_installed_package_builds_its_jar_into_the_users_cache(installed_wheel, tmp_path):
    _wheel, target = installed_wheel  # its sources: test_without_a_jdk_it_says_so_once_and_goes_on
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("STRATA_JVM_CACHE", None)
    run = _probe(tmp_path, target, env)
    assert run.returncode == 0, run.stderr
    first, second = run.stdout.split()
    assert first == second and first.startswith(str(tmp_path / "cache" / "strata" / "jvm" / "strata-capture-spark"))
    assert run.stderr.count("building Strata's JVM classes") == 1  # built once, found the second time
    classes = zipfile.ZipFile(first).namelist()
    assert "io/strata/capture/OffsetJsonFileFormat.class" in classes
    again = _probe(tmp_path, target, env)  # a later process finds it and says nothing
    assert again.returncode == 0 and again.stdout.split() == [first, first] and again.stderr == ""


@pytest.mark.slow
def test_without_a_jdk_it_says_so_once_and_goes_on(installed_wheel, tmp_path):
    wheel, target = installed_wheel
    assert {"capture/jvm/io/strata/capture/OffsetJsonFileFormat.java",  # what a JDK would compile ships
            "capture/jvm/io/strata/capture/SplitParquetFileFormat.java",
            "capture/jvm/io/strata/capture/CollectMembers.java"} <= set(zipfile.ZipFile(wheel).namelist())
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty), "STRATA_JVM_CACHE": str(tmp_path / "jars")}
    run = _probe(tmp_path, target, env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["None", "None"]
    assert run.stderr.count("Strata's JVM classes are not available") == 1
    assert "positional ids" in run.stderr and "javac" in run.stderr
    assert not (tmp_path / "jars").exists() or not any((tmp_path / "jars").iterdir())

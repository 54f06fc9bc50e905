"""The class-data archive of Spark's classes (strata/classdata.py): a JVM given one it cannot use
starts anyway and says nothing, which is what lets Strata pass it without checking it first."""

import os
import shutil
import subprocess

import pytest

from store.spark.session import session_conf
from strata import classdata


@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("jar") is None, reason="needs a JDK")
def test_an_archive_the_jvm_cannot_use_is_ignored_in_silence(tmp_path):
    """A dynamic archive made over a jar that changed since (PySpark reinstalled, say): the JVM
    runs without it, and with Strata's options says nothing about it."""
    (tmp_path / "Hello.java").write_text(
        'public class Hello { public static void main(String[] a) { System.out.println("hi"); } }')
    subprocess.run(["javac", "-d", str(tmp_path / "classes"), str(tmp_path / "Hello.java")], check=True)
    jar = tmp_path / "hello.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(tmp_path / "classes"), "."], check=True)
    archive = tmp_path / "hello.jsa"

    def java(*options):
        run = subprocess.run(["java", *options, "-cp", str(jar), "Hello"], capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 0 and run.stdout.split()[-1:] == ["hi"], run
        return run.stdout + run.stderr

    java(f"-XX:ArchiveClassesAtExit={archive}")
    assert archive.is_file()
    os.utime(jar, (0, 0))  # the jar is not the one the archive was made over
    assert "Unable to use shared archive" in java(f"-XX:SharedArchiveFile={archive}")
    options = session_conf("local[1]", class_archive=str(archive))["spark.driver.extraJavaOptions"].split()
    quiet = [o for o in options if o.startswith(("-XX:SharedArchiveFile", "-Xlog:cds"))]
    assert len(quiet) == 3
    assert java(*quiet).strip() == "hi"


def test_the_archive_is_named_for_pyspark_and_the_jdk(monkeypatch, tmp_path):
    pytest.importorskip("pyspark")
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    first = classdata.archive_path()
    assert first is not None and first.name.startswith("spark") and first.suffix == ".jsa"
    assert classdata.archive() is None or classdata.archive() == str(first)
    other = tmp_path / "jdk2" / "bin" / "java"
    other.parent.mkdir(parents=True)
    other.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk2"))
    assert classdata.archive_path() != first  # another JDK: another archive, never a stale one
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    assert classdata.archive_path() is None

"""The spark-submit options `strata capture` hands a job (strata.spark.job_submit_args; no JVM):
what the user gave Strata and capture's jar, none of Strata's own defaults."""

import shlex

from strata.spark import job_submit_args


def test_only_what_the_user_gave_and_the_jar(monkeypatch):
    for var in ("STRATA_SPARK_MASTER", "STRATA_SPARK_CONF", "STRATA_DRIVER_MEMORY"):
        monkeypatch.delenv(var, raising=False)
    assert shlex.split(job_submit_args(None, {}, ("/j/c.jar",), None)) == ["--jars", "/j/c.jar", "pyspark-shell"]
    assert job_submit_args(None, {}, (), None) == "pyspark-shell"


def test_options_become_spark_submit_options_in_front_of_the_users_own(monkeypatch):
    monkeypatch.setenv("STRATA_SPARK_CONF", "spark.driver.extraJavaOptions=-Xss4m -XX:+UseSerialGC;spark.a=1")
    monkeypatch.setenv("STRATA_DRIVER_MEMORY", "3g")
    monkeypatch.delenv("STRATA_SPARK_MASTER", raising=False)
    args = shlex.split(job_submit_args("local[1]", {"spark.a": "2"}, ("/j/c.jar",),
                                       "--packages g:a:1 pyspark-shell"))
    assert args == ["--master", "local[1]", "--conf", "spark.driver.memory=3g",
                    "--conf", "spark.driver.extraJavaOptions=-Xss4m -XX:+UseSerialGC", "--conf", "spark.a=2",
                    "--jars", "/j/c.jar", "--packages", "g:a:1", "pyspark-shell"]
    joined = " ".join(args)
    for tuned in ("shuffle.partitions", "partitionOverwriteMode", "timeZone", "ui.enabled", "log4j"):
        assert tuned not in joined


def test_the_master_from_the_environment(monkeypatch):
    monkeypatch.setenv("STRATA_SPARK_MASTER", "local[3]")
    monkeypatch.delenv("STRATA_SPARK_CONF", raising=False)
    monkeypatch.delenv("STRATA_DRIVER_MEMORY", raising=False)
    assert shlex.split(job_submit_args(None, {}, (), None))[:2] == ["--master", "local[3]"]


def test_the_class_archive_goes_in_front_of_the_drivers_own_options(monkeypatch, tmp_path):
    """With a class-data archive (strata/classdata.py) the job's driver maps it, in front of the
    driver options the user gave Strata, else of spark-defaults.conf's; options that set class
    data sharing themselves win, and without an archive nothing is added."""
    for var in ("STRATA_SPARK_MASTER", "STRATA_DRIVER_MEMORY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    cds = "-XX:SharedArchiveFile=/j/s.jsa -Xlog:cds=off -Xlog:cds+dynamic=off"

    def driver(archive="/j/s.jsa"):
        args = shlex.split(job_submit_args(None, {}, (), None, archive))
        opts = [a for a in args if a.startswith("spark.driver.extraJavaOptions=")]
        return opts[0].split("=", 1)[1] if opts else None

    monkeypatch.setenv("STRATA_SPARK_CONF", "spark.driver.extraJavaOptions=-Xss4m")
    assert driver() == f"{cds} -Xss4m"
    monkeypatch.delenv("STRATA_SPARK_CONF")
    assert driver() == cds
    (tmp_path / "spark-defaults.conf").write_text("# site settings\nspark.driver.extraJavaOptions  -Dsite=1 -Xss8m\n")
    assert driver() == f"{cds} -Dsite=1 -Xss8m"
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions=-Xshare:off\n")
    assert driver() == "-Xshare:off"
    assert driver(None) is None


def test_a_failing_script_is_reported_as_its_own_failure(tmp_path):
    """`strata capture` of a script that exits non-zero or raises: exit code 1 and a message that
    blames the script (capture.run_script), with no JVM started (the script fails before Spark)."""
    from support.cli import strata

    (tmp_path / "ex.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "boom.py").write_text("raise ValueError('bad row')\n")
    root = str(tmp_path / "store")
    ex = strata(root, "capture", str(tmp_path / "ex.py"))
    assert ex.returncode == 1 and f"{tmp_path / 'ex.py'} exited with status 3" in ex.stderr, ex.stderr
    boom = strata(root, "capture", str(tmp_path / "boom.py"))
    assert boom.returncode == 1, boom.stderr
    assert f"{tmp_path / 'boom.py'} failed: ValueError: bad row" in boom.stderr and "--debug" in boom.stderr
    assert "Traceback" not in boom.stderr

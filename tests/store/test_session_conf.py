"""The configuration Strata starts Spark with (store.spark.session.session_conf; no JVM)."""

from store.spark.session import session_conf

LOGGING = "-Dlog4j2.configurationFile=file:"


def test_defaults_keep_spark_quiet_and_user_settings_win():
    conf = session_conf("local[1]", {"spark.sql.shuffle.partitions": "7"})
    assert conf["spark.master"] == "local[1]"
    assert conf["spark.sql.shuffle.partitions"] == "7"
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        assert conf[key].startswith(LOGGING)


def test_jvm_options_given_are_added_after_strata_logging(monkeypatch):
    monkeypatch.setenv("STRATA_SPARK_CONF", "spark.executor.extraJavaOptions=-Xss8m")
    conf = session_conf("local[1]", {"spark.driver.extraJavaOptions": "-Xss4m -XX:+UseSerialGC"})
    assert conf["spark.driver.extraJavaOptions"].startswith(LOGGING)
    assert conf["spark.driver.extraJavaOptions"].endswith(" -Xss4m -XX:+UseSerialGC")
    assert conf["spark.executor.extraJavaOptions"].startswith(LOGGING)
    assert conf["spark.executor.extraJavaOptions"].endswith(" -Xss8m")


def test_a_users_own_logging_configuration_is_left_alone():
    mine = "-Dlog4j2.configurationFile=file:/etc/mine.properties"
    conf = session_conf("local[1]", {"spark.driver.extraJavaOptions": mine})
    assert conf["spark.driver.extraJavaOptions"] == mine


def test_a_class_archive_goes_to_the_driver_only_and_quietly():
    conf = session_conf("local[1]", {"spark.driver.extraJavaOptions": "-Xss4m"}, class_archive="/c/spark.jsa")
    driver = conf["spark.driver.extraJavaOptions"]
    assert driver.startswith("-XX:SharedArchiveFile=/c/spark.jsa -Xlog:cds=off -Xlog:cds+dynamic=off ")
    assert LOGGING in driver and driver.endswith(" -Xss4m")
    assert "SharedArchiveFile" not in conf["spark.executor.extraJavaOptions"]  # other JVMs, other classpaths
    assert "SharedArchiveFile" not in session_conf("local[1]")["spark.driver.extraJavaOptions"]


def test_a_user_who_sets_class_data_sharing_keeps_theirs():
    for mine in ("-Xshare:off", "-XX:SharedArchiveFile=/mine.jsa", "-XX:ArchiveClassesAtExit=/new.jsa"):
        conf = session_conf("local[1]", {"spark.driver.extraJavaOptions": mine}, class_archive="/c/spark.jsa")
        assert "/c/spark.jsa" not in conf["spark.driver.extraJavaOptions"], mine

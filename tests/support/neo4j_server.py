"""The Neo4j server of the test suite (docs/neo4j.md, "The test server").

`build()` fetches the jars declared in tests/neo4j/pom.xml (Neo4j Community 5.26, embedded)
with Maven into build/jvm/neo4j/lib/, compiles tests/neo4j/StrataTestNeo4j.java into
build/jvm/neo4j/strata-test-neo4j.jar (its manifest names the jars) and records a class-data
sharing archive from one start and stop, which takes about a third off each later start. It runs
once: a stamp holds the hash of the pom and the launcher. `make neo4j` runs it
(`python tests/support/neo4j_server.py`); without Maven, a JDK or a reachable Maven Central it
says why in one line and the tests that need the server skip with that line.

`Server.start(home, password)` starts the launcher on a folder and waits for its Bolt URI;
`stop()` closes its stdin, and the launcher shuts Neo4j down. `admin(home, args, cwd)` runs
`neo4j-admin` from the same jars (`database import full` for the CSV target).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SOURCES = TESTS / "neo4j"
POM = SOURCES / "pom.xml"
LAUNCHER = SOURCES / "StrataTestNeo4j.java"
BUILD = ROOT / "build" / "jvm" / "neo4j"
LIB = BUILD / "lib"
JAR = BUILD / "strata-test-neo4j.jar"
ARCHIVE = BUILD / "strata-test-neo4j.jsa"
STAMP = BUILD / "built.sha256"
MAIN = "StrataTestNeo4j"
# Class data sharing from the archive; a JVM that cannot use it (another JDK) starts without it.
CDS_OPTIONS = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")
# The tests send a few small statements: C1 alone and one GC thread start faster and cost less.
TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx768m")
START_TIMEOUT = 180.0


def _archive_options() -> list[str]:
    """The class-data archive's options when it was recorded (a JVM without it starts slower)."""
    return [f"-XX:SharedArchiveFile={ARCHIVE}", *CDS_OPTIONS] if ARCHIVE.exists() else []


class Unavailable(RuntimeError):
    """The server cannot be built or started here; the message is one line saying why."""


def java() -> str:
    """The `java` the suite's Spark uses too: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise Unavailable("no java on PATH: the Neo4j test server needs Java 17 or 21")
    return found


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None and os.environ.get("JAVA_HOME"):
        candidate = Path(os.environ["JAVA_HOME"]) / "bin" / name
        found = str(candidate) if candidate.exists() else None
    if found is None:
        raise Unavailable(f"no {name} on PATH: building the Neo4j test server needs a JDK 17+")
    return found


def _digest() -> str:
    h = hashlib.sha256()
    for path in (POM, LAUNCHER):
        h.update(path.read_bytes())
    return h.hexdigest()


def built() -> bool:
    return JAR.exists() and STAMP.exists() and STAMP.read_text().strip() == _digest()


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _manifest(jars: list[str]) -> bytes:
    """A jar manifest naming the jars of lib/ (lines of at most 72 bytes, continued after a space)."""
    text = ("Class-Path: " + " ".join("lib/" + j for j in jars)).encode()
    lines = [text[:72]]
    text = text[72:]
    while text:
        lines.append(b" " + text[:71])
        text = text[71:]
    return b"Manifest-Version: 1.0\nMain-Class: " + MAIN.encode() + b"\n" + b"\n".join(lines) + b"\n"


def build(log=print) -> Path:
    """Fetch, compile and record the archive if the stamp is not current; returns the jar."""
    if built():
        return JAR
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Unavailable("Maven (mvn) not found: cannot fetch the Neo4j test server "
                          "(install maven, then run make neo4j)")
    javac, jar_tool = _tool("javac"), _tool("jar")
    log("fetching Neo4j 5.26 (tests/neo4j/pom.xml) into build/jvm/neo4j/lib with Maven ...")
    if LIB.exists():
        shutil.rmtree(LIB)
    res = subprocess.run([mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
                          "-DincludeScope=runtime", f"-DoutputDirectory={LIB}"],
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise Unavailable("Maven could not fetch the Neo4j test server (offline, or Maven Central "
                          f"unreachable?): {_last_line(res.stdout + res.stderr)}")
    jars = sorted(p.name for p in LIB.glob("*.jar"))
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        res = subprocess.run([javac, "-nowarn", "--release", "17", "-cp", str(LIB / "*"),
                              "-d", str(classes), str(LAUNCHER)], capture_output=True, text=True)
        if res.returncode != 0:
            raise Unavailable(f"javac could not compile {LAUNCHER.name}: {_last_line(res.stderr)}")
        manifest = Path(tmp) / "MANIFEST.MF"
        manifest.write_bytes(_manifest(jars))
        tmp_jar = JAR.with_suffix(".tmp")
        subprocess.run([jar_tool, "cfm", str(tmp_jar), str(manifest), "-C", str(classes), "."], check=True)
        os.replace(tmp_jar, JAR)
    ARCHIVE.unlink(missing_ok=True)
    log("recording the class-data sharing archive (one start and stop of Neo4j) ...")
    try:
        with tempfile.TemporaryDirectory() as home:
            Server.start(Path(home) / "neo4j", "strata-archive-run", archive_out=ARCHIVE).stop()
    except Unavailable as e:  # the server runs without the archive, only slower to start
        log(f"note: no class-data sharing archive ({e})")
    STAMP.write_text(_digest() + "\n")
    return JAR


_NOT_BUILT: list[str] = []  # the reason, once build() failed in this process


def ensure_built() -> Path:
    """`build()` once per process; later calls raise the same reason without retrying Maven."""
    if _NOT_BUILT:
        raise Unavailable(_NOT_BUILT[0])
    try:
        return build(log=lambda msg: print(msg, file=sys.stderr))
    except Unavailable as e:
        _NOT_BUILT.append(str(e))
        raise


@dataclass
class Server:
    """One running launcher: `uri` is its Bolt URI; the user is neo4j."""

    process: subprocess.Popen
    uri: str
    password: str
    home: Path
    started_in: float
    _stderr: list[str] = field(default_factory=list)

    user = "neo4j"

    @classmethod
    def start(cls, home: Path, password: str, *, port: int = 0, jvm_options=TEST_JVM_OPTIONS,
              pagecache_mb: int = 64, archive_out: Path | None = None) -> Server:
        if not JAR.exists():
            raise Unavailable("the Neo4j test server is not built: run make neo4j")
        cds = ([f"-XX:ArchiveClassesAtExit={archive_out}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
               if archive_out else _archive_options())
        env = {**os.environ, "STRATA_TEST_NEO4J_PASSWORD": password,
               "STRATA_TEST_NEO4J_PAGECACHE_MB": str(pagecache_mb)}
        t0 = time.perf_counter()
        proc = subprocess.Popen([java(), *jvm_options, *cds, "-jar", str(JAR), str(home), str(port)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        err: list[str] = []
        threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True).start()
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(START_TIMEOUT)
        uri = line[0].strip() if line else ""
        if not uri.startswith("bolt://"):
            proc.kill()
            proc.wait()
            why = next((ln.strip() for ln in reversed(err) if ln.startswith("error:")), None)
            raise Unavailable(why or f"the Neo4j test server printed no Bolt URI within {START_TIMEOUT:.0f} s "
                              f"(exit code {proc.returncode}): {_last_line(''.join(err))}")
        return cls(proc, uri, password, home, time.perf_counter() - t0, err)

    def stop(self, timeout: float = 60.0) -> None:
        """Close stdin (the launcher shuts Neo4j down and exits); kill it if it does not."""
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    @property
    def auth(self) -> tuple[str, str]:
        return (self.user, self.password)


def admin(home: Path, args, cwd: Path) -> subprocess.CompletedProcess:
    """`neo4j-admin ARGS` (the same jars' AdminTool) on server folder `home`, run in `cwd`."""
    if not JAR.exists():
        raise Unavailable("the Neo4j test server is not built: run make neo4j")
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run([java(), *TEST_JVM_OPTIONS, *_archive_options(), "-cp", str(JAR),
                           "org.neo4j.cli.AdminTool", *args],
                          cwd=cwd, env={**os.environ, "NEO4J_HOME": str(home)}, capture_output=True, text=True)


def main() -> int:
    """`make neo4j`: build if needed; a one-line note (exit 0) when it cannot be built here."""
    try:
        was = built()
        jar = build()
    except Unavailable as e:
        print(f"note: Neo4j test server not built: {e}; the live Neo4j tests will skip", file=sys.stderr)
        return 0
    print(f"up to date: {jar}" if was else f"built {jar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""store/eventlog.py without a server: the group commit shares fsyncs, a torn tail is skipped,
the folder commits each closed segment once and deletes it, a failed commit keeps the log, the
folder's `after` hook is told after each round whether events wait."""

from __future__ import annotations

import threading
import time

from store.eventlog import EventLog, Folder, GroupCommit, Logged, distinct
from store.interop.openlineage import canonical, canonical_key, event_key


def logged(n: int, prefix: str = "k") -> list[Logged]:
    return [Logged(f"{prefix}{i}", {"i": i}) for i in range(n)]


def committing(commits: list[list[str]]):
    """A folder's commit: reads the segments, keeps the keys of each batch in `commits`."""
    def commit(paths):
        events, read = distinct(paths)
        commits.append([e.key for e in events])
        return len(events), read
    return commit


def test_requests_that_arrive_together_share_one_fsync(tmp_path):
    log = EventLog(str(tmp_path))
    gate, entered = threading.Event(), threading.Event()
    slow = log.append

    def held(records):  # the first append waits, so the next 20 requests queue behind it
        entered.set()
        gate.wait(5)
        slow(records)

    log.append = held
    writer = GroupCommit(log)
    futures = [writer.submit(logged(1, "first"))]
    assert entered.wait(5)
    futures += [writer.submit(logged(1, f"r{i}-")) for i in range(20)]
    time.sleep(0.05)
    gate.set()
    for f in futures:
        f.result(5)
    writer.stop()
    assert log.appended == 21 and log.fsyncs == 2
    [seg] = log.rotate()
    assert len(log.read(seg)) == 21


def test_an_event_logged_with_its_canonical_text_reads_back_the_same(tmp_path):
    body = {"run": {"runId": "r"}, "eventTime": "2024-01-01T00:00:00Z", "job": {"name": "ü", "namespace": "n"}}
    text = canonical(body)
    log = EventLog(str(tmp_path))
    log.append([Logged(canonical_key(text), body, text), Logged("plain", {"i": 1}),
                Logged(canonical_key(text), {"i": 2}, canonical({"i": 2}))])  # a text that is not its key's
    [seg] = log.rotate()
    # the text comes back where it is the key's canonical JSON (the commit uses it as it is)
    assert log.read(seg) == [Logged(event_key(body), body, text), Logged("plain", {"i": 1}),
                             Logged(event_key(body), {"i": 2})]


def test_a_torn_last_line_is_skipped(tmp_path):
    log = EventLog(str(tmp_path))
    log.append(logged(3))
    log.close()
    with open(log.path(1), "ab") as fh:
        fh.write(b'{"key": "torn", "ev')
    reopened = EventLog(str(tmp_path))
    assert reopened.rotate() == [1]
    assert [e.key for e in reopened.read(1)] == ["k0", "k1", "k2"]


def test_the_folder_commits_closed_segments_then_deletes_them(tmp_path):
    log = EventLog(str(tmp_path))
    log.append(logged(5))
    log.append(logged(2))  # the same keys again: folded once
    commits: list[list[str]] = []
    folder = Folder(log, committing(commits))
    assert folder.fold_all() == 5
    assert commits == [["k0", "k1", "k2", "k3", "k4"]] and log.segments() == []
    assert folder.folded == 7 and folder.commits == 1  # every line read, duplicates too
    log.append(logged(1, "late"))
    folder.start()
    folder.notify(1)
    folder.stop()
    assert commits[-1] == ["late0"] and log.segments() == []


def test_a_failed_commit_keeps_the_log(tmp_path):
    log = EventLog(str(tmp_path))
    log.append(logged(2))

    def fail(_paths):
        raise OSError("disk full")

    folder = Folder(log, fail)
    try:
        folder.fold_all()
    except OSError:
        pass
    assert log.segments() == [1]  # still there: folded on the next round or the next start
    assert [e.key for e in EventLog(str(tmp_path)).read(1)] == ["k0", "k1"]


def test_the_folder_calls_after_each_round_with_whether_it_is_idle(tmp_path):
    log = EventLog(str(tmp_path))
    rounds: list[bool] = []
    release = threading.Event()

    def commit(paths):
        release.wait(10)  # events arriving meanwhile are waiting when the round ends
        events, read = distinct(paths)
        return len(events), read

    folder = Folder(log, commit, after=rounds.append)
    folder.start()
    log.append(logged(1, "a"))
    folder.notify(1)
    time.sleep(0.2)  # the first round is committing
    log.append(logged(1, "b"))
    folder.notify(1)
    release.set()
    deadline = time.monotonic() + 10
    while len(rounds) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rounds == [False, True]  # b waited after the first round; nothing after the second
    folder.stop()
    assert rounds == [False, True]  # a stop runs no upkeep


def test_the_folder_starts_a_round_at_most_every_gap_while_events_keep_arriving(tmp_path):
    """Events arriving during the gap wake the folder but wait for its end: one bigger commit
    per gap, not one per arrival."""
    starts: list[float] = []

    class Timed(EventLog):
        def rotate(self):  # a round's first step: its start, before any disk work of the round
            starts.append(time.monotonic())
            return super().rotate()

    log = Timed(str(tmp_path))

    def commit(paths):
        events, read = distinct(paths)
        return len(events), read

    folder = Folder(log, commit, gap_s=0.3)
    folder.start()
    began = time.monotonic()
    for i in range(30):  # for about 0.6 s on a quiet machine, longer on a busy one
        log.append(logged(1, f"e{i}-"))
        folder.notify(1)
        time.sleep(0.02)
    stopped = time.monotonic()
    folder.stop()  # cuts the gap short: the rest is folded now
    rounds = [t for t in starts if t < stopped]
    # one round per arrival would be ~30 rounds 0.02 s apart; one per gap is what the folder promises
    assert 2 <= len(rounds) <= (stopped - began) / 0.3 + 1
    gaps = [b - a for a, b in zip(rounds, rounds[1:], strict=False)]
    assert all(g >= 0.29 for g in gaps), gaps

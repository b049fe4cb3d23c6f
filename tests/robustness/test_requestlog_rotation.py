"""Item 5: the request log rotates by size, ``logs -f`` follows across a rotation, and records
of the wrong shape are skipped and counted instead of crashing ``logs``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import Cli

from thoughtline.requestlog import RequestLog


def record(n: int, **extra: object) -> dict[str, object]:
    return {"session": f"s{n:031d}", "route": "r", "api": "openai-chat", "provider": "p",
            "host": "h", "model": "m", "status": 200, "outcome": "ok", "n": n, **extra}


def test_rotates_by_size_and_reads_oldest_first(tmp_path: Path) -> None:
    log = RequestLog(tmp_path, max_bytes=600, keep=2)
    for n in range(30):
        log.write(record(n))
    files = log.files()
    assert [p.name for p in files] == ["requests.jsonl.2", "requests.jsonl.1", "requests.jsonl"]
    assert all(p.stat().st_size <= 600 for p in files)
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in files)
    numbers = [r["n"] for r in log.read()]
    assert numbers == sorted(numbers) and numbers[-1] == 29
    assert numbers[0] > 0  # the oldest file beyond keep=2 was dropped


def test_follower_loses_nothing_across_a_rotation(tmp_path: Path) -> None:
    log = RequestLog(tmp_path, max_bytes=700, keep=3)
    from thoughtline.requestlog import Follower

    log.write(record(0))
    follower = Follower(log)  # from the end: record 0 is not "new"
    seen: list[object] = []
    for n in range(1, 40):
        log.write(record(n))
        if n % 7 == 0:  # several rotations happen between some polls
            seen += [r["n"] for r in follower.poll()]
    seen += [r["n"] for r in follower.poll()]
    follower.close()
    assert len(log.files()) > 1
    assert seen == list(range(1, 40))


def test_follower_starts_over_after_truncation(tmp_path: Path) -> None:
    log = RequestLog(tmp_path)
    from thoughtline.requestlog import Follower

    log.write(record(0))
    follower = Follower(log)
    log.write(record(1))
    assert [r["n"] for r in follower.poll()] == [1]
    log.path.write_bytes(b"")
    log.write(record(2))
    assert [r["n"] for r in follower.poll()] == [2]
    follower.close()


BAD_LINES = [
    b'{"time": "yesterday", "status": 200}',
    b'{"carriers": {"reasoning": "many"}}',
    b'{"verdicts": [1, 2]}',
    b'{"status": "ok"}',
    b'[1, 2, 3]',
    b'{"torn": ',
]


def test_bad_records_are_skipped_and_counted(cli: Cli) -> None:
    log = RequestLog(cli.home / "logs")
    log.write(record(1))
    with log.path.open("ab") as handle:
        handle.write(b"\n".join(BAD_LINES) + b"\n")
    log.write(record(2))
    for args in (("logs",), ("logs", "--json")):
        result = cli.run(*args)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert f"skipped {len(BAD_LINES)} malformed log records" in result.stderr
        assert len(result.stdout.splitlines()) == 2
    assert [json.loads(line)["n"] for line in cli.run("logs", "--json").stdout.splitlines()] \
        == [1, 2]

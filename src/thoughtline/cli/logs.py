"""``thoughtline logs``: which reasoning fields each request carried, optionally followed."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from thoughtline.cli.common import console, home_dir
from thoughtline.requestlog import Follower, RequestLog
from thoughtline.termsafe import safe_line


def _status(record: dict[str, Any]) -> str:
    """What happened to the request, in a word: the HTTP status alone would say ``None`` for a
    request that never got an answer and ``200`` for a stream that broke midway."""
    status, outcome = record.get("status"), record.get("outcome", "")
    if outcome == "interrupted":
        return f"{status or 200}-broken-stream"
    if outcome == "cancelled":
        return "cancelled"
    if outcome == "unsaved":  # answered, but the answer could not be stored (see rescue/)
        return f"{status or 200}-unsaved"
    if status is None:
        return "unreachable" if outcome == "error" else "no-answer"
    return str(status)


def _line(record: dict[str, Any]) -> str:
    try:
        when = time.strftime("%H:%M:%S", time.localtime(record.get("time", 0)))
    except (OverflowError, OSError, ValueError):  # a time no clock shows (an edited file)
        when = "??:??:??"
    carriers = record.get("carriers") or {}
    carried = ", ".join(f"{k}×{v}" for k, v in sorted(carriers.items())) or "no reasoning fields"
    native = record.get("native") or {}
    extras = []
    if record.get("pads"):
        extras.append(f"{record['pads']} pad(s)")
    if native:
        extras.append("native " + ", ".join(f"{k}×{v}" for k, v in sorted(native.items())))
    if record.get("body_extras"):
        extras.append("body " + ", ".join(record["body_extras"]))
    if record.get("retries"):
        n = record["retries"]
        extras.append(f"{n} transport {'retry' if n == 1 else 'retries'}")
    for verdict in record.get("verdicts") or ():
        learned = f"drop {','.join(map(str, verdict.get('drop') or ()))}" \
            if verdict.get("drop") else "pad"
        extras.append(f"learned: {learned}")
    if record.get("attempt", 1) > 1:
        extras.append("fallback retry")
    tail = f" ({'; '.join(extras)})" if extras else ""
    session = str(record.get("session", ""))[:8]
    # Every field came from a file anyone with access to the home can edit: shown via termsafe.
    return safe_line(f"{when} {session} {_status(record)} {record.get('provider')} "
                     f"{record.get('host') or '-'} {record.get('model')} [{record.get('route')}] "
                     f"{record.get('assistant_turns', 0)} assistant turns: {carried}{tail}")


def _emit(record: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(record, ensure_ascii=False))
    else:
        console().print(_line(record), markup=False)


def _note_skipped(count: int) -> None:
    if count:
        click.echo(f"note: skipped {count} malformed log record{'s' if count != 1 else ''}",
                   err=True)


@click.command()
@click.option("-f", "--follow", is_flag=True, help="Keep printing new records as they arrive.")
@click.option("--session", "session_ref", metavar="SESSION",
              help="Only requests of this session (id or unique prefix).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.option("-n", "--lines", type=int, default=None, help="Only the last N records.")
@click.pass_context
def logs(ctx: click.Context, follow: bool, session_ref: str | None, as_json: bool,
         lines: int | None) -> None:
    """One line per request: route, status, and which reasoning fields went on the wire.

    Records never contain message text, API keys or headers. Malformed lines are skipped and
    counted; the log rotates by size and -f follows across rotations.
    """
    home = home_dir(ctx)
    session_id = None
    if session_ref:
        from thoughtline.cli.common import open_store

        store = open_store(ctx)
        try:
            session_id = store.get_session(session_ref).id
        finally:
            store.close()
    log = RequestLog(home / "logs")
    follower = Follower(log) if follow else None  # opened first: nothing falls in between
    records = list(log.read(session=session_id))
    for record in records[-lines:] if lines else records:
        _emit(record, as_json)
    _note_skipped(log.skipped)
    if follower is not None:
        _follow(follower, session_id, as_json)


def _follow(follower: Follower, session_id: str | None, as_json: bool) -> None:
    try:
        while True:
            before = follower.skipped
            for record in follower.poll():
                if session_id is None or record.get("session") == session_id:
                    _emit(record, as_json)
            _note_skipped(follower.skipped - before)
            time.sleep(0.2)
    except KeyboardInterrupt:
        return
    finally:
        follower.close()

"""``thoughtline logs``: which reasoning fields each request carried, optionally followed."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from thoughtline.cli.common import console, home_dir
from thoughtline.errors import NotFound, StoreError
from thoughtline.requestlog import Follower, RequestLog
from thoughtline.termsafe import safe_line

#: What a record of a session that was never stored says (a first request that failed leaves
#: its log record, but no session).
UNSTORED = "(no stored session)"


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


class _StoredSessions:
    """Whether a record's session is stored: each id looked up once, the store opened only when
    a record needs it (and left alone, answering "unknown", when it cannot be opened)."""

    def __init__(self, ctx: click.Context) -> None:
        self._ctx = ctx
        self._store: Any = None
        self._usable = True
        self._known: dict[str, bool] = {}

    def __call__(self, session_id: Any) -> bool | None:
        if not isinstance(session_id, str) or not session_id or not self._usable:
            return None
        if session_id not in self._known:
            try:
                if self._store is None:
                    from thoughtline.cli.common import open_store

                    self._store = open_store(self._ctx)
                self._known[session_id] = self._store.get_session(session_id).id == session_id
            except NotFound:
                self._known[session_id] = False
            except StoreError:
                self._usable = False
                return None
        return self._known[session_id]

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def _line(record: dict[str, Any]) -> str:
    try:
        when = time.strftime("%H:%M:%S", time.localtime(record.get("time", 0)))
    except (OverflowError, OSError, ValueError):  # a time no clock shows (an edited file)
        when = "??:??:??"
    carriers = record.get("carriers") or {}
    carried = ", ".join(f"{k}×{v}" for k, v in sorted(carriers.items())) or "no reasoning fields"
    native = record.get("native") or {}
    # A request that is not a turn of the session (a compaction's summary) says so first.
    extras = [f"{record['purpose']} request"] if record.get("purpose") else []
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
    if record.get("stored_session") is False:  # said last: the columns before stay in place
        extras.append(UNSTORED.strip("()"))
    tail = f" ({'; '.join(extras)})" if extras else ""
    session = str(record.get("session", ""))[:8]
    # Every field came from a file anyone with access to the home can edit: shown via termsafe.
    return safe_line(f"{when} {session} {_status(record)} {record.get('provider')} "
                     f"{record.get('host') or '-'} {record.get('model')} [{record.get('route')}] "
                     f"{record.get('assistant_turns', 0)} assistant turns: {carried}{tail}")


def _emit(record: dict[str, Any], as_json: bool, stored: _StoredSessions) -> None:
    if stored(record.get("session")) is False:
        record = {**record, "stored_session": False}
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
    log = RequestLog(home / "logs")
    session_id = _session_of(ctx, log, session_ref) if session_ref else None
    follower = Follower(log) if follow else None  # opened first: nothing falls in between
    stored = _StoredSessions(ctx)
    try:
        records = list(log.read(session=session_id))
        for record in records[-lines:] if lines else records:
            _emit(record, as_json, stored)
        _note_skipped(log.skipped)
        if follower is not None:
            _follow(follower, session_id, as_json, stored)
    finally:
        stored.close()


def _session_of(ctx: click.Context, log: RequestLog, ref: str) -> str:
    """The session id ``--session`` names: a stored session's, else one the log alone knows
    (exact id or unique prefix), said on stderr. Neither: the store's "no session" error."""
    from thoughtline.cli.common import open_store

    store = open_store(ctx)
    try:
        return store.get_session(ref).id
    except NotFound:
        wanted = ref.strip().lower()
        logged = {str(r.get("session")) for r in log.read() if r.get("session")}
        found = sorted(s for s in logged if s == wanted) or \
            sorted(s for s in logged if s.startswith(wanted))
        if len(found) != 1 or found[0] in {s.id for s in store.list_sessions()}:
            raise  # ambiguous, or a stored session's prefix that named several: the store's
        click.echo(f"note: {found[0]} {UNSTORED}: its requests are in the log, but no session "
                   "was kept (a first request that failed leaves none)", err=True)
        return found[0]
    finally:
        store.close()


def _follow(follower: Follower, session_id: str | None, as_json: bool,
            stored: _StoredSessions) -> None:
    try:
        while True:
            before = follower.skipped
            for record in follower.poll():
                if session_id is None or record.get("session") == session_id:
                    _emit(record, as_json, stored)
            _note_skipped(follower.skipped - before)
            time.sleep(0.2)
    except KeyboardInterrupt:
        return
    finally:
        follower.close()

"""``thoughtline logs``: which reasoning fields each request carried, optionally followed."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from thoughtline.cli.common import console, home_dir
from thoughtline.requestlog import RequestLog


def _line(record: dict[str, Any]) -> str:
    when = time.strftime("%H:%M:%S", time.localtime(record.get("time", 0)))
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
        learned = f"drop {','.join(verdict['drop'])}" if verdict.get("drop") else "pad"
        extras.append(f"learned: {learned}")
    if record.get("attempt", 1) > 1:
        extras.append("fallback retry")
    tail = f" ({'; '.join(extras)})" if extras else ""
    session = str(record.get("session", ""))[:8]
    return (f"{when} {session} {record.get('status')} {record.get('provider')} "
            f"{record.get('host') or '-'} {record.get('model')} [{record.get('route')}] "
            f"{record.get('assistant_turns', 0)} assistant turns: {carried}{tail}")


def _emit(record: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(record, ensure_ascii=False))
    else:
        console().print(_line(record), markup=False)


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

    Records never contain message text, API keys or headers.
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
    records = list(log.read(session=session_id))
    for record in records[-lines:] if lines else records:
        _emit(record, as_json)
    if follow:
        _follow(log, session_id, as_json)


def _follow(log: RequestLog, session_id: str | None, as_json: bool) -> None:
    from thoughtline.requestlog import parse_record

    position = log.path.stat().st_size if log.path.exists() else 0
    pending = b""
    try:
        while True:
            if log.path.exists() and log.path.stat().st_size < position:
                position = 0  # the log was truncated or replaced: start over
            if log.path.exists():
                with log.path.open("rb") as handle:
                    handle.seek(position)
                    pending += handle.read()
                    position = handle.tell()
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    record = parse_record(line)
                    if record and (session_id is None or record.get("session") == session_id):
                        _emit(record, as_json)
            time.sleep(0.2)
    except KeyboardInterrupt:
        return

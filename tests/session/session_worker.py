"""A fresh process for the session tests: resume stored sessions and send one more turn each.

Reads a JSON list of jobs on stdin; for each job prints one JSON line ``{"result": ...}`` to stdout
(and, with ``"events": true``, one ``{"event": ...}`` line per stream event as it arrives, flushed,
so a test can kill this process mid-stream). Only the public library API is used.

Job: ``{"home": DIR, "session": ID, "text": STR | null, "tool_results": [[CALL_ID, CONTENT]...],
"stream": BOOL, "events": BOOL, "log": BOOL}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from thoughtline import (
    Done,
    ReasoningDelta,
    Session,
    TextDelta,
    ThoughtlineError,
    ToolCallStarted,
    ToolResult,
    TurnOptions,
    open_store,
)
from thoughtline.requestlog import RequestLog
from thoughtline.transport import HttpTransport


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def describe(event: Any) -> dict[str, Any]:
    if isinstance(event, ReasoningDelta):
        return {"event": "reasoning", "text": event.text}
    if isinstance(event, TextDelta):
        return {"event": "text", "text": event.text}
    if isinstance(event, ToolCallStarted):
        return {"event": "tool_call", "name": event.name}
    return {"event": type(event).__name__}


async def run_job(job: dict[str, Any], transport: HttpTransport) -> dict[str, Any]:
    home = Path(job["home"])
    store = open_store(None, home)
    log = RequestLog(home / "logs") if job.get("log") else None
    try:
        session = Session.resume(store, job["session"], log=log, transport=transport)
        result: dict[str, Any] = {
            "session": session.id,
            "problems": [p.detail for p in session.problems],
            "turns_before": len(session.history),
        }
        turn: Any = job.get("text") or [ToolResult(call_id=c, content=t)
                                         for c, t in job["tool_results"]]
        try:
            done: Done | None = None
            options = TurnOptions(stream=bool(job.get("stream", True)))
            async for event in session.stream(turn, options):
                if job.get("events"):
                    emit(describe(event))
                if isinstance(event, Done):
                    done = event
            assert done is not None
            result.update(ok=True, text=done.message.text,
                          tool_calls=[c.id for c in done.message.tool_calls])
        except ThoughtlineError as exc:
            result.update(ok=False, error=str(exc), error_type=type(exc).__name__)
        result["turns_after"] = len(store.load_history(session.id).messages)
        return result
    finally:
        store.close()


async def main() -> None:
    jobs = json.loads(sys.stdin.read())
    transport = HttpTransport()  # one client for every job, as one long-lived process would
    try:
        for job in jobs:
            emit({"result": await run_job(job, transport)})
    finally:
        await transport.aclose()


if __name__ == "__main__":
    asyncio.run(main())

"""The PostgreSQL gateway benchmark rows measure real gateways on the shared store."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``benchmarks`` is a top-level package beside ``src``

from benchmarks import gateway_rows, postgres_rows  # noqa: E402

from thoughtline.store import open_store  # noqa: E402


def test_two_gateways_serve_the_benchmark_request_from_one_store(pg_store_url: str,
                                                                 tmp_path: Path) -> None:
    with gateway_rows._emulator() as upstream:
        # Long enough that starting the client threads never eats the whole window.
        rate = postgres_rows.gateway_rps(upstream, tmp_path, pg_store_url, 2, seconds=2.0)
    assert rate > 0
    with open_store(pg_store_url, tmp_path) as store:  # type: ignore[attr-defined]
        sessions = sorted(store.list_sessions(), key=lambda s: s.created_at)
        histories = [[m.message.role for m in store.load_history(s.id).messages]
                     for s in sessions]
    questions = gateway_rows.QUESTIONS
    # The history was built through the first gateway; the timed requests (through both)
    # continued it, stored like any answer (concurrent ones on one head may branch).
    assert histories[0][:4 * questions] == ["user", "assistant", "tool", "assistant"] * questions
    assert sum(len(h) for h in histories) > 4 * questions

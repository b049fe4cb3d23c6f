"""The PostgreSQL benchmark rows time the store's real writes: what they append loads back."""

from __future__ import annotations

import sys
from pathlib import Path

from store_backends import pg_url

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``benchmarks`` is a top-level package beside ``src``

from benchmarks import postgres_rows, synth  # noqa: E402

from thoughtline.store import open_store  # noqa: E402


def test_postgres_rows_measure_what_loads_back(pg_schema: str, tmp_path: Path) -> None:
    url = pg_url(pg_schema)
    rows = postgres_rows.measure(url, tmp_path / "state.db", n=3, reps=1)
    assert [r.scenario for r in rows] == [postgres_rows.SCENARIO] * 4
    assert all(r.ours and r.ours > 0 and r.floor and r.floor > 0 for r in rows)
    turns = postgres_rows.turns_of(synth.history(3))
    expected = [m for turn in turns for m in turn]
    for target in (url, str(tmp_path / "state.db")):
        with open_store(target, tmp_path) as store:  # type: ignore[attr-defined]
            sessions = store.list_sessions()
            assert len(sessions) == 3  # one process alone, then two at once
            for record in sessions:
                loaded = [m.message for m in store.load_history(record.id).messages]
                assert loaded == expected

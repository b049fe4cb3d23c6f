"""The Gemini benchmark rows time the bytes a session sends and the turn a session stores.

Run once on tiny inputs, never timed: the measured request body must be the one
``Session.build_request`` makes, and the measured fold must give the Message the whole response
decodes to.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # ``benchmarks`` is a top-level package beside ``src``

from benchmarks import gemini_rows  # noqa: E402
from benchmarks.measure import QUICK  # noqa: E402

from thoughtline import config  # noqa: E402
from thoughtline.codecs.gemini.decode import decode_response  # noqa: E402
from thoughtline.messages import dumps  # noqa: E402
from thoughtline.session import Session  # noqa: E402
from thoughtline.store import open_store  # noqa: E402


def test_request_rows_time_the_session_request(tmp_path: Path) -> None:
    history = gemini_rows.history(3)
    store = open_store(None, tmp_path)
    try:
        provider = config.provider("gemini", model=gemini_rows.MODEL)
        seed = Session.create(store, provider, tools=(gemini_rows.TOOL,))
        session = Session(store=store, record=seed.record, history=history)
        body, _ = session.build_request(stream=True)
    finally:
        store.close()
    measured = gemini_rows.request_bytes(history, gemini_rows.WireCache())
    assert measured == orjson.dumps(body)
    assert measured.count(b"thoughtSignature") == 6


def test_fold_rows_fold_to_the_whole_response() -> None:
    for shape in ("text", "calls"):
        chunks = gemini_rows.stream_chunks(shape, 40)
        folded = gemini_rows.fold(chunks)
        parsed = [orjson.loads(c) for c in chunks]
        whole = {"candidates": [{"content": {"role": "model", "parts": [
            p for c in parsed for p in c["candidates"][0]["content"]["parts"]]},
            "finishReason": "STOP"}], "usageMetadata": parsed[-1]["usageMetadata"],
            "responseId": parsed[0]["responseId"]}
        assert dumps(folded.message) == dumps(decode_response(whole, gemini_rows.ORIGIN).message)


def test_rows_run_quickly_on_small_sizes() -> None:
    rows = gemini_rows.run(QUICK, quick=True)
    assert {r.scenario for r in rows} == {"request build", "stream fold"}
    assert all(r.ours is not None and r.ours > 0 for r in rows)

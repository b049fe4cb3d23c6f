"""Child process of the resume scenario: run by path, so nothing but thoughtline gets imported.

Times (inside this fresh process) importing thoughtline, then (given ``warm DB SID``) resuming a
small session of the same API and building its request — the first use, whatever the history —
then opening ``state.db``, resuming the session, building its next request and serializing it,
and, outside that total, the request after it; then the floors: reading every row the session
has stored (canonical history and wire forms) with bare ``sqlite3`` and serializing the same body,
and reading only the rows a spliced resume reads (entries and wire forms) and serializing the
body. Prints one JSON object.
"""

import sys
import time

started = time.perf_counter()

import sqlite3  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402

from thoughtline.messages import user  # noqa: E402
from thoughtline.session import Session  # noqa: E402
from thoughtline.store import open_store  # noqa: E402


def memory(path: Path, session_id: str) -> None:
    """Bytes a resumed session keeps alive (tracemalloc), after its first request is built."""
    import gc
    import tracemalloc

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    store = open_store(path, path.parent)
    session = Session.resume(store, session_id)
    session.request_bytes([user("And the next step?")], stream=True)
    gc.collect()
    kept, peak = tracemalloc.get_traced_memory()
    print(orjson.dumps({"kept_bytes": kept - before, "peak_bytes": peak - before,
                        "turns": session.turns}).decode())
    store.close()


def main() -> None:
    imported = time.perf_counter()
    path, session_id = Path(sys.argv[1]), sys.argv[2]
    if sys.argv[3:] == ["memory"]:
        memory(path, session_id)
        return
    if sys.argv[3:] == ["process"]:  # what a chat -r process does before it sends: nothing more
        store = open_store(path, path.parent)
        Session.resume(store, session_id).request_bytes([user("And the next step?")], stream=True)
        store.close()
        return
    w0 = time.perf_counter()
    if sys.argv[3:4] == ["warm"]:  # the first use: imports and tables any history needs
        warm_path = Path(sys.argv[4])
        warm = open_store(warm_path, warm_path.parent)
        Session.resume(warm, sys.argv[5]).request_bytes([user("Warm up.")], stream=True)
        warm.close()
    w1 = time.perf_counter()
    c0 = time.process_time()
    t0 = time.perf_counter()
    store = open_store(path, path.parent)
    t1 = time.perf_counter()
    session = Session.resume(store, session_id)
    t2 = time.perf_counter()
    data = session.request_bytes([user("And the next step?")], stream=True)
    t3 = time.perf_counter()
    t4 = time.perf_counter()
    body = orjson.loads(data)
    c4 = time.process_time()
    turns = session.turns
    # The resumed session's next request (a tool loop's next step): it continues the first walk.
    n0 = time.perf_counter()
    session.request_bytes([user("And the next step?")], stream=True)
    n1 = time.perf_counter()
    store.close()
    fc0 = time.process_time()
    f0 = time.perf_counter()
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT skeleton FROM messages").fetchall()
    rows += conn.execute("SELECT data FROM payloads").fetchall()
    # The stored wire forms are rows of the session too: the floor reads everything it stores.
    rows += conn.execute("SELECT meta, data FROM wire_forms").fetchall()
    conn.close()
    floor_data = orjson.dumps(body)
    f1 = time.perf_counter()
    fc1 = time.process_time()
    # A second, stricter floor: only the rows a spliced resume reads (entries and forms).
    r0 = time.perf_counter()
    conn = sqlite3.connect(path)
    read = conn.execute("SELECT seq, message_id FROM session_messages").fetchall()
    read += conn.execute("SELECT meta, digest, data FROM wire_forms").fetchall()
    conn.close()
    orjson.dumps(body)
    r1 = time.perf_counter()
    s0 = time.perf_counter()
    orjson.dumps(body)
    s1 = time.perf_counter()
    print(orjson.dumps({
        "import_s": imported - started, "warm_s": w1 - w0, "open_s": t1 - t0, "load_s": t2 - t1,
        "build_s": t3 - t2, "dumps_s": t4 - t3, "inproc_s": t4 - t0, "cpu_s": c4 - c0,
        "next_s": n1 - n0,
        "floor_s": f1 - f0, "floor_cpu_s": fc1 - fc0, "read_floor_s": r1 - r0,
        "serialize_s": s1 - s0,
        "bytes": len(data), "same_bytes": data == floor_data, "rows": len(rows),
        "read_rows": len(read), "turns": turns,
    }).decode())


main()

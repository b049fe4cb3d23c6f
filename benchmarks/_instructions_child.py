"""Child of ``benchmarks.instructions``, run by path under valgrind: one step of a resume or a
cold build, after everything it imports (and every module-level cache) is warm, so the parent's
differences of instruction counts are the step alone.

``resume DB SID WARMDB WARMSID MODE``: resume the warm-up session and build its request, then
open ``DB`` and (MODE ``resume``) resume ``SID`` or (MODE ``build``) resume it and build its
first request; MODE ``open`` only opens the store (the baseline).
``cold API N``: build the API's 1,000-turn benchmark history N + 1 times with a new cache.
``steady API N``: warm one cache with all but its last three turns, then build the history with
those three as new messages N times.
"""

import sys
from pathlib import Path

from thoughtline.messages import user
from thoughtline.session import Session
from thoughtline.store import open_store


def resume(db: str, sid: str, warm_db: str, warm_sid: str, mode: str) -> None:
    warm = open_store(Path(warm_db), Path(warm_db).parent)
    Session.resume(warm, warm_sid).request_bytes([user("warm")], stream=True)
    warm.close()
    store = open_store(Path(db), Path(db).parent)
    if mode != "open":
        session = Session.resume(store, sid)
        if mode == "build":
            session.request_bytes([user("And the next step?")], stream=True)
    store.close()


def cold(api: str, times: int) -> None:
    from benchmarks.instructions import builder

    build = builder(api)
    for _ in range(times + 1):
        build()


def steady(api: str, times: int) -> None:
    from benchmarks.instructions import builder

    build = builder(api, steady=True)
    for _ in range(times):
        build()


if sys.argv[1] == "resume":
    resume(*sys.argv[2:7])
elif sys.argv[1] == "steady":
    steady(sys.argv[2], int(sys.argv[3]))
else:
    cold(sys.argv[2], int(sys.argv[3]))

"""A separate store process for the concurrency tests (run as a script, not collected).

``store_worker.py TARGET SESSION TAG COUNT``: opens the store, prints ``ready``, waits for a line
on stdin (so every worker starts together), then COUNT times: appends a three-message turn,
learns a verdict for one shared key and merges a fingerprint into the session's config, each its
own transaction. Prints ``done`` at the end. An empty SESSION only opens the store (migrations)
and creates a session.
"""

from __future__ import annotations

import sys
from pathlib import Path

from thoughtline.messages import Message, Reasoning, user
from thoughtline.store import open_store
from thoughtline.verdicts import Verdict


def _with_fingerprint(tag: str):  # type: ignore[no-untyped-def]
    def update(current):  # type: ignore[no-untyped-def]
        return {**current, "fingerprints": [*current.get("fingerprints", []), tag]}
    return update


def main() -> None:
    target, sid, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    print("ready", flush=True)
    sys.stdin.readline()
    store = open_store(target, Path("/nonexistent-home"))
    try:
        if not sid:
            store.create_session(title=tag)
        for i in range(count if sid else 0):
            thinking = Reasoning(kind="signed", text=f"{tag}{i}", signature=f"{tag}{i}" * 500)
            store.append(sid, [user(f"{tag}{i}:q"), Message(role="assistant", parts=(thinking,)),
                               user(f"{tag}{i}:end")])
            store.record_verdict(Verdict(provider="p", host="h", model="m",
                                         drop=frozenset({f"{tag}{i}"}), reason=tag))
            store.update_model_config(sid, _with_fingerprint(f"{tag}{i}"))
    finally:
        store.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()

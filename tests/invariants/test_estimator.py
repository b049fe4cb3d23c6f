"""The estimator prices what will be sent.

A field a verdict strips goes off the wire, so it is not counted either — also when the verdict
was learned by another session and sits only in the store's global ledger. The
estimate of a session's next request is checked against the very bytes ``Session`` would send.
"""

from __future__ import annotations

from pathlib import Path

from thoughtline import Session, open_store
from thoughtline.compaction import session_estimator
from thoughtline.config import ProviderConfig
from thoughtline.estimate import text_tokens
from thoughtline.messages import Message, Origin, Reasoning, Text, user
from thoughtline.verdicts import Verdict

PROVIDER = ProviderConfig(id="custom", base_url="http://127.0.0.1:9/v1", model="relay-model")
WHERE = Origin(api="openai-chat", provider="custom", host="127.0.0.1", model="relay-model")
THOUGHT = "a long line of careful reasoning " * 40


def _session(home: Path) -> Session:
    session = Session.create(open_store(None, home), PROVIDER)
    session.append([user("q"), Message(role="assistant", origin=WHERE, parts=(
        Reasoning(kind="text", text=THOUGHT, origin=WHERE), Text(text="answer")))])
    return session


def _estimate_and_sent(session: Session) -> tuple[int, int]:
    pending = [user("and then?")]
    sent = session.request_bytes(pending, stream=True)
    return session_estimator(session).raw(session.history, pending), text_tokens(sent.decode())


def test_a_field_stripped_by_a_ledger_verdict_is_not_priced(tmp_path: Path) -> None:
    session = _session(tmp_path)
    before, sent_before = _estimate_and_sent(session)
    assert before == sent_before  # the control: reasoning is on the wire and priced
    drop = Verdict(provider="custom", host="127.0.0.1", model="relay-model",
                   drop=frozenset({"reasoning_content", "reasoning"}), reason="unknown field")
    session.store.record_verdict(drop)  # learned by another session for this route
    after, sent_after = _estimate_and_sent(session)
    assert THOUGHT.encode() not in session.request_bytes(stream=True)
    assert after == sent_after
    assert after < before - len(THOUGHT) // 4
    session.store.close()

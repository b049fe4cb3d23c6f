"""Issue 24 on Interactions: a resumed session's request is spliced from its turns' stored steps,
and where the server's chain continues is read from the turns' stored facts (what each says, its
stamp, its origin) — nothing decoded, the same request a fresh encode makes; a history edited
behind the chain still falls back to sending everything."""

from __future__ import annotations

from pathlib import Path

import orjson
from test_interactions_codec import API, BASE, CODEC, MODEL, PLAN, _stamped_history, _user

from thoughtline import ProviderConfig, Session, open_store
from thoughtline.codecs.base import RequestSpec
from thoughtline.replay import answered

PROVIDER = ProviderConfig(id=API, api=API, base_url=BASE, model=MODEL, auth="x-goog-api-key")
PENDING = _user("q-next")


def _fresh(history: list) -> bytes:  # type: ignore[type-arg]
    view = list(answered(history, [PENDING]))
    return CODEC.encode_request(view, PLAN, RequestSpec(model=MODEL, stream=True)).raw


def _resumed(tmp_path: Path, history: list) -> bytes:  # type: ignore[type-arg]
    """The next request of a session holding ``history``, resumed (and checked undecoded)."""
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, PROVIDER)
        session.append(history)
        resumed = Session.resume(store, session.id)
        sent = resumed.request_bytes([PENDING], stream=True)
        assert resumed._history.decoded is False
    return sent


def test_a_resumed_chain_continues_from_the_stored_facts_without_decoding(
        tmp_path: Path) -> None:
    history = _stamped_history(3)
    sent = _resumed(tmp_path, history)
    assert sent == _fresh(history)
    body = orjson.loads(sent)
    assert body["previous_interaction_id"] == "v1_3"
    assert body["input"] == [{"type": "user_input",
                              "content": [{"type": "text", "text": "q-next"}]}]


def test_a_resumed_history_changed_behind_the_chain_sends_everything(tmp_path: Path) -> None:
    history = _stamped_history(2)
    history[0] = _user("q1, rewritten")  # the stamps no longer match what came before
    sent = _resumed(tmp_path, history)
    assert sent == _fresh(history)
    body = orjson.loads(sent)
    assert "previous_interaction_id" not in body
    assert body["input"][0]["content"][0]["text"] == "q1, rewritten"

"""A client's compaction is stored through the gateway's one persistence path (``persist``), the
path of its turns: its bundle goes after the turns it summarized — on a branch when another
writer went on meanwhile, never after turns it never saw — and one that cannot be stored is
saved to a rescue file, the client told it was not stored."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from responses_face_support import ResponsesAgent, item_json, responses_client
from test_gateway_replay import QUESTIONS
from test_gateway_responses import serving

from thoughtline.errors import StoreError
from thoughtline.gateway import compaction as gateway_compaction
from thoughtline.gateway.app import Gateway
from thoughtline.messages import Message, user
from thoughtline.testing import ChatEmulator

SESSION_HEADER = "X-Thoughtline-Session"
MODEL = "up/deepseek-v4-pro"


def _answered(origin: str) -> ResponsesAgent:
    """One exchange whose tool answered ~60 KB: a conversation a compaction can shrink (one that
    cannot gets a 400 instead, issue 46)."""
    agent = ResponsesAgent(responses_client(origin), model=MODEL)
    agent.ask(QUESTIONS[0])
    agent.step(stream=False)
    agent.input[-1]["output"] = "a long tool output line\n" * 2500
    agent.step(stream=False)
    return agent


def _compact(agent: ResponsesAgent) -> tuple[str, dict[str, Any]]:
    """Codex's remote compaction (the trigger as the last item): the session header and the
    one ``compaction`` item."""
    args = agent._args()
    args["input"] = [*agent.input, {"type": "compaction_trigger"}]
    raw = agent.client.responses.with_raw_response.create(**args)
    (item,) = [item_json(i) for i in raw.parse().output]
    return raw.headers.get(SESSION_HEADER, ""), item


def _history(gateway: Gateway, session: str) -> list[Message]:
    return [m.message for m in gateway.store.store.load_history(session).messages]


@contextmanager
def _racing(gateway: Gateway, session: str) -> Iterator[None]:
    """Another writer appends to ``session`` while the compaction's summary is being made."""
    made = gateway_compaction.compact

    async def compact(turn: Any, engine: Any, **kwargs: Any) -> tuple[Message, int]:
        result = await made(turn, engine, **kwargs)
        gateway.store.store.append(session, [user("written by another client meanwhile")])
        return result

    gateway_compaction.compact = compact  # type: ignore[assignment]
    try:
        yield
    finally:
        gateway_compaction.compact = made  # type: ignore[assignment]


@contextmanager
def _full_disk(gateway: Gateway) -> Iterator[None]:
    """The gateway's store failing every indexed append (the rescue file still writable)."""
    store = gateway.store.store

    def full(*args: object, **kwargs: object) -> None:
        raise StoreError("disk full (injected)")

    store.append_indexed = full  # type: ignore[method-assign]
    try:
        yield
    finally:
        del store.append_indexed  # the store's own method again


def _bundles(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if "retained" in m.native.get("thoughtline", {})]


def test_a_compaction_racing_another_writer_goes_on_a_branch(deepseek: ChatEmulator,
                                                            tmp_path: Path) -> None:
    with serving(deepseek, tmp_path) as (origin, gateway):
        agent = _answered(origin)
        session = agent.session
        before = _history(gateway, session)
        with _racing(gateway, session):
            branch, item = _compact(agent)
        assert branch and branch != session  # the response names the branch it is stored on
        original = _history(gateway, session)
        on_branch = _history(gateway, branch)
        assert gateway.store.store.get_session(branch).parent_id == session
        # the other writer's turn stays where it was; the bundle is not after it
        assert original[:-1] == before and original[-1].text.endswith("meanwhile")
        assert not _bundles(original)
        assert on_branch[:-1] == before and _bundles(on_branch) == on_branch[-1:]
        # and the client goes on from its compaction item: found on the branch
        agent.input = [i for i in agent.input if i.get("role") == "user"] + [item]
        agent.ask("And in Oslo?")
        agent.step(stream=False)
    assert all(r.status == 200 for r in deepseek.received)
    assert "meanwhile" not in deepseek.received[-1].raw.decode()  # not the other writer's turn


def test_a_compaction_that_cannot_be_stored_is_rescued_and_reported(
        deepseek: ChatEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serving(deepseek, tmp_path) as (origin, gateway):
        agent = _answered(origin)
        before = _history(gateway, agent.session)
        monkeypatch.setattr("thoughtline.persist.WRITE_ATTEMPTS", (0.0,))
        with _full_disk(gateway), pytest.raises(openai.APIStatusError) as failed:
            _compact(agent)
        assert failed.value.status_code >= 500
        assert _history(gateway, agent.session) == before  # nothing of it is stored
    (rescued,) = sorted((tmp_path / "rescue").iterdir())
    record = orjson.loads(rescued.read_bytes())
    assert record["session"] == agent.session and len(record["messages"]) == 1
    assert "retained" in record["messages"][0]["native"]["thoughtline"]

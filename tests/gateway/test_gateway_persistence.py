"""The gateway stores a turn once, where it belongs, and tells the client what is stored
(issue 23, items 6 and 7): the same path as the CLI's ``Session`` (``persist.write_turn``).

* A write that fails is not made again behind the client's back: with SQLite locked by another
  writer the client hears "not stored" and nothing is stored (the turn is in a rescue file).
* A PostgreSQL ``COMMIT`` cut after the write landed is read back, never written twice.
* A store that cannot be written (a full disk, the rescue file failing too) ends a stream with an
  error event, not a broken body.
* A client that regenerates an answer and goes on continues on a branch: no stored history holds
  the same tool result twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_support import (
    MODEL,
    SESSION_HEADER,
    RunningGateway,
    StrippingAgent,
    running_gateway,
)

from thoughtline import persist
from thoughtline.errors import StoreError, StoreUnavailable
from thoughtline.messages import Message
from thoughtline.store.base import StoredMessage
from thoughtline.testing import ChatEmulator


def _post(base_url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(base_url + "/chat/completions", content=orjson.dumps(body), timeout=60,
                      headers={"content-type": "application/json", **headers})


def _first_turn(gw: RunningGateway) -> tuple[str, list[dict[str, Any]]]:
    """One answered question; the history a client sends next (its answer stripped)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Hello"}]
    answer = _post(gw.base_url, {"model": MODEL, "messages": messages})
    assert answer.status_code == 200, answer.text
    text = answer.json()["choices"][0]["message"]["content"]
    return answer.headers[SESSION_HEADER], [*messages, {"role": "assistant", "content": text},
                                            {"role": "user", "content": "And then?"}]


def _events(response: httpx.Response) -> list[Any]:
    return [orjson.loads(line[6:]) for line in response.text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def _stored(gw: RunningGateway, session: str) -> list[Message]:
    return [m.message for m in gw.store.load_history(session).messages]


def _rescued(tmp_path: Path) -> list[dict[str, Any]]:
    folder = tmp_path / "rescue"
    return [orjson.loads(p.read_bytes()) for p in sorted(folder.iterdir())] if folder.exists() \
        else []


@contextmanager
def _swapped(gw: RunningGateway, name: str, replacement: Any) -> Iterator[None]:
    """The gateway's store with one method replaced (the store double of a failing backend)."""
    original = getattr(gw.store, name)
    setattr(gw.store, name, replacement)
    try:
        yield
    finally:
        setattr(gw.store, name, original)


def test_a_write_blocked_by_another_writer_is_reported_and_never_made_later(
        deepseek: ChatEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(persist, "WRITE_ATTEMPTS", (0.0,))  # one try: the busy timeout's wait
    with running_gateway(deepseek, tmp_path) as gw:
        session, messages = _first_turn(gw)
        locker = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            body = {"model": MODEL, "messages": messages, "stream": True}
            with httpx.stream("POST", gw.base_url + "/chat/completions", timeout=60,
                              content=orjson.dumps(body),
                              headers={"content-type": "application/json"}) as response:
                lines = response.iter_lines()
                told = next(orjson.loads(line[6:]) for line in lines
                            if line.startswith("data: ") and "error" in line)
                locker.rollback()  # the lock is gone: a second write would now succeed
                rest = list(lines)
        finally:
            if locker.in_transaction:
                locker.rollback()
            locker.close()
        stored = _stored(gw, session)
    assert "could not be stored" in told["error"]["message"]
    assert "data: [DONE]" not in rest
    assert [m.role for m in stored] == ["user", "assistant"]  # told "not stored": not stored
    [saved] = _rescued(tmp_path)  # ... and nothing lost
    assert saved["session"] == session
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_commit_cut_after_the_write_landed_is_stored_once_and_answered(
        deepseek: ChatEmulator, tmp_path: Path, stream: bool) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        session, messages = _first_turn(gw)
        real = gw.store.append_indexed
        calls: list[int] = []

        def cut_at_commit(*args: Any, **kwargs: Any) -> list[StoredMessage]:
            calls.append(1)
            real(*args, **kwargs)  # the COMMIT reached the server ...
            raise StoreUnavailable("store: the connection broke while committing; whether "
                                   "the write landed is unknown", retry_safe=False)

        with _swapped(gw, "append_indexed", cut_at_commit):
            answer = _post(gw.base_url, {"model": MODEL, "messages": messages, "stream": stream})
        stored = _stored(gw, session)
    assert answer.status_code == 200, answer.text
    if stream:
        assert "data: [DONE]" in answer.text and not any("error" in e for e in _events(answer))
    assert calls == [1]  # one write: never made again after the cut
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert _rescued(tmp_path) == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_commit_cut_before_the_write_landed_is_an_error_and_nothing_is_stored(
        deepseek: ChatEmulator, tmp_path: Path, stream: bool) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        session, messages = _first_turn(gw)
        calls: list[int] = []

        def lost(*args: Any, **kwargs: Any) -> list[StoredMessage]:
            calls.append(1)
            raise StoreUnavailable("store: the connection broke while committing; whether "
                                   "the write landed is unknown", retry_safe=False)

        with _swapped(gw, "append_indexed", lost):
            answer = _post(gw.base_url, {"model": MODEL, "messages": messages, "stream": stream})
        stored = _stored(gw, session)
    if stream:
        assert answer.status_code == 200  # the stream had begun: its end is an error event
        [error] = [e for e in _events(answer) if "error" in e]
        told = error["error"]["message"]
    else:
        assert answer.status_code == 503
        told = answer.json()["error"]["message"]
    assert "nothing of it was stored" in told
    assert calls == [1]
    assert [m.role for m in stored] == ["user", "assistant"]
    [saved] = _rescued(tmp_path)
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant"]


def test_a_full_disk_ends_the_stream_with_an_error_event(
        deepseek: ChatEmulator, tmp_path: Path) -> None:
    blocker = tmp_path / "full"
    blocker.write_text("stands in for a disk with no room for a rescue file")
    with running_gateway(deepseek, tmp_path) as gw:
        session, messages = _first_turn(gw)
        gw.gateway.conversations.rescue_dir = blocker / "rescue"
        calls: list[int] = []

        def full(*args: Any, **kwargs: Any) -> Sequence[StoredMessage]:
            calls.append(1)
            raise StoreError(f"state database {tmp_path / 'state.db'}: database or disk is full")

        with _swapped(gw, "append_indexed", full):
            answer = _post(gw.base_url, {"model": MODEL, "messages": messages, "stream": True})
        stored = _stored(gw, session)
    assert answer.status_code == 200
    [error] = [e for e in _events(answer) if "error" in e]  # a whole body, ending in an error
    assert "disk is full" in error["error"]["message"]
    assert "rescue file" in error["error"]["message"]
    assert len(calls) == len(persist.WRITE_ATTEMPTS)  # retried: nothing was written
    assert [m.role for m in stored] == ["user", "assistant"]


@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "session-header"])
def test_regenerate_and_continue_goes_on_a_branch_without_a_duplicated_tool_result(
        deepseek: ChatEmulator, tmp_path: Path, named: bool) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        agent = StrippingAgent(gw.client())
        agent.ask("What's the weather in Oslo?")
        assert agent.step(stream=False).get("tool_calls")
        assert not agent.step(stream=False).get("tool_calls")
        original = agent.session
        agent.messages.pop()  # the client regenerates the last answer ...
        assert not agent.step(stream=True).get("tool_calls")
        branch = agent.session
        if named:  # a client that names the session it was told (the branch)
            agent.headers = {SESSION_HEADER: branch}
        agent.ask("And tomorrow?")  # ... and goes on from the regenerated one
        agent.step(stream=False)
        assert agent.session == branch
        continued = orjson.loads(deepseek.received[-1].raw)
        if named:  # regenerating again, inside the branch, makes a branch of the branch
            agent.messages[3:] = []
            agent.step(stream=False)
            third = agent.session
            assert third != branch and gw.store.get_session(third).parent_id == branch
            assert [m.role for m in _stored(gw, third)] == ["user", "assistant", "tool",
                                                           "assistant"]
        first = _stored(gw, original)
        second = _stored(gw, branch)
        record = gw.store.get_session(branch)
    assert branch != original and record.parent_id == original and record.fork_point == 2
    assert [m.role for m in first] == ["user", "assistant", "tool", "assistant"]
    assert [m.role for m in second][:6] == ["user", "assistant", "tool", "assistant", "user",
                                            "assistant"]
    for history in (first, second):
        results = [r.call_id for m in history for r in m.tool_results]
        assert len(results) == len(set(results)) == 1  # the tool result once, in each
    # What ``chat -r`` on it would send, the gateway sent: the tool result once.
    assert sum(m["role"] == "tool" for m in continued["messages"]) == 1
    # ... and every answer with its own reasoning, inherited ones included (never the pad).
    shown = [m.get("reasoning_content") for m in continued["messages"]
             if m["role"] == "assistant"]
    assert len(shown) == 2 and all(r and r.strip() for r in shown)


def test_lessons_that_cannot_be_stored_never_cost_the_answer(tmp_path: Path) -> None:
    access = tmp_path / "access.jsonl"
    with ChatEmulator("plain") as relay, running_gateway(
            relay, tmp_path, access_log=str(access), name="cu", provider="custom",
            model="demo-reasoner") as gw:
        body: dict[str, Any] = {"model": "cu/demo-reasoner",
                                "messages": [{"role": "user", "content": "Hello"}]}
        first = _post(gw.base_url, body)
        session = first.headers[SESSION_HEADER]
        body["messages"] += [{"role": "assistant",
                              "content": first.json()["choices"][0]["message"]["content"]},
                             {"role": "user", "content": "And then?"}]
        relay.fail_next(400, {"error": {"message": "Unrecognized request argument supplied: "
                                                   "reasoning_content"}})

        def unwritable(*args: Any, **kwargs: Any) -> Any:
            raise StoreError("state database: disk I/O error")

        with _swapped(gw, "update_model_config", unwritable):
            answer = _post(gw.base_url, body)
        stored = _stored(gw, session)
    assert answer.status_code == 200, answer.text  # learned and retried: the answer stands
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    last = orjson.loads(access.read_bytes().splitlines()[-1])
    assert "disk I/O error" in last["lessons_unsaved"]

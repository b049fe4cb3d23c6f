"""Issue 24: the core's one wire cache (``thoughtline.wire.cache``) over a ``TurnEncoder``.

- each turn is encoded once: the request's bytes and the stored form are the same bytes (the
  write-through after an append encodes only the answer, which the next request then reuses);
- a history that only grew continues the previous walk (only the new turns are walked);
- a turn whose bytes depend on where it is (a context) gets one stored form per context, and a
  resumed request takes each turn's form under its context now — byte-identical to a fresh
  encode, nothing decoded — with a property over random histories;
- the migration that adds the context drops the old rows (never trusted) and the next append
  writes the forms again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from thoughtline import ProviderConfig, Session, open_store
from thoughtline.codecs import registry
from thoughtline.codecs.base import Context, Encoded, RequestSpec, TurnFacts, Walk, walk_turns
from thoughtline.codecs.flat import Counts
from thoughtline.codecs.openai_chat.codec import OpenAIChat
from thoughtline.codecs.openai_chat.encode import TURNS, ChatTurns, encode_message
from thoughtline.messages import Message, Reasoning, Text, ToolCall, ToolResult, tool_results, user
from thoughtline.replay import ReplayPlan, answered
from thoughtline.store.db import Database
from thoughtline.wire.cache import WireCache

PENDING = user("and the next step?")
DEEPSEEK = ProviderConfig(id="deepseek", base_url="https://api.deepseek.com",
                          model="deepseek-reasoner")


class CountingTurns(ChatTurns):
    """The Chat turn encoder, counting ``encode_turn`` calls per message identity."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Message] = []

    def encode_turn(self, message: Message, plan: ReplayPlan,
                    context: Context) -> tuple[bytes, Counts]:
        self.calls.append(message)
        return super().encode_turn(message, plan, context)


@dataclass(frozen=True, slots=True)
class LoopState:
    loop: int  # the first turn of the current tool loop


class LoopTurns(ChatTurns):
    """A non-flat encoder: a turn keeps its reasoning only inside the current tool loop, so its
    bytes depend on where the history ends (the context: "loop" or "")."""

    flat = False

    def __init__(self) -> None:
        super().__init__()
        self.version = "loop-test-1"
        self.calls: list[tuple[Message, Context]] = []

    def start(self, plan: ReplayPlan, spec: RequestSpec,
              facts: Sequence[TurnFacts]) -> LoopState:
        loop = next((i + 1 for i in range(len(facts) - 1, -1, -1) if facts[i].opens), 0)
        return LoopState(loop=loop)

    def context(self, state: LoopState, index: int, facts: TurnFacts) -> Context:  # type: ignore[override]
        return "loop" if index >= state.loop and facts.role == "assistant" else ""

    def encode_turn(self, message: Message, plan: ReplayPlan,
                    context: Context) -> tuple[bytes, Counts]:
        self.calls.append((message, context))
        items = encode_message(message, plan)
        if context != "loop":
            items = [{k: v for k, v in item.items() if k != "reasoning_content"}
                     for item in items]
        return b",".join(map(orjson.dumps, items)), self.count(items)

    def advance(self, state: LoopState, facts: TurnFacts, context: Context,  # type: ignore[override]
                after: Counts) -> LoopState:
        return state

    def state_json(self, state: LoopState) -> int:  # type: ignore[override]
        return state.loop

    def state_of(self, value: Any) -> LoopState:  # type: ignore[override]
        return LoopState(loop=int(value))


class LoopChat(OpenAIChat):
    api = "loop-chat"
    turns = LoopTurns()


@pytest.fixture()
def loop_chat() -> Iterator[LoopChat]:
    codec = LoopChat()
    registry.register("loop-chat", codec)
    try:
        yield codec
    finally:
        registry.unregister("loop-chat")


LOOP_CHAT = ProviderConfig(id="deepseek", api="loop-chat", base_url="https://api.deepseek.com",
                           model="deepseek-reasoner")


def _answer(text: str, call: str | None = None) -> Message:
    parts: list[Any] = [Reasoning(kind="text", text=f"thinking about {text}"), Text(text=text)]
    if call:
        parts.append(ToolCall(id=call, name="f", arguments="{}"))
    return Message(role="assistant", parts=tuple(parts))


def _result(call: str) -> Message:
    return tool_results([ToolResult(call_id=call, content="ok")])


def _fresh(codec: Any, history: Sequence[Message], session: Session) -> bytes:
    """What a fresh encode of the same view gives (every turn encoded, no cache)."""
    from thoughtline.turn import TurnEngine

    turn = session._turn([PENDING])
    plan = TurnEngine.plan(turn)
    view = list(answered(list(history), [PENDING]))
    return walk_turns(codec.turns, view, plan, TurnEngine.spec(turn, stream=True)).raw


def test_each_turn_is_encoded_once_for_the_request_and_its_stored_form(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counting = CountingTurns()
    monkeypatch.setattr(OpenAIChat, "turns", counting)
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, DEEPSEEK)
        question = user("q1")
        session.request_bytes([question], stream=True)
        assert counting.calls == [question]
        answer = _answer("a1")
        session._store_turn([question, answer])  # what the sink does with the answer
        # The write-through encoded the answer only (the question's bytes were the request's).
        assert counting.calls == [question, answer]
        session.request_bytes([PENDING], stream=True)
        assert counting.calls == [question, answer, PENDING]  # the walk continued
        rows = store.load_wire_forms(session.id, session.wire_cache.digest(session.codec,
                                                                          _plan(session)))
        data = {mid: forms[""][0] for mid, forms in rows.forms.items()}
        assert list(data.values()) == [counting.encode_turn(question, _plan(session), "")[0],
                                       counting.encode_turn(answer, _plan(session), "")[0]]


def _plan(session: Session) -> ReplayPlan:
    from thoughtline.turn import TurnEngine

    return TurnEngine.plan(session._turn([]))


def test_a_history_that_only_grew_walks_only_its_new_turns() -> None:
    counting = CountingTurns()
    codec = OpenAIChat()
    codec.turns = counting  # type: ignore[misc]
    cache = WireCache()
    from thoughtline.replay import plan as make_plan

    plan = make_plan(codec.resolve("deepseek", None, "deepseek-reasoner"))
    spec = RequestSpec(model="m", stream=True)
    history = [user("q"), _answer("a")]
    first = cache.encode(codec, history, plan, spec)
    assert len(counting.calls) == 2
    grown = [*history, user("q2")]
    second = cache.encode(codec, grown, plan, spec)
    assert counting.calls[2:] == [grown[2]]
    assert second.raw == walk_turns(TURNS, grown, plan, spec).raw
    assert first.raw == walk_turns(TURNS, history, plan, spec).raw
    # The earlier request's index still describes the earlier request.
    assert isinstance(first.index, type(second.index))
    assert len(first.index.walk.turns) == 2 and len(second.index.walk.turns) == 3


def test_a_turn_leaving_the_loop_gets_its_own_stored_form_and_resumes_spliced(
        tmp_path: Path, loop_chat: LoopChat) -> None:
    history = [user("q"), _answer("a", call="c1"), _result("c1"), _answer("b")]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, LOOP_CHAT)
        session.append(history)
        later = [user("next"), _answer("c")]
        session.append(later)  # the loop moved: history[1] and [3] now go without reasoning
        whole = [*history, *later]
        digest = session.wire_cache.digest(loop_chat, _plan(session))
        resumed = Session.resume(store, session.id)
        assert resumed.request_bytes([PENDING], stream=True) == _fresh(loop_chat, whole, session)
        assert resumed._history.decoded is False
        rows = store.load_wire_forms(session.id, digest).forms
    ids = session._ids
    assert ids is not None
    assert set(rows[ids[1]]) == {"", "loop"}  # the same turn under two contexts
    assert b"thinking about a" in rows[ids[1]]["loop"][0]
    assert b"thinking about a" not in rows[ids[1]][""][0]
    assert set(rows[ids[0]]) == {""}
    assert orjson.loads(rows[ids[1]]["loop"][1])["role"] == "assistant"


TURNS_ST = st.lists(st.sampled_from(["user", "answer", "call"]), min_size=1, max_size=10)


def _history_of(kinds: list[str]) -> list[Message]:
    out: list[Message] = []
    for n, kind in enumerate(kinds):
        if kind == "user":
            out.append(user(f"q{n}"))
        elif kind == "answer":
            out.append(_answer(f"a{n}"))
        else:
            out += [_answer(f"a{n}", call=f"c{n}"), _result(f"c{n}")]
    return out


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(first=TURNS_ST, then=TURNS_ST)
def test_resumed_requests_over_contexts_equal_a_fresh_encode(
        tmp_path_factory: pytest.TempPathFactory, first: list[str], then: list[str]) -> None:
    codec = LoopChat()
    registry.register("loop-chat", codec)
    try:
        home = tmp_path_factory.mktemp("loop")
        start, more = _history_of(first), _history_of(then)
        with open_store(home / "state.db", home) as store:
            session = Session.create(store, LOOP_CHAT)
            session.append(start)
            resumed = Session.resume(store, session.id)
            assert resumed.request_bytes([PENDING], stream=True) == _fresh(codec, start, session)
            resumed.append(more)
            both = [*start, *more]
            assert resumed.request_bytes([PENDING], stream=True) == _fresh(codec, both, session)
            again = Session.resume(store, session.id)
            assert again.request_bytes([PENDING], stream=True) == _fresh(codec, both, session)
            settled = isinstance(answered(both, [PENDING]), type(answered([], [PENDING])))
            assert again._history.decoded is not settled
    finally:
        registry.unregister("loop-chat")


def test_the_context_migration_drops_old_rows_and_the_next_append_rewrites(
        tmp_path: Path) -> None:
    from thoughtline.store import migrations

    history = [user("q"), _answer("a")]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, DEEPSEEK)
        session.append(history)
    raw = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    names = [m.__name__ for m in migrations.MIGRATIONS]
    version = names.index("wire_forms_by_context") + 1  # (later migrations may follow it)
    assert raw.execute("SELECT name FROM schema_migrations WHERE version = ?",
                       (version,)).fetchone() == ("wire_forms_by_context",)
    # Pretend the store is from before the migration: an old-shaped table with a row in it.
    raw.execute("DELETE FROM schema_migrations WHERE version = ?", (version,))
    raw.execute("DROP TABLE wire_forms")
    raw.execute("CREATE TABLE wire_forms (message_id TEXT NOT NULL, plan TEXT NOT NULL, "
                "meta TEXT NOT NULL, digest TEXT NOT NULL, data BLOB NOT NULL, "
                "PRIMARY KEY (message_id, plan))")
    raw.execute("INSERT INTO wire_forms VALUES ('x', 'plan:old', '{\"r\":\"user\"}', 'd', "
                "x'00')")
    raw.close()
    with open_store(tmp_path / "state.db", tmp_path) as store:
        resumed = Session.resume(store, session.id)
        assert resumed.request_bytes([PENDING], stream=True) == _fresh(
            registry.codec("openai-chat"), history, resumed)
        resumed.append([user("more")])
    raw = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    columns = [row[1] for row in raw.execute("PRAGMA table_info(wire_forms)")]
    plans = [row[0] for row in raw.execute("SELECT plan FROM wire_forms")]
    raw.close()
    assert "context" in columns
    assert "plan:old" not in plans
    assert sum(1 for p in plans if not p.startswith(("scan:", "walk:"))) == 3  # every turn again
    assert Database  # (the store's own database type opened it: nothing else touched the file)


def test_a_walk_hands_assemble_the_turns_facts_and_afters() -> None:
    seen: list[Walk[Any, Any]] = []

    class Spy(ChatTurns):
        def assemble(self, walk: Walk[None, Counts], spec: RequestSpec,
                     plan: ReplayPlan) -> Encoded:
            seen.append(walk)
            return super().assemble(walk, spec, plan)

    codec = OpenAIChat()
    codec.turns = Spy()  # type: ignore[misc]
    from thoughtline.replay import plan as make_plan

    plan = make_plan(codec.resolve("deepseek", None, "deepseek-reasoner"))
    history = [user("q"), _answer("a", call="c"), _result("c")]
    WireCache().encode(codec, history, plan, RequestSpec(model="m"))
    [walk] = seen
    assert [f.role for f in walk.facts] == ["user", "assistant", "tool"]
    assert walk.facts[0].opens and walk.facts[1].calls == ("c",)
    assert walk.facts[2].results == ("c",)
    assert [a.assistant for a in walk.afters] == [0, 1, 0]
    assert walk.contexts == ["", "", ""]
    # The array's content comes in pieces (fragments) that are the turns' bytes in order.
    joined = b"[" + b",".join(orjson.dumps(f) for f in walk.fragments) + b"]"
    assert orjson.loads(joined) == [item for turn in walk.turns
                                    for item in orjson.loads(b"[" + turn + b"]")]


# --- a resumed walk reads stored facts only where it must ----------------------------------


_IDS = st.lists(st.sampled_from(["c1", "c2", 'c"3', 7]), max_size=3)
_METAS = st.builds(
    lambda role, calls, results, incomplete, opens, after, twice: (
        orjson.dumps({"role": role, **({"calls": calls} if calls else {}),
                      **({"results": results} if results else {}),
                      **({"incomplete": True} if incomplete else {}),
                      **({"opens": True} if opens else {}), "after": after}).decode()
        .replace('"after"', '"role":"user","after"' if twice else '"after"')),
    st.sampled_from(["assistant", "user", "tool", "system", "assistant\"x"]), _IDS, _IDS,
    st.booleans(), st.booleans(), st.sampled_from([{}, {"names": ["f"]}, [], "x"]),
    st.booleans())


def test_a_resumed_walk_continues_its_stored_last_walk_asking_no_rule_of_a_stored_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 44: a resumed session continues the walk its last write stored — every stored
    form picked by the context that walk names, its end state read back — so the codec's
    ``context`` is asked of the pending turn only, no stored meta is parsed, nothing is
    decoded, and the request is the decoded history's, byte for byte."""
    from dataclasses import replace

    from thoughtline import config
    from thoughtline.codecs.anthropic.turns import Encoder
    from thoughtline.messages import Origin, system

    provider = replace(config.presets()["anthropic"], model="claude-sonnet-4-5")
    who = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com",
                 model="claude-sonnet-4-5")
    history: list[Message] = [system("be brief")]
    for n in range(6):
        history += [user(f"q{n}"), Message(role="assistant", origin=who, parts=(
            Reasoning(kind="signed", text=f"t{n}", signature=f"sig-{n}", origin=who),
            Text(text=f"a{n}")))]
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, provider)
        session.append(history)
        resumed = Session.resume(store, session.id)
        asked: list[int] = []
        context = Encoder.context

        def counted(self: Encoder, state: Any, index: int, facts: TurnFacts) -> Any:
            asked.append(index)
            return context(self, state, index, facts)

        monkeypatch.setattr(Encoder, "context", counted)
        sent = resumed.request_bytes([PENDING], stream=True)
        assert asked == [len(history)]  # (the pending turn's: the stored ones' are stored)
        assert resumed._history.decoded is False
        assert not any(resumed.wire_cache._metas.values())
        ordinary = Session.resume(store, session.id)
        assert len(ordinary.history) == len(history)  # (decodes every turn)
        assert sent == ordinary.request_bytes([PENDING], stream=True)
        # A walk that starts where no stored view did (a pending tool loop's turn moves where
        # the loop starts) walks the stored turns on their forms, still decoding nothing.
        moved = [PENDING, Message(role="assistant", origin=who, parts=(
            Reasoning(kind="signed", text="t", signature="sig-x", origin=who),
            ToolCall(id="c1", name="f", arguments="{}"))), _result("c1")]
        again = resumed.request_bytes(moved, stream=True)
        assert resumed._history.decoded is False
        assert again == ordinary.request_bytes(moved, stream=True)

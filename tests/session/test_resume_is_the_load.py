"""Issue 44 item 4: a resumed session's next request is the ordinary load's, byte for byte.

For every API with a turn encoder, a history is written through the store (as a session writes
the turns it answers: with their wire forms), resumed in a fresh session, and its next request
built through the wire cache; the same resumed history decoded and encoded with no cache at all
(``walk_turns``: every turn encoded, nothing stored read) must give the same bytes. The
histories mix signed, redacted, cut and foreign-model thinking, tool loops, system turns and
compaction checkpoints; they are written in one or more appends, and the next request carries a
user turn, a tool result, or nothing (the tool loop continuing).

A codec rule lives once, in the codec's walk: a changed rule (injected where the codec itself
reads it) must change what the resumed session sends exactly as it changes the ordinary load.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from thoughtline import ProviderConfig, Session, config, open_store
from thoughtline.codecs.anthropic import turns as anthropic_turns
from thoughtline.codecs.anthropic import walk as anthropic_walk
from thoughtline.compaction.core import checkpoint
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    tool_results,
    user,
)
from thoughtline.turn import TurnEngine

PRESETS = config.presets()
SONNET = dataclasses.replace(PRESETS["anthropic"], model="claude-sonnet-4-5")
OPUS = dataclasses.replace(PRESETS["anthropic"], model="claude-opus-4-5")
#: One provider per API (two for Anthropic: a model that keeps only the loop's thinking and one
#: that keeps all of it).
PROVIDERS: dict[str, list[ProviderConfig]] = {
    "openai-chat": [PRESETS["deepseek"], PRESETS["openrouter"]],
    "anthropic": [SONNET, OPUS],
    "openai-responses": [PRESETS["openai-responses"]],
    "gemini": [dataclasses.replace(PRESETS["gemini"], model="gemini-3-pro-preview")],
    "bedrock": [dataclasses.replace(
        PRESETS["bedrock"], model="us.anthropic.claude-sonnet-4-5-20250929-v1:0")],
    "gemini-interactions": [dataclasses.replace(PRESETS["gemini-interactions"],
                                                model="gemini-3-pro-preview")],
}


def _origin(provider: ProviderConfig) -> Origin:
    host = (provider.base_url or "").split("://")[-1].split("/")[0]
    return Origin(api=provider.api, provider=provider.id, host=host, model=provider.model)


FOREIGN = Origin(api="openai-chat", provider="deepseek", host="api.deepseek.com",
                 model="deepseek-reasoner")
SIBLING = Origin(api="anthropic", provider="anthropic", host="api.anthropic.com",
                 model="claude-haiku-4-5")
CALL_IDS = ("call_1", "call_2", "call_3")
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), min_size=0, max_size=8)
_SIG = st.sampled_from(["c2lnLWE=", "c2lnLWI=", "sig-c"])


@st.composite
def _thinking(draw: st.DrawFn, own: Origin) -> Reasoning:
    """Signed, redacted, cut or readable thinking, made by the route's own model or another."""
    origin = draw(st.sampled_from([own, own, own, SIBLING, FOREIGN, None]))
    kind = draw(st.sampled_from(["signed", "signed", "redacted", "text", "summary"]))
    complete = draw(st.booleans()) or draw(st.booleans())  # (a quarter of them cut short)
    if kind == "signed":
        return Reasoning(kind="signed", text=draw(_TEXT), signature=draw(_SIG),
                         complete=complete, origin=origin)
    if kind == "redacted":
        return Reasoning(kind="redacted", data=draw(_SIG), complete=complete, origin=origin)
    if kind == "summary":
        return Reasoning(kind="summary", summary=draw(_TEXT), origin=origin)
    return Reasoning(kind="text", text=draw(_TEXT), complete=complete, origin=origin)


@st.composite
def _assistant(draw: st.DrawFn, own: Origin, calls: int = 0) -> Message:
    parts: list[object] = list(draw(st.lists(_thinking(own), max_size=2)))
    if draw(st.booleans()):
        parts.append(Text(text=draw(_TEXT)))
    parts += [ToolCall(id=draw(st.sampled_from(CALL_IDS)), name="f", arguments='{"n": 1}')
              for _ in range(calls)]
    origin = draw(st.sampled_from([own, own, SIBLING, FOREIGN, None]))
    incomplete = not calls and draw(st.booleans()) and draw(st.booleans())
    return Message(role="assistant", parts=tuple(parts), origin=origin,  # type: ignore[arg-type]
                   incomplete=incomplete)


@st.composite
def _loop(draw: st.DrawFn, own: Origin) -> list[Message]:
    """A tool loop: model turns that call tools, each answered, maybe ending in an answer."""
    out: list[Message] = []
    for _ in range(draw(st.integers(1, 3))):
        turn = draw(_assistant(own, calls=draw(st.integers(1, 2))))
        answers = [ToolResult(call_id=p.id, content="ok") for p in turn.parts
                   if isinstance(p, ToolCall)]
        out += [turn, tool_results(answers)]
    if draw(st.booleans()):
        out.append(draw(_assistant(own)))
    return out


def _compaction(own: Origin) -> Message:
    """A checkpoint holding an Anthropic compaction block (sent as a block to its issuer, as the
    summary elsewhere)."""
    block = Opaque(native={"anthropic": {"type": "compaction", "content": "earlier: weather"}},
                   origin=own if own.api == "anthropic" else SIBLING)
    return checkpoint("we talked about the weather", block)


@st.composite
def histories(draw: st.DrawFn, provider: ProviderConfig) -> list[Message]:
    own = _origin(provider)
    groups = draw(st.lists(st.one_of(
        _TEXT.map(lambda t: [user(t or "hi")]),
        _loop(own),
        _assistant(own).map(lambda m: [m]),
        _TEXT.map(lambda t: [Message(role="system", parts=(Text(text=t or "be brief"),))]),
        st.just([_compaction(own)]),
    ), min_size=1, max_size=6))
    return [m for group in groups for m in group]


def _pending(history: list[Message], kind: str) -> list[Message]:
    """The next request's new turns: a user turn, the answers to the last turn's calls, or
    nothing (the loop goes on from a stored tool result)."""
    if kind == "user":
        return [user("and the next step?")]
    if kind == "answers" and history and history[-1].role == "assistant":
        calls = [p.id for p in history[-1].parts if isinstance(p, ToolCall)]
        if calls:
            return [tool_results([ToolResult(call_id=c, content="done") for c in calls])]
    return []


def _write(home: Path, provider: ProviderConfig, history: list[Message],
           cuts: list[int]) -> str:
    """The history written by a session in appends (cut at ``cuts``), as it answers them."""
    with open_store(home / "state.db", home) as store:
        session = Session.create(store, provider)
        start = 0
        for cut in [*sorted(c for c in cuts if 0 < c < len(history)), len(history)]:
            if cut > start:
                session.append(history[start:cut])
                start = cut
        return session.id


def _both(home: Path, session_id: str, pending: list[Message]) -> tuple[bytes, bytes]:
    """(the resumed session's next request through its wire cache, the ordinary load's: the
    same resumed session's history decoded and every turn encoded with no cache)."""
    with open_store(home / "state.db", home) as store:
        resumed = Session.resume(store, session_id).request_bytes(pending, stream=True)
    with open_store(home / "state.db", home) as store:
        loaded = Session.resume(store, session_id)
        turn = dataclasses.replace(loaded._turn(pending), history=list(loaded.history),
                                   cache=None)
        ordinary = TurnEngine.build(turn, stream=True)[0].raw
    return resumed, ordinary


def _case(api: str) -> st.SearchStrategy[tuple[ProviderConfig, list[Message], list[int], str]]:
    return st.sampled_from(PROVIDERS[api]).flatmap(lambda p: st.tuples(
        st.just(p), histories(p), st.lists(st.integers(1, 12), max_size=2),
        st.sampled_from(["user", "answers", "none"])))


SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("api", sorted(PROVIDERS))
def test_a_resumed_request_is_the_ordinary_load_byte_for_byte(
        api: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    @SETTINGS
    @given(case=_case(api))
    def check(case: tuple[ProviderConfig, list[Message], list[int], str]) -> None:
        provider, history, cuts, kind = case
        home = tmp_path_factory.mktemp("resume")
        session_id = _write(home, provider, history, cuts)
        resumed, ordinary = _both(home, session_id, _pending(history, kind))
        assert resumed == ordinary

    check()


# --- the four-turn Anthropic case, and a changed keep rule ----------------------------------------

OWN = _origin(SONNET)


def _four_turns() -> list[Message]:
    """[assistant(signed thinking), user, assistant(signed thinking + one call), tool result]."""
    first = Message(role="assistant", origin=OWN, parts=(
        Reasoning(kind="signed", text="plan", signature="c2lnLTE=", origin=OWN),
        Text(text="hello")))
    second = Message(role="assistant", origin=OWN, parts=(
        Reasoning(kind="signed", text="call it", signature="c2lnLTI=", origin=OWN),
        ToolCall(id="toolu_1", name="f", arguments="{}")))
    return [first, user("go on"), second,
            tool_results([ToolResult(call_id="toolu_1", content="ok")])]


def test_the_four_turn_anthropic_case_resumes_as_it_loads(tmp_path: Path) -> None:
    session_id = _write(tmp_path, SONNET, _four_turns(), [])
    resumed, ordinary = _both(tmp_path, session_id, [])
    assert resumed == ordinary
    assert b"c2lnLTI=" in resumed  # (the loop's thinking goes out; the earlier turn's does not)
    assert b"c2lnLTE=" not in resumed


def _wider_keep(index: int, *, loop: int, last: int, keep_prior: bool, stale: bool) -> bool:
    """The keep rule moved two turns back (issue 44: ``index >= loop - 2``)."""
    return (index >= loop - 2 or keep_prior or index == last) and not stale


@contextmanager
def _keep_rule(rule: object) -> Iterator[None]:
    """The Anthropic keep rule replaced where the codec reads it (its walk's ``keeps``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(anthropic_walk, "keeps", rule)
        patch.setattr(anthropic_turns, "keeps", rule)
        yield


def test_a_changed_keep_rule_changes_the_resume_and_the_load_alike(tmp_path: Path) -> None:
    with _keep_rule(_wider_keep):
        session_id = _write(tmp_path, SONNET, _four_turns(), [])
        resumed, ordinary = _both(tmp_path, session_id, [])
    assert resumed == ordinary
    assert b"c2lnLTE=" in resumed  # the wider rule keeps the first turn's thinking: both send it


@SETTINGS
@given(history=histories(SONNET), kind=st.sampled_from(["user", "answers", "none"]))
def test_a_changed_keep_rule_changes_every_resume_as_the_load(
        tmp_path_factory: pytest.TempPathFactory, history: list[Message], kind: str) -> None:
    home = tmp_path_factory.mktemp("rule")
    with _keep_rule(_wider_keep):
        session_id = _write(home, SONNET, history, [])
        resumed, ordinary = _both(home, session_id, _pending(history, kind))
    assert resumed == ordinary


def test_a_session_keeps_one_stored_walk_and_resumes_from_it(tmp_path: Path) -> None:
    """Each write stores the walk of the whole history: the one before it is deleted with it
    (a session of many exchanges keeps one walk row per plan, not one per exchange), and a
    resume continues the last one, asking no codec rule of a stored turn."""
    import sqlite3

    history = _four_turns() * 3
    with open_store(tmp_path / "state.db", tmp_path) as store:
        session = Session.create(store, SONNET)
        for start in range(0, len(history), 2):
            session.append(history[start:start + 2])
        session_id = session.id
    raw = sqlite3.connect(tmp_path / "state.db")
    walks = raw.execute("SELECT COUNT(*) FROM wire_forms WHERE plan LIKE 'walk:%'").fetchone()
    raw.close()
    assert walks == (1,)
    asked: list[int] = []
    context = anthropic_turns.Encoder.context

    def counted(self: object, state: object, index: int, facts: object) -> object:
        asked.append(index)
        return context(self, state, index, facts)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(anthropic_turns.Encoder, "context", counted)
        resumed, ordinary = _both(tmp_path, session_id, [user("next")])
    assert resumed == ordinary
    assert asked[:1] == [len(history)]  # (the resume's walk: the pending turn's context only)

"""Random Gemini histories and the plans a session may move between, for the stored-forms tests.

Histories mix Gemini's own turns (thoughts, text and calls, each maybe signed; unknown parts kept
verbatim), turns of other tiers, projects and APIs, interrupted turns, system turns anywhere,
empty turns and tool results answering calls by reused, synthetic or unknown ids — what makes a
Gemini turn's wire form depend on the turns before it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import orjson
from hypothesis import strategies as st

from thoughtline import Session, config
from thoughtline.codecs.base import Lesson
from thoughtline.messages import (
    Message,
    Opaque,
    Origin,
    Part,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    fingerprint,
    tool_results,
)
from thoughtline.verdicts import Verdict

SIG = "thoughtSignature"
AI_STUDIO = "generativelanguage.googleapis.com"
PRO = Origin(api="gemini", provider="gemini", host=AI_STUDIO, model="gemini-3-pro-preview")
FLASH = replace(PRO, model="gemini-3-flash-preview")
VERTEX = Origin(api="gemini", provider="vertex-gemini", host="aiplatform.googleapis.com",
                model="gemini-3-pro-preview", account="proj-a")
DEEPSEEK = Origin(api="openai-chat", provider="deepseek", host="api.deepseek.com",
                  model="deepseek-reasoner")
SIGNATURES = ("c2lnLWE=", "c2lnLWI=", "Q2lnLWM/+x==", "sig-d")
# Few ids, so calls are answered across turns, ids are reused by later calls (a result answers
# the latest), synthetic ids are never sent and some results answer nothing.
CALL_IDS = ("call_1", "call_2", "gemini_tl_s1_0", "gemini_tl_s1_1")
NAMES = ("weather", "clock")

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_SIGNED = st.one_of(st.just({}), st.sampled_from(SIGNATURES).map(lambda s: {"gemini": {SIG: s}}))
_ARGS = st.one_of(st.dictionaries(st.sampled_from(["city", "n"]), st.integers(0, 9) | _TEXT,
                                  max_size=2).map(lambda d: orjson.dumps(d).decode()),
                  st.sampled_from(["", "not json", "[1, 2]"]))


@st.composite
def _model_part(draw: st.DrawFn) -> Part:
    kind = draw(st.sampled_from(["thought", "summary", "text", "call", "call", "opaque"]))
    if kind == "thought":
        return Reasoning(kind="text", text=draw(_TEXT), native=draw(_SIGNED))
    if kind == "summary":
        return Reasoning(kind="summary", summary=draw(_TEXT), native=draw(_SIGNED))
    if kind == "text":
        return Text(text=draw(_TEXT), native=draw(_SIGNED))
    if kind == "call":
        return ToolCall(id=draw(st.sampled_from(CALL_IDS)), name=draw(st.sampled_from(NAMES)),
                        arguments=draw(_ARGS), native=draw(_SIGNED))
    code = {"executableCode": {"language": "PYTHON", "code": draw(_TEXT)}}
    return Opaque(native={"gemini": code}, origin=PRO)


@st.composite
def _model_turn(draw: st.DrawFn) -> Message:
    origin = draw(st.sampled_from([PRO, PRO, FLASH, VERTEX, DEEPSEEK, None]))
    parts = tuple(draw(st.lists(_model_part(), max_size=4)))
    return Message(role="assistant", origin=origin, parts=parts,
                   incomplete=draw(st.booleans()) and draw(st.booleans()))


_RESULT = st.builds(ToolResult, call_id=st.sampled_from([*CALL_IDS, "nobody"]),
                    content=st.sampled_from(["ok", "sunny", ""]), is_error=st.booleans())
_TURN = st.one_of(
    _model_turn(), _model_turn(),
    st.lists(_RESULT, min_size=1, max_size=3).map(
        lambda rs: Message(role="tool", parts=tuple(rs))),
    # One result turn that recurs (one content id) after calls of different names or modes.
    st.sampled_from(CALL_IDS).map(lambda c: tool_results([ToolResult(call_id=c, content="ok")])),
    st.tuples(_TEXT, _RESULT).map(  # a user turn that also answers a call
        lambda p: Message(role="user", parts=(Text(text=p[0]), p[1]))),
    _TEXT.map(lambda t: Message(role="user", parts=(Text(text=t),))),
    _TEXT.map(lambda t: Message(role="system", parts=(Text(text=t),))),
    st.just(Message(role="user", parts=())),
)


@st.composite
def _step(draw: st.DrawFn) -> list[Message]:
    """A model turn that calls tools and the turn answering its calls: two steps that reuse an
    id for calls of another name (or mode) share their result turn's content id."""
    turn = draw(_model_turn())
    calls = tuple(ToolCall(id=draw(st.sampled_from(CALL_IDS)), name=draw(st.sampled_from(NAMES)),
                           arguments="{}", native=draw(_SIGNED))
                  for _ in range(draw(st.integers(1, 2))))
    turn = replace(turn, parts=turn.parts + calls)
    return [turn, tool_results([ToolResult(call_id=c.id, content="ok") for c in calls])]


HISTORIES = st.lists(st.one_of(_TURN.map(lambda m: [m]), _step()), max_size=10).map(
    lambda turns: [m for group in turns for m in group])


# --- plans ----------------------------------------------------------------------------------

PROVIDERS = {
    "pro": replace(config.presets()["gemini"], model="gemini-3-pro-preview"),
    "flash": replace(config.presets()["gemini"], model="gemini-3-flash-preview"),
    "vertex": replace(config.presets()["vertex-gemini"], project="proj-a"),
    "deepseek": config.presets()["deepseek"],
}
LESSONS = ("none", "calls-as-text", "sign-every", "fingerprinted")


def learn(session: Session, lesson: str) -> None:
    """What a rejection on the session's route would have taught (``lesson`` of ``LESSONS``)."""
    route = session.route
    if lesson == "calls-as-text":
        session._learned(Lesson(notice="learned", verdict=Verdict(
            provider=route.provider, host=route.host, model=route.model,
            drop=frozenset({"gemini.dummy_signature"}), reason="rejects the dummy")))
    elif lesson == "sign-every":
        session._learned(Lesson(notice="learned",
                                settings={"gemini": {"sign_every_call": True}}))
    elif lesson == "fingerprinted":
        session._learned(Lesson(notice="learned", fingerprints=frozenset(
            fingerprint(SIG, s) for s in SIGNATURES[:2])))


@dataclass(frozen=True, slots=True)
class Setup:
    """A plan a session may be under: a provider (None: the one it has) and one lesson."""

    provider: str | None
    lesson: str

    @property
    def name(self) -> str:
        return f"{self.provider or 'same'}+{self.lesson}"

    def apply(self, session: Session) -> None:
        if self.provider is not None:
            session.set_provider(PROVIDERS[self.provider])
        learn(session, self.lesson)


SETUPS = tuple(Setup(p, lesson) for p in PROVIDERS for lesson in LESSONS)
SETUP = st.sampled_from(SETUPS)
#: A plan change: another provider, or a lesson on the route the session is on.
CHANGE = st.one_of(SETUP, st.sampled_from(LESSONS).map(lambda lesson: Setup(None, lesson)))

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

from thoughtline import ProviderConfig, Session, config
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
    st.tuples(_TEXT, _RESULT).map(  # a user turn that also answers a call
        lambda p: Message(role="user", parts=(Text(text=p[0]), p[1]))),
    _TEXT.map(lambda t: Message(role="user", parts=(Text(text=t),))),
    _TEXT.map(lambda t: Message(role="system", parts=(Text(text=t),))),
    st.just(Message(role="user", parts=())),
)
HISTORIES = st.lists(_TURN, max_size=10)


# --- plans ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Setup:
    """A provider and what the session learned for it: one plan a session may be under."""

    name: str
    provider: ProviderConfig
    lesson: Lesson | None = None

    def apply(self, session: Session) -> None:
        session.set_provider(self.provider)
        if self.lesson is not None:
            session._learned(self.lesson)


def _gemini(model: str = "gemini-3-pro-preview") -> ProviderConfig:
    return replace(config.presets()["gemini"], model=model)


def _lesson(**kw: object) -> Lesson:
    return Lesson(notice="learned", **kw)  # type: ignore[arg-type]


SETUPS: tuple[Setup, ...] = (
    Setup("pro", _gemini()),
    Setup("flash", _gemini("gemini-3-flash-preview")),
    Setup("vertex", replace(config.presets()["vertex-gemini"], project="proj-a")),
    Setup("calls-as-text", _gemini(), _lesson(verdict=Verdict(
        provider="gemini", host=AI_STUDIO, model="gemini-3-pro-preview",
        drop=frozenset({"gemini.dummy_signature"}), reason="rejects the dummy"))),
    Setup("sign-every", _gemini(), _lesson(settings={"gemini": {"sign_every_call": True}})),
    Setup("fingerprinted", _gemini(), _lesson(fingerprints=frozenset(
        fingerprint(SIG, s) for s in SIGNATURES[:2]))),
    Setup("deepseek", config.presets()["deepseek"]),
)
SETUP = st.sampled_from(SETUPS)

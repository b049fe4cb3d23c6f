"""Gemini's 400 wordings about thought signatures, and what each teaches before the one retry.

Table-driven, every wording tested (``tests/codecs/test_gemini.py``). Exact texts:
the public threads at each row (AI Studio and Vertex; tests/fixtures/SOURCES.md, category 7).

- a corrupted / invalid signature: when the request carried the dummy, the route rejects the dummy
  (learned for the route: its foreign calls go as text from now on); the real signatures the
  request carried are fingerprinted and never sent again (their turns go back with no thoughts);
- a missing signature on a replayed call: pad — every unsigned call carries the dummy from now on
  (a session setting); when that was already so, the route does not take the dummy at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import orjson

from thoughtline.codecs.base import Lesson, profile_of
from thoughtline.codecs.gemini.encode import SIGN_EVERY_CALL
from thoughtline.codecs.gemini.profile import GeminiProfile
from thoughtline.codecs.gemini.turns import Sent
from thoughtline.codecs.gemini.wire import API, DUMMY_CARRIER
from thoughtline.replay import ReplayPlan
from thoughtline.verdicts import Verdict

Kind = Literal["invalid", "missing"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Wording:
    id: str
    kind: Kind
    pattern: re.Pattern[str]
    source: str


WORDINGS: tuple[Wording, ...] = (
    Wording(id="gemini-corrupted", kind="invalid",
            pattern=re.compile(r"Corrupted thought signature", re.I),
            source="AI Studio: gemini-cli#13467, crush#1698, Antigravity-Manager#970"),
    Wording(id="vertex-invalid", kind="invalid",
            pattern=re.compile(r"Thought signature is not valid", re.I),
            source="Vertex: 9router#301"),
    Wording(id="gemini-missing", kind="missing",
            pattern=re.compile(r"Function call is missing a thought_signature", re.I),
            source="AI Studio: Antigravity-Manager#938, CodexPlusPlus#367"),
    Wording(id="vertex-missing", kind="missing",
            pattern=re.compile(r"content block is missing a `?thought_signature", re.I),
            source="Vertex: qiita.com reports, decolua/9router#301"),
)


def readable(body: str) -> str:
    """The error message of a Google error body (``{"error": {"message": …}}``), else the text."""
    try:
        parsed = orjson.loads(body)
    except (orjson.JSONDecodeError, TypeError):
        return body
    if isinstance(parsed, list) and parsed:  # streamed errors arrive as a one-element array
        parsed = parsed[0]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else body


def match(body: str) -> Wording | None:
    text = readable(body)
    return next((w for w in WORDINGS if w.pattern.search(text)), None)


def wording_of(status: int | None, body: str, plan: ReplayPlan) -> Wording | None:
    """The signature wording a rejection matches, if it may teach anything at all."""
    if status is not None and not 400 <= status <= 499:
        return None
    return match(body) if plan.target is not None else None


def lesson(status: int | None, body: str, sent: Sent, plan: ReplayPlan) -> Lesson | None:
    """What a rejected request teaches, or None when it teaches nothing (the error surfaces)."""
    wording = wording_of(status, body, plan)
    target = plan.target
    if wording is None or target is None:
        return None
    dummy_on = profile_of(plan, GeminiProfile).foreign_calls == "dummy"
    if wording.kind == "invalid":
        verdict = None
        if sent.totals.dummies and dummy_on:
            verdict = Verdict(provider=target.provider, host=target.host, model=target.model,
                              drop=frozenset({DUMMY_CARRIER}),
                              reason="rejects the placeholder thought signature")
        prints = frozenset(sent.prints)
        if verdict is None and not prints:
            return None
        return Lesson(notice=_invalid_notice(target.model, len(prints), verdict is not None),
                      verdict=verdict, fingerprints=prints, wording=wording.id)
    if not sent.sign_every and dummy_on:
        return Lesson(notice=f"{target.model} wants a thought signature on every replayed "
                             "function call — retrying with the placeholder signature on each",
                      settings={API: {SIGN_EVERY_CALL: True}}, wording=wording.id)
    if dummy_on and sent.totals.dummies:
        verdict = Verdict(provider=target.provider, host=target.host, model=target.model,
                          drop=frozenset({DUMMY_CARRIER}),
                          reason="does not take the placeholder thought signature")
        return Lesson(notice=_invalid_notice(target.model, 0, True), verdict=verdict,
                      wording=wording.id)
    return None


def _invalid_notice(model: str, prints: int, dummy: bool) -> str:
    done = []
    if dummy:
        done.append("function calls from other models as plain text for this route")
    if prints:
        plural = "s" if prints != 1 else ""
        done.append(f"without the {prints} rejected thought signature{plural} "
                    "(those turns go back without Gemini's earlier thinking)")
    return f"{model} rejected a replayed thought signature — retrying with " + " and ".join(done)

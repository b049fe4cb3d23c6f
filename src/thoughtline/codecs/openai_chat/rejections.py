"""The Chat Completions rejection reader: a provider's 4xx body, and what replay learns from it.

A rejected Chat request either names a replayed carrier as an unknown field (learn to **drop** it
for that model) or demands ``reasoning_content`` on assistant turns (learn to **pad** it with the
must-echo placeholder). Every wording it recognises is one row of ``WORDINGS``; where a carrier
counts as *named* is the ``_NAMED`` table. The API-neutral parts (the ``Wording`` row, lazy
patterns, nested-escape undoing, the "context length exceeded" rows) are ``thoughtline.wordings``.

``classify`` is pure: it does not retry, record or persist a verdict, touch a history or do any
I/O. ``lesson`` turns a ``Classification`` into the codec's ``Lesson`` (a ``Verdict`` for the
request's (provider, host, model) and the ``describe(...)`` notice); the turn engine retries once.

Rules (docs/design.md, "a turn, end to end": learn once, retry exactly once):

* Only a 4xx, or no status at all, is considered; 5xx and anything else is ``none``.
* ``drop`` needs an unknown-field wording **and** a carrier that was sent on an assistant message
  (``sent``) named in the body. ``reasoning_content`` and ``reasoning_details`` count when named as
  a token anywhere; ``reasoning`` counts only inside a message path (``messages.1.reasoning``,
  ``messages[1].reasoning``, a ``["body","messages",2,"assistant","reasoning"]`` location, a
  ``'messages.1' : property 'reasoning'`` clause), because ``reasoning`` is also a top-level request
  parameter whose rejection says nothing about the carrier.
* ``reasoning_content`` named → drop every carrier (``CARRIERS``, all three, whether or not this
  request sent them: a server that rejects the de-facto standard field has a closed schema, and
  learning all three at once saves a second failed request the day a turn carries another one).
  Otherwise → drop the sent ones of ``reasoning`` / ``reasoning_details`` together (one retry,
  not two).
* On a must-echo route a body naming ``reasoning_content`` is a complaint about its value, never a
  reason to stop sending it; only ``reasoning`` / ``reasoning_details`` named alongside are dropped.
* A carrier counted when named anywhere (``reasoning_content``, ``reasoning_details``) that the
  request also carried as a top-level key (``top_level``: a client's or user's own extra body
  key) is not counted: the rejection may be of that key, and learning from it would switch
  replay off for a field the caller supplied.
* The "reasoning required" wordings (DeepSeek, Kimi, MiMo) → ``pad`` whatever was sent.
  DeepSeek's Anthropic-format variant (``content[].thinking``) is not about a chat carrier: it
  yields ``none`` with its row id in ``wording`` so logs can still say what happened.
* A generic ``Provider returned error`` is not a rejection; OpenRouter's nested ``metadata.raw``
  (an escaped JSON string) is read like the body it wraps.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from thoughtline.codecs.base import Encoded, Lesson, profile_of
from thoughtline.codecs.openai_chat.profile import ChatProfile
from thoughtline.codecs.openai_chat.wire import RC, RD, R
from thoughtline.replay import ReplayPlan
from thoughtline.verdicts import Verdict
from thoughtline.wordings import LazyPattern, Wording, readable

#: The carriers in the order a notice names them.
CARRIERS = (RC, R, RD)
_RC, _R, _RD = CARRIERS

Action = Literal["none", "drop", "pad"]
Kind = Literal["unknown_field", "reasoning_required", "not_chat"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Classification:
    """What one rejected request teaches about its (provider, host, model).

    ``drop`` is non-empty only for action ``"drop"``. ``wording`` is the id of the ``WORDINGS`` row
    that decided the outcome; it is also set on the two informative ``none`` outcomes (a must-echo
    value complaint, DeepSeek's Anthropic-format thinking demand) and empty otherwise.
    """

    action: Action
    drop: frozenset[str] = frozenset()
    reason: str = ""
    wording: str = ""


_rx = LazyPattern

# A backtick may arrive as itself or be lost; the escapes are undone before matching.
_TICK = r"[`'\"]?"

WORDINGS: tuple[Wording, ...] = (
    # --- "reasoning required": learn the must-echo pad --------------------------------------
    Wording(
        id="deepseek-rc-must-be-passed-back", kind="reasoning_required",
        pattern=_rx(rf"{_TICK}reasoning_content{_TICK}\s+in\s+the\s+thinking\s+mode\s+must\s+be"
                    r"\s+passed\s+back"),
        seen="deepseek, xiaomi mimo",
        source="zed-industries/zed#55321, JohnnyZ93/oai-compatible-copilot#202; MiMo docs "
               "'passing back reasoning_content' (same wording)"),
    Wording(
        id="deepseek-missing-rc-field", kind="reasoning_required",
        pattern=_rx(rf"missing\s+{_TICK}reasoning_content{_TICK}\s+field"),
        seen="deepseek",
        source="api-docs.deepseek.com/guides/thinking_mode ('Missing `reasoning_content` field in "
               "the assistant message at message index 2.')"),
    Wording(
        id="kimi-rc-missing-in-tool-call", kind="reasoning_required",
        pattern=_rx(r"reasoning_content\s+is\s+missing\s+in\s+assistant"),
        seen="kimi / moonshot (also nested in OpenRouter metadata.raw)",
        source="platform.kimi.ai thinking-model guide; SOURCES.md category 7 (OpenRouter-nested)"),
    Wording(
        id="deepseek-anthropic-thinking-must-be-passed-back", kind="not_chat",
        pattern=_rx(rf"{_TICK}content\[\]\.thinking{_TICK}\s+in\s+the\s+thinking\s+mode\s+must"
                    r"\s+be\s+passed\s+back"),
        seen="deepseek (api.deepseek.com/anthropic)",
        source="decolua/9router#2397 (Anthropic-format endpoint variant)"),
    # --- unknown field: learn to drop the named carrier ---------------------------------------
    Wording(
        id="extra-inputs-not-permitted", kind="unknown_field",
        pattern=_rx(r"extra\s+inputs\s+are\s+not\s+permitted|\bextra_forbidden\b"),
        seen="mistral (422, pydantic extra_forbidden); pydantic-based relays",
        source="charmbracelet/crush#1590, BerriAI/litellm#30835, "
               "nomtek/mistralai_client_dart#44 (older envelope); pydantic-based relays",
        label=("an extra input", "extra inputs")),
    Wording(
        id="property-is-unsupported", kind="unknown_field",
        pattern=_rx(r"property\s+['\"`][^'\"`\n]{1,200}['\"`]\s+is\s+unsupported"),
        seen="groq, cerebras (code wrong_api_format)",
        source="NousResearch/hermes-agent#11089, janhq/jan#8136 (groq); "
               "egoist/chatwise-releases#1442, vercel/ai#15042 (cerebras)",
        label=("an unsupported property", "unsupported properties")),
    Wording(
        id="no-such-field", kind="unknown_field", pattern=_rx(r"\bno\s+such\s+field\b"),
        seen="relays", source="relay wording; no public body found (rule: docs/design.md)",
        label=("an unknown field", "unknown fields")),
    Wording(
        id="unknown-field", kind="unknown_field", pattern=_rx(r"\bunknown\s+field\b"),
        seen="relays (Go encoding/json and serde say it this way)",
        source="Go encoding/json DisallowUnknownFields, serde deny_unknown_fields",
        label=("an unknown field", "unknown fields")),
    Wording(
        id="unrecognized-request-argument", kind="unknown_field",
        pattern=_rx(r"\bunrecognized\s+request\s+argument"),
        seen="openai-style relays ('Unrecognized request argument supplied: x')",
        source="the OpenAI API's legacy wording (no recorded body here)",
        label=("an unrecognized argument", "unrecognized arguments")),
    Wording(
        id="unknown-parameter", kind="unknown_field", pattern=_rx(r"\bunknown\s+parameter\b"),
        seen="openai-style relays ('Unknown parameter: 'x'.', code unknown_parameter)",
        source="tests/fixtures/errors/vercel-openai-unknown-parameter-*",
        label=("an unknown parameter", "unknown parameters")),
    Wording(
        id="unexpected-field", kind="unknown_field", pattern=_rx(r"\bunexpected\s+field\b"),
        seen="relays", source="relay wording; no public body found (rule: docs/design.md)",
        label=("an unexpected field", "unexpected fields")),
    Wording(
        id="additional-properties", kind="unknown_field",
        pattern=_rx(r"\badditional\s+properties\b"),
        seen="relays validating with JSON Schema",
        source="JSON Schema additionalProperties validators",
        label=("an additional property", "additional properties")),
    Wording(
        id="unknown-key", kind="unknown_field", pattern=_rx(r"\bunknown\s+key\b"),
        seen="relays", source="relay wording; no public body found (rule: docs/design.md)",
        label=("an unknown key", "unknown keys")),
)

# Where a carrier counts as named. ``\w`` includes "_": "reasoning_contents_x" does not name
# reasoning_content, and "reasoning_content" / "reasoning_effort" do not name reasoning.
_Q = r"['\"`]"
_MSG = r"messages(?:\.\d+|\[\d+\]|/\d+)(?:[./]assistant)?"  # messages.2 / [2] / /2, + role tag
_NAMED: tuple[tuple[str, LazyPattern], ...] = (
    (_RC, _rx(r"(?<!\w)reasoning_content(?!\w)")),
    (_RD, _rx(r"(?<!\w)reasoning_details(?!\w)")),
    (_R, _rx(
        # messages.1.reasoning, messages[1].reasoning, messages.2.assistant.reasoning, /messages/1/…
        rf"(?<!\w){_MSG}[./]reasoning(?!\w)"
        # pydantic location: ["body","messages",2,"assistant","reasoning"] (or a Python tuple)
        rf"|{_Q}messages{_Q}\s*,\s*\d+\s*,\s*(?:{_Q}assistant{_Q}\s*,\s*)?{_Q}reasoning{_Q}"
        # a clause scoped to one message: Groq's 'messages.1' : property 'reasoning' is unsupported,
        # or "messages[1]: unexpected field 'reasoning'"
        rf"|(?<!\w){_MSG}{_Q}?\s*:\s*[a-z ]{{0,40}}{_Q}reasoning{_Q}")),
)

def _named(text: str) -> frozenset[str]:
    return frozenset(carrier for carrier, pattern in _NAMED if pattern.search(text))


def _first(text: str, *kinds: Kind) -> Wording | None:
    return next((w for w in WORDINGS if w.kind in kinds and w.pattern.search(text)), None)


def _join(names: Collection[str]) -> str:
    ordered = [c for c in CARRIERS if c in names]
    return ", ".join(ordered[:-1]) + " and " + ordered[-1] if len(ordered) > 1 else ordered[0]


def classify(status: int | None, body: str, *, sent: Collection[str],
             must_echo: bool, top_level: Collection[str] = ()) -> Classification:
    """Classify one rejected request.

    ``sent`` are the carrier keys the request carried on assistant messages; ``must_echo`` is
    whether the route was padding ``reasoning_content`` (a must-echo route); ``top_level`` are
    the request body's own top-level keys.
    """
    if status is not None and not 400 <= status <= 499:
        return Classification(action="none")
    text = readable(body)

    demand = _first(text, "reasoning_required", "not_chat")
    if demand is not None and demand.kind == "reasoning_required":
        return Classification(action="pad", wording=demand.id,
                              reason="requires reasoning_content on assistant turns")
    if demand is not None:
        return Classification(action="none", wording=demand.id,
                              reason="requires Anthropic-format thinking blocks passed back, "
                                     "not a chat carrier")

    row = _first(text, "unknown_field")
    if row is None:
        return Classification(action="none")
    offered = frozenset(sent).intersection(CARRIERS)
    named = (_named(text) & offered) - (frozenset(top_level) & {_RC, _RD})
    if must_echo and _RC in named:
        named -= {_RC}
        if not named:
            return Classification(action="none", wording=row.id,
                                  reason="named reasoning_content on a must-echo route: a value "
                                         "complaint, not an unknown field")
    if not named:
        return Classification(action="none")
    drop = frozenset(CARRIERS) if _RC in named else offered & {_R, _RD}
    label = row.label[0] if len(named) == 1 else row.label[1]
    return Classification(action="drop", drop=drop, wording=row.id,
                          reason=f"rejected replayed {_join(named)} as {label}")


def describe(c: Classification, *, model: str) -> str:
    """The one-line notice shown when a classification triggers a retry ("" when it does not)."""
    if c.action == "pad":
        return f"{model} {c.reason} — retrying with the placeholder for this model"
    if c.action != "drop":
        return ""
    if c.drop == frozenset(CARRIERS):
        without = "any replayed reasoning"
    elif len(c.drop) == 1:
        without = "it"
    else:
        without = _join(c.drop)
    return f"{model} {c.reason} — retrying without {without} for this model"


def lesson(status: int | None, body: str, encoded: Encoded, plan: ReplayPlan, *,
           sent: set[str]) -> Lesson | None:
    """What a rejected request teaches its route before the one retry, or None.

    An unknown replayed carrier the route reads teaches a drop; a "reasoning required" wording
    teaches the must-echo pad where the route reads ``reasoning_content``, does not pad yet and
    the user did not switch must-echo off (``echo = "never"``). ``sent`` are the carriers the
    request carried (the codec reads them from its turns' counts, not from the body).
    """
    profile = profile_of(plan, ChatProfile)
    target = plan.target
    c = classify(status, body, sent=sent, must_echo=profile.pad, top_level=encoded.body.keys())
    if target is None:
        return None
    if c.action == "drop" and (c.drop & profile.carriers):
        verdict = Verdict(provider=target.provider, host=target.host, model=target.model,
                          drop=frozenset(c.drop & profile.carriers), reason=c.reason)
    elif (c.action == "pad" and not profile.pad and RC in profile.carriers
          and profile.echo != "never"):
        verdict = Verdict(provider=target.provider, host=target.host, model=target.model,
                          pad=True, reason=c.reason)
    else:
        return None
    return Lesson(notice=describe(c, model=target.model), verdict=verdict, wording=c.wording)

"""Read a rejected Responses request: which replayed items the provider refused, exactly.

One table of the provider wordings (sources at each row), each tested, and the rule that
finds the offending item(s) in the request that was sent:

1. the error names an item id that was sent (``for item rs_…``, ``Item 'rs_…'``, ``Item with id
   'rs_…'``) → that item;
2. else it quotes (a prefix of) an ``encrypted_content`` that was sent (``The encrypted content
   gAAA… could not be verified``) → that item;
3. a relay's "was not issued to this caller" names nothing, but each encrypted item is stamped
   with who it was issued to (``Origin.account``: the route's account, else the key's identity):
   the items stamped with another issuer than this caller → exactly those, and that issuer is
   learned once (every item it was issued stays home from then on; hermes-agent#119336);
4. else (xAI's "Could not decrypt the provided encrypted_content", or no stamp tells): one
   encrypted item sent → it; several → those made by another model than the target (a sibling
   snapshot the scope let through), else those from before the current tool loop (the stale
   ones), else all but the newest.

An error ``param`` naming an input position (``input[3].encrypted_content``) names that item
before rule 1; a quoted value may be abbreviated to its ends (``VPy0...8OA=``, kaitranntt/ccs
#1402): an item whose value starts and ends so is named by rule 2.

``thinking_signature_invalid`` (openclaw/openclaw#92941, NousResearch/hermes-agent#70595:
"Encrypted content could not be decrypted or parsed") is read by its code, before any phrase
(its message is the "undecryptable" one), and repairs less: the offending item goes back
*without its encrypted_content* only — its id, summary and place kept, every other item's
value kept (``encode.bare_fingerprint``). Seen in the wild it quotes the value abbreviated
and carries no ``param`` (ccs#1402); both are read. When it names nothing, the culprits are
guessed as above, except that the items stamped with another issuer than this caller come
first (a relay rotating accounts: hermes-agent#119336) — and the guess is deliberately the
same narrow one, not "every item": a wrong guess costs one failed turn whose own rejection is
still learned (the retry's lesson is kept), whereas stripping every value would silently throw
away the whole line of thought for good, the peer behaviour this module exists to avoid; and
leaving off only a value (never the item) is already the mildest repair there is.

A route that refuses one of the stateless request switches as an unknown parameter (``store``,
``include``, ``reasoning.context``, a message ``phase``) teaches a verdict that drops it for that
(provider, host, model) — the learn-once fallback (docs/design.md) on this API.

The result is a fingerprint per offending item (``encode.item_fingerprint``:
``fingerprint(<item type>, <encrypted_content, else id>)``; an id the server could not find on a
message or call is fingerprinted as ``fingerprint("id", id)`` and only that id is left off). The
turn engine persists them and retries once; the items stay in history, they are just never sent
again. Never every item of the session: a peer strips all of them after one rejection, silently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.base import Lesson
from thoughtline.codecs.openai_responses.encode import (
    bare_fingerprint,
    id_fingerprint,
    issuer_fingerprint,
    item_fingerprint,
)
from thoughtline.codecs.openai_responses.wire import (
    ENCRYPTED,
    FUNCTION_CALL,
    MESSAGE,
    PHASE,
    REASONING,
    is_map,
    text_of,
)
from thoughtline.messages import Origin
from thoughtline.verdicts import Verdict


@dataclass(frozen=True, kw_only=True, slots=True)
class Wording:
    id: str
    phrase: str  # lower-case substring of the error message ("": matched by code only)
    what: str
    code: str = ""  # an error code that names this case whatever the message says


WORDINGS: tuple[Wording, ...] = (
    # openclaw PR #92941, hermes-agent#70595; the body seen in kaitranntt/ccs#1402:
    # {"message": "The encrypted content VPy0...8OA= could not be verified. Reason: Encrypted
    # content could not be decrypted or parsed.", "type": "invalid_request_error",
    # "code": "thinking_signature_invalid"}.
    Wording(id="signature-invalid", phrase="", code="thinking_signature_invalid",
            what="its encrypted content could not be decrypted or parsed"),
    # "The encrypted content gAAA… could not be verified." (code invalid_encrypted_content), also
    # "The encrypted content for item rs_… could not be verified. Reason: Encrypted content could
    # not be decrypted or parsed." (hermes-agent #32617, #32062); code invalid_encrypted_content.
    Wording(id="undecryptable", phrase="could not be decrypted or parsed",
            what="its encrypted reasoning could not be decrypted"),
    Wording(id="unverified", phrase="could not be verified",
            what="its encrypted reasoning could not be verified"),
    # xAI (hermes-agent #32617).
    Wording(id="xai-undecryptable", phrase="could not decrypt the provided encrypted_content",
            what="its encrypted reasoning could not be decrypted"),
    # A relay serving several accounts (hermes-agent #119336, opencode-go).
    Wording(id="relay-foreign", phrase="was not issued to this caller",
            what="the encrypted reasoning was issued to another caller"),
    # errors/openai-responses-400-reasoning-item-without-following-item (recorded).
    Wording(id="orphan", phrase="without its required following item",
            what="a reasoning item came without the item it led to"),
    # opencode PR #2480.
    Wording(id="not-persisted", phrase="items are not persisted when `store` is set to false",
            what="an item was sent only by id, and nothing is stored with store=false"),
)
_CODE = "invalid_encrypted_content"
_ID = re.compile(r"""(?:item(?: with id)?\s+['"`]?)([A-Za-z0-9_\-:.]+)""", re.I)
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=]{12,}")
#: A value quoted by its ends: "The encrypted content VPy0...8OA= could not be verified"
#: (kaitranntt/ccs #1402), "gAAA...c90=" (openai/codex #8119).
_ENDS = re.compile(r"([A-Za-z0-9_\-+/=]{4,})(?:\.{3}|…)([A-Za-z0-9_\-+/=]{3,})")
_INPUT_PARAM = re.compile(r"^input\[(\d+)\]")


@dataclass(frozen=True, kw_only=True, slots=True)
class _Sent:
    position: int
    item: Mapping[str, Any]


def error_of(body: str) -> tuple[str, str]:
    """(message, code) of an error body; the raw text when it is not the usual JSON shape."""
    message, code, _ = _fields(body)
    return message, code


def _fields(body: str) -> tuple[str, str, str]:
    """(message, code, param) of an error body."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body, "", ""
    error = data.get("error", data) if is_map(data) else None
    if is_map(error):
        return (text_of(error.get("message")) or body, text_of(error.get("code")),
                text_of(error.get("param")))
    return (error if isinstance(error, str) else body), "", ""


def wording_of(message: str, code: str) -> Wording | None:
    code = code.lower()
    for wording in WORDINGS:
        if wording.code and wording.code == code:
            return wording
    lowered = message.lower()
    for wording in WORDINGS:
        if wording.phrase and wording.phrase in lowered:
            return wording
    if code == _CODE:
        return WORDINGS[1]
    return None


def _sent_items(body: Mapping[str, Any]) -> tuple[list[_Sent], int]:
    """Replayed items with an id or encrypted content, and where the current tool loop starts."""
    sent: list[_Sent] = []
    loop = 0
    for position, item in enumerate(body.get("input") or ()):
        if not is_map(item):
            continue
        if item.get("role") == "user":
            loop = position + 1
        if item.get("id") or item.get(ENCRYPTED):
            sent.append(_Sent(position=position, item=item))
    return sent, loop


def _by_param(param: str, sent: Sequence[_Sent]) -> list[_Sent]:
    """The item an error ``param`` points at (``input[3].encrypted_content``), if it was sent."""
    match = _INPUT_PARAM.match(param)
    if match is None:
        return []
    return [s for s in sent if s.position == int(match.group(1))]


def _named(message: str, sent: Sequence[_Sent]) -> list[_Sent]:
    ids = {m.group(1).rstrip(".'\"`") for m in _ID.finditer(message)}
    by_id = [s for s in sent if text_of(s.item.get("id")) in ids]
    if by_id:
        return by_id
    tokens = [t.rstrip(".") for t in _TOKEN.findall(message)]
    ends = _ENDS.findall(message)
    return [s for s in sent if isinstance(s.item.get(ENCRYPTED), str) and (any(
        s.item[ENCRYPTED].startswith(t) for t in tokens if len(t) >= 12) or any(
        s.item[ENCRYPTED].startswith(head) and s.item[ENCRYPTED].endswith(tail)
        for head, tail in ends))]


def _unnamed(sent: Sequence[_Sent], loop: int, *, origins: Mapping[str, Origin] | None,
             target: Origin | None) -> list[_Sent]:
    encrypted = [s for s in sent if s.item.get("type") == REASONING and s.item.get(ENCRYPTED)]
    if len(encrypted) <= 1:
        return encrypted
    if origins and target is not None:
        # made by another model than the one asked (the scope let a sibling snapshot or model
        # through): the likeliest items the target cannot read
        other = [s for s in encrypted
                 if (o := origins.get(item_fingerprint(s.item))) is not None
                 and o.model.lower() != target.model.lower()]
        if other and len(other) < len(encrypted):
            return other
    stale = [s for s in encrypted if s.position < loop]
    return stale or encrypted[:-1]


def fingerprints_for(culprits: Sequence[_Sent]) -> frozenset[str]:
    """Reasoning and other opaque items are fingerprinted whole; a message or function call the
    server looked up by id loses only its id."""
    out = set()
    for sent in culprits:
        item = sent.item
        if item.get("type") in (MESSAGE, FUNCTION_CALL) and not item.get(ENCRYPTED):
            out.add(id_fingerprint(text_of(item.get("id"))))
        else:
            out.add(item_fingerprint(item))
    return frozenset(out)


# "Unknown parameter: 'response_format'." (errors/vercel-openai-unknown-parameter-*.json) and
# OpenAI's "Unsupported parameter: 'x' is not supported with this model." wording.
_PARAMETER = re.compile(r"(?:unknown|unsupported|unrecognized) (?:parameter|argument)[^'\"`]*"
                        r"['\"`]([A-Za-z0-9_.\[\]]+)['\"`]", re.I)
_PHASE_PATH = re.compile(r"^input\[\d+\]\.phase$")


def switch_of(message: str) -> str:
    """The stateless request switch a route refused as unknown ("" when it is none of them)."""
    match = _PARAMETER.search(message)
    if match is None:
        return ""
    name = match.group(1)
    if name in ("store", "include", "reasoning.context"):
        return name
    return PHASE if _PHASE_PATH.match(name) else ""


def _switch_lesson(message: str, target: Origin | None) -> Lesson | None:
    switch = switch_of(message)
    if not switch or target is None:
        return None
    verdict = Verdict(provider=target.provider, host=target.host, model=target.model,
                      drop=frozenset({switch}), reason=f"rejected {switch} as an unknown parameter")
    return Lesson(notice=f"{target.model} {verdict.reason} — retrying without it for this model",
                  verdict=verdict, wording="unknown-switch")


def _foreign(sent: Sequence[_Sent], origins: Mapping[str, Origin] | None,
             issuer: str) -> tuple[list[_Sent], set[str]]:
    """The sent encrypted items stamped with another issuer than ``issuer``, and those issuers."""
    if not origins or not issuer:
        return [], set()
    found: list[_Sent] = []
    issuers: set[str] = set()
    for s in sent:
        origin = origins.get(item_fingerprint(s.item))
        if (s.item.get(ENCRYPTED) and origin is not None and origin.account
                and origin.account != issuer):
            found.append(s)
            issuers.add(origin.account)
    return found, issuers


def _issuer_lesson(culprits: Sequence[_Sent], issuers: set[str], provider: str,
                   wording: Wording) -> Lesson:
    count = len(culprits)
    names = ", ".join(sorted(issuers))
    notice = (f"{provider} rejected {count} replayed reasoning item{'s' if count != 1 else ''} "
              f"issued to another caller ({names}); retrying once without every item that "
              "caller was issued — this caller's own items are kept")
    fingerprints = fingerprints_for(culprits) | {issuer_fingerprint(i) for i in issuers}
    return Lesson(notice=notice, fingerprints=frozenset(fingerprints), wording=wording.id)


def _bare_lesson(culprits: Sequence[_Sent], provider: str, wording: Wording) -> Lesson:
    """Leave off only the culprits' encrypted content (an item without one is dropped whole:
    there is nothing less to leave off)."""
    fingerprints: set[str] = set()
    for sent in culprits:
        if sent.item.get("type") == REASONING and sent.item.get(ENCRYPTED):
            fingerprints.add(bare_fingerprint(sent.item))
        else:
            fingerprints |= fingerprints_for([sent])
    count = len(culprits)
    notice = (f"{provider} rejected the encrypted content of {count} replayed reasoning "
              f"item{'s' if count != 1 else ''} ({wording.what}); retrying once without "
              f"{'it' if count == 1 else 'them'} — the item{'s' if count != 1 else ''}, "
              "ids and order are kept")
    return Lesson(notice=notice, fingerprints=frozenset(fingerprints), wording=wording.id)


def classify(status: int | None, body: str, sent_body: Mapping[str, Any], *,
             provider: str = "the provider", origins: Mapping[str, Origin] | None = None,
             target: Origin | None = None, issuer: str = "") -> Lesson | None:
    """The lesson of a rejected request, or None when it is not about replayed items.

    ``origins`` maps the ``item_fingerprint`` of each replayed item in ``sent_body`` to where it
    was made (``encode.origins_of``); with ``target`` it sharpens the guess when the error names
    no item. ``issuer`` is who this request's caller is (``ReplayPlan.issuer``): "was not issued
    to this caller" drops exactly the items stamped with another issuer, and learns each such
    issuer once (``encode.issuer_fingerprint``).
    """
    if status is not None and not 400 <= status < 500:
        return None
    message, code, param = _fields(body)
    wording = wording_of(message, code)
    if wording is None:
        return _switch_lesson(message, target)
    sent, loop = _sent_items(sent_body)
    if wording.id == "relay-foreign":
        foreign, issuers = _foreign(sent, origins, issuer)
        if foreign:
            return _issuer_lesson(foreign, issuers, provider, wording)
    culprits = _by_param(param, sent) or _named(message, sent)
    if wording.id == "signature-invalid":
        culprits = (culprits or _foreign(sent, origins, issuer)[0]
                    or _unnamed(sent, loop, origins=origins, target=target))
        return _bare_lesson(culprits, provider, wording) if culprits else None
    culprits = culprits or _unnamed(sent, loop, origins=origins, target=target)
    if not culprits:
        return None
    fingerprints = fingerprints_for(culprits)
    count = len(culprits)
    notice = (f"{provider} rejected {count} replayed reasoning item{'s' if count != 1 else ''} "
              f"({wording.what}); retrying once without {'it' if count == 1 else 'them'} — "
              "the rest of the line of thought is kept")
    return Lesson(notice=notice, fingerprints=fingerprints, wording=wording.id)

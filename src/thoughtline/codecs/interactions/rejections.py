"""The Interactions API's 400/404 wordings, and what each teaches before the one retry.

- a corrupted / invalid thought signature (the Gemini wordings, google-gemini/gemini-cli#13467,
  decolua/9router#301: AI Studio ``Corrupted thought signature.``, Vertex ``Thought signature is not
  valid``): every signature the request carried is fingerprinted and never sent again (their
  thought steps are left out; the turns' text and calls still go);
- the previous interaction is gone (``store`` retention ran out, another project): the session
  learns that id, so the retry — and every later request — sends the whole history instead.
  The wording is not recorded anywhere we could read: it is matched loosely (a 4xx naming the
  interaction id, or "interaction" with "not found") and is UNVERIFIED.
"""

from __future__ import annotations

import re

import orjson

from thoughtline.codecs.base import Lesson
from thoughtline.codecs.interactions.chain import GONE
from thoughtline.codecs.interactions.encode import Sent
from thoughtline.codecs.interactions.wire import API, SIG
from thoughtline.messages import fingerprint
from thoughtline.replay import ReplayPlan

_INVALID = (
    ("gemini-corrupted", re.compile(r"Corrupted thought signature", re.I)),
    ("vertex-invalid", re.compile(r"Thought signature is not valid", re.I)),
)
_GONE = re.compile(r"interaction\b.*\bnot found|not found.*\binteraction", re.I)


def readable(body: str) -> str:
    """The message of a Google error body (``{"error": {"message": …}}``), else the text."""
    try:
        parsed = orjson.loads(body)
    except (orjson.JSONDecodeError, TypeError):
        return body
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else body


def lesson(status: int | None, body: str, sent: Sent, plan: ReplayPlan) -> Lesson | None:
    """What a rejected request teaches, or None when it teaches nothing (the error surfaces)."""
    if status is not None and not 400 <= status <= 499:
        return None
    text = readable(body)
    if sent.previous and (_GONE.search(text) or sent.previous in text):
        return Lesson(notice=f"the server no longer has interaction {sent.previous} — sending "
                             "the whole history instead", settings={API: {GONE: sent.previous}},
                      wording="interaction-not-found")
    wording = next((name for name, pattern in _INVALID if pattern.search(text)), None)
    if wording is None or not sent.signatures or plan.target is None:
        return None
    prints = frozenset(fingerprint(SIG, s) for s in sent.signatures)
    return Lesson(notice=f"{plan.target.model} rejected {len(prints)} replayed thought "
                         "signature(s) — retrying without those thought steps",
                  fingerprints=prints, wording=wording)

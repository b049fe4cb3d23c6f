"""Read a rejected Anthropic request: which stored block it names, and the one-retry lesson.

Owns the documented 400 wordings (platform.claude.com/docs/en/build-with-claude/preserved-thinking
and its fix pages; issue-thread pointers in tests/fixtures/SOURCES.md): an invalid ``signature`` in
a ``thinking`` block (plain, or "bound to a different conversation"), invalid ``data`` in a
``redacted_thinking`` block, ``thinking.signature: Field required``, and "cannot be modified". Each
names a wire location ``messages.N.content.M``; the encoder's ``Index`` maps it back to the
canonical block, whose fingerprint (sha256 over block type and signature or data) is persisted with
the session so the block is never sent again — everything else keeps replaying. A prefix-binding
rejection also teaches ``prefix_mismatch_behavior: drop_block`` (what the error text itself
recommends), so the retry cannot fail on the next bound block; a session that chose ``error`` keeps
it. It also reads ``input_transformations`` reports (``thinking_dropped``) into the same kind of
lesson.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from thoughtline.codecs.anthropic.encode import Index
from thoughtline.codecs.anthropic.wire import API, SETTING_MISMATCH
from thoughtline.codecs.base import Encoded, Lesson
from thoughtline.replay import ReplayPlan

_PATH = re.compile(r"messages\.(\d+)\.content\.(\d+)")


@dataclass(frozen=True, slots=True)
class Wording:
    id: str
    pattern: re.Pattern[str]
    what: str


WORDINGS = (
    Wording("thinking-bound-elsewhere", re.compile(
        r"Invalid [`']signature[`'] in [`']thinking[`'] block\. The block is bound to a "
        r"different conversation"), "thinking block bound to a different conversation"),
    Wording("thinking-invalid-signature", re.compile(
        r"Invalid [`']signature[`'] in [`']thinking[`'] block"), "invalid thinking signature"),
    Wording("redacted-invalid-data", re.compile(
        r"Invalid [`']data[`'] in [`']redacted_thinking[`'] block"), "invalid redacted data"),
    Wording("thinking-signature-required", re.compile(
        r"thinking\.signature: Field required"), "thinking block without a signature"),
    Wording("thinking-cannot-be-modified", re.compile(
        r"[`']?thinking[`']? or [`']?redacted_thinking[`']? blocks in the latest assistant "
        r"message cannot be modified"), "modified thinking in the latest assistant turn"),
)


def error_message(body: str) -> str:
    """The ``error.message`` of an Anthropic, Vertex (array-wrapped) or Bedrock error body."""
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, Mapping):
        error = data.get("error", data)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(data.get("message"), str):
            return data["message"]
    return body


def _located(index: Index, text: str) -> tuple[str, str] | None:
    found = _PATH.search(text)
    if found is None:
        return None
    location = (int(found[1]), int(found[2]))
    fingerprint = index.fingerprints.get(location)
    return (fingerprint, f"messages.{location[0]}.content.{location[1]}") if fingerprint else None


def wording_of(status: int | None, body: str) -> Wording | None:
    """The documented wording a rejection names a stored block with, if it is one."""
    if status is not None and not 400 <= status < 500:
        return None
    text = error_message(body)
    return next((w for w in WORDINGS if w.pattern.search(text)), None)


def classify(status: int | None, body: str, encoded: Encoded, plan: ReplayPlan) -> Lesson | None:
    """The lesson of one rejected request, or None when retrying cannot help."""
    wording = wording_of(status, body)
    index = encoded.index if isinstance(encoded.index, Index) else None
    if wording is None or index is None:
        return None
    text = error_message(body)
    located = _located(index, text)
    if located is None or plan.rejected(located[0]):
        return None  # nothing new to leave out: the error surfaces
    fingerprint, path = located
    settings: dict[str, Any] = {}
    if wording.id == "thinking-bound-elsewhere" and plan.settings.get(SETTING_MISMATCH) is None:
        settings = {API: {SETTING_MISMATCH: "drop_block"}}
    notice = (f"Anthropic rejected the stored thinking block at {path} ({wording.what}); "
              "it will not be sent again, retrying once without it")
    if settings:
        notice += " and with prefix_mismatch_behavior=drop_block"
    return Lesson(notice=notice, fingerprints=frozenset({fingerprint}), settings=settings,
                  wording=wording.id)


def reported(reports: Iterable[object], encoded: Encoded) -> Lesson | None:
    """A lesson from ``input_transformations``: blocks the API dropped are never resent
    (preserved-thinking page)."""
    index = encoded.index if isinstance(encoded.index, Index) else None
    if index is None:
        return None
    dropped: set[str] = set()
    paths: list[str] = []
    for entry in reports:
        if not isinstance(entry, Mapping) or entry.get("type") != "thinking_dropped":
            continue
        located = _located(index, str(entry.get("path", "")))
        if located is not None:
            dropped.add(located[0])
            paths.append(f"{located[1]} ({entry.get('reason', 'dropped')})")
    if not dropped:
        return None
    return Lesson(notice="Anthropic dropped stored thinking: " + ", ".join(paths)
                  + "; those blocks will not be sent again", fingerprints=frozenset(dropped),
                  wording="thinking-dropped")

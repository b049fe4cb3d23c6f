"""What the sessions list and a session's page show, read from the store.

Owns the shape handed to the templates: plain dicts and lists of strings and numbers, built from
the store's public API (``list_sessions``, ``get_session``, ``load_history``,
``list_generations``). Reasoning is described with ``cli.sessions.reasoning_summary``, the same
kind / origin / bytes / digest ``sessions show`` prints. Nothing here escapes: the templates do
(autoescape plus the ``visible`` filter). Nothing here writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from thoughtline.cli.sessions import reasoning_summary
from thoughtline.errors import NotFound
from thoughtline.messages import Message, Opaque, Origin, Reasoning, Text, ToolCall, ToolResult
from thoughtline.store import (
    LoadedHistory,
    LoadProblem,
    ProblemKind,
    SessionRecord,
    Store,
    encode_message,
)
from thoughtline.termsafe import safe_line
from thoughtline.ui.words import listed, verdict_words, when

PAGE_SIZE = 25
TURNS_PAGE = 100  # turns a session's page shows at once


def tenant_label(tenant: str) -> str:
    """How a session's owner is shown: the stored tenant id (a digest of the gateway token,
    never the token itself), or "local" for sessions made by the CLI or a tokenless gateway."""
    return tenant or "local"


def _provider(record: SessionRecord) -> dict[str, Any]:
    provider = record.model_config.get("provider", {})
    return provider if isinstance(provider, dict) else {}


def session_row(record: SessionRecord) -> dict[str, Any]:
    provider = _provider(record)
    return {"id": record.id, "title": record.title, "provider": str(provider.get("id", "?")),
            "model": str(provider.get("model", "?")), "turns": record.turns,
            "updated": when(record.updated_at), "created": when(record.created_at),
            "tenant": tenant_label(record.tenant), "parent": record.parent_id,
            "fork_point": record.fork_point}


# --- the sessions list ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionList:
    rows: list[dict[str, Any]]
    query: str
    page: int
    pages: int
    total: int


def matches(record: SessionRecord, words: Sequence[str]) -> bool:
    """Every word occurs (case-insensitively) in the title, id, provider or model, as stored or
    as shown (a control character made visible: ``\\x1b`` finds a title holding an ESC)."""
    provider = _provider(record)
    fields = [record.title, record.id, str(provider.get("id", "")),
              str(provider.get("model", ""))]
    haystack = " ".join([*fields, *map(safe_line, fields)]).casefold()
    return all(word in haystack for word in words)


def list_page(store: Store, *, tenant: str | None, query: str, page: int) -> SessionList:
    """Sessions matching ``query``, most recently updated first, ``PAGE_SIZE`` a page."""
    words = query.casefold().split()
    found = [r for r in store.list_sessions(tenant=tenant) if matches(r, words)]
    pages = max(1, -(-len(found) // PAGE_SIZE))
    page = min(max(page, 1), pages)
    start = (page - 1) * PAGE_SIZE
    return SessionList(rows=[session_row(r) for r in found[start:start + PAGE_SIZE]],
                       query=query, page=page, pages=pages, total=len(found))


# --- one session ----------------------------------------------------------------------------------


def scope(origin: Origin | None) -> str:
    """Where opaque reasoning is bound: api, provider, host, model (and account, region)."""
    if origin is None:
        return "unknown"
    where = f"{origin.api}:{origin.provider}@{origin.host or '-'}/{origin.model}"
    extra = [f"{k} {v}" for k, v in (("account", origin.account), ("region", origin.region)) if v]
    return where + (f" ({', '.join(extra)})" if extra else "")


def _reasoning(part: Reasoning, refs: list[Any]) -> dict[str, Any]:
    summary = reasoning_summary(part, refs)
    sealed = [word for word, present in (("signed", part.signature), ("encrypted", part.data))
              if present]
    return {"type": "reasoning", "kind": summary["kind"], "origin": summary["origin"],
            "bytes": summary["bytes"], "digest": summary["digest"],
            "payloads": summary["payloads"], "complete": summary["complete"],
            "native": summary["native"], "text": part.text or "", "summary": part.summary or "",
            "sealed": " / ".join(sealed), "scope": scope(part.origin)}


def _part(part: Any, refs: list[Any]) -> dict[str, Any]:
    match part:
        case Text():
            return {"type": "text", "text": part.text}
        case Reasoning():
            return _reasoning(part, refs)
        case ToolCall():
            return {"type": "tool_call", "id": part.id, "name": part.name,
                    "arguments": part.arguments, "native": sorted(part.native)}
        case ToolResult():
            return {"type": "tool_result", "call_id": part.call_id, "content": part.content,
                    "is_error": part.is_error}
        case Opaque():
            return {"type": "opaque", "namespace": part.namespace}
    return {"type": "unknown"}


def turn_view(seq: int, message: Message, created_at: float,
              problems: Sequence[Any]) -> dict[str, Any]:
    refs = encode_message(message).refs
    parts = [_part(p, [r for r in refs if r.part == i]) for i, p in enumerate(message.parts)]
    thinking = {i for i, p in enumerate(parts) if p["type"] == "reasoning"}
    return {"seq": seq, "role": message.role, "parts": parts, "when": when(created_at),
            "model": message.origin.model if message.origin else "",
            "incomplete": message.incomplete, "damaged": message.damaged or bool(problems),
            "problems": [_problem(p) for p in problems],
            "native": sorted(message.native),
            # Opaque values outside reasoning parts (a tool call's signature, the message's own
            # native record: part -1), as ``sessions show`` lists them.
            "payloads": [{"owner": "message" if r.part < 0 else f"part {r.part}",
                          "field": r.field, "bytes": r.size, "digest": r.digest}
                         for r in refs if r.part not in thinking],
            "reasoning_count": len(thinking)}


def turns(loaded: LoadedHistory) -> list[dict[str, Any]]:
    """Every turn in order; a turn whose whole row is corrupt (left out of the load) is shown
    in its place as a damaged marker."""
    by_seq: dict[int, list[Any]] = {}
    for problem in loaded.problems:
        by_seq.setdefault(problem.seq, []).append(problem)
    shown = [turn_view(m.seq, m.message, m.created_at, by_seq.get(m.seq, ()))
             for m in loaded.messages]
    loaded_seqs = {m.seq for m in loaded.messages}
    for seq, problems in by_seq.items():
        if seq not in loaded_seqs and any(p.kind is ProblemKind.TURN for p in problems):
            shown.append({"seq": seq, "role": "?", "parts": [], "when": "", "model": "",
                          "incomplete": False,
                          "damaged": True, "missing": True, "native": [], "payloads": [],
                          "reasoning_count": 0,
                          "problems": [_problem(p) for p in problems]})
    return sorted(shown, key=lambda t: t["seq"])


def _problem(problem: LoadProblem) -> dict[str, Any]:
    return {"kind": problem.kind.value, "part": problem.part, "detail": problem.detail,
            "digest": problem.digest}


def branch_point(store: Store, record: SessionRecord) -> dict[str, Any] | None:
    """Where ``record`` was branched from its parent: ``turn`` (how many of the parent's turns
    it inherits) and, when the parent's history has since been replaced (compaction, restore),
    ``generation``: the parent's archived generation those turns belong to, and ``ended_by``.

    Replacing a history detaches its branches onto their own copy of the entries they inherited,
    stamped with the archiving time, and sets their ``fork_point`` to 0 (``store.generations``):
    the stored fork point then no longer says where the branch was made. Those copies do: they
    are the branch's first turns, stamped with their generation's ``archived_at``. ``turn`` is
    None when they are gone too (the branch was itself compacted since)."""
    if not record.parent_id:
        return None
    live = {"turn": record.fork_point or 0, "generation": None, "ended_by": ""}
    try:
        archived = [g for g in store.list_generations(record.parent_id) if not g.current]
    except NotFound:  # the parent went meanwhile
        return live
    if record.fork_point or not archived or record.created_at >= archived[-1].archived_at:
        return live  # made in the parent's current history
    loaded = store.load_history(record.id, skip_damaged=True).messages
    first = loaded[0].created_at if loaded else None
    made_in = next((g for g in archived if g.archived_at == first), None)
    if made_in is not None:
        turn: int | None = next((i for i, m in enumerate(loaded)
                                 if m.seq != i or m.created_at != first), len(loaded))
    else:  # nothing inherited (a branch at turn 0), or the copies were compacted away since
        made_in = next((g for g in archived if record.created_at < g.archived_at), archived[-1])
        turn = 0 if len(store.list_generations(record.id)) == 1 else None
    return {"turn": turn, "generation": made_in.number,
            "ended_by": str(dict(made_in.note).get("ended_by", ""))}


def branch_tree(record: SessionRecord, family: Sequence[SessionRecord],
                placed: Callable[[SessionRecord], dict[str, Any] | None] | None = None,
                ) -> dict[str, Any]:
    """The tree of sessions sharing ``record``'s root: parents, siblings and branches, each
    node ``{"row", "current", "children", "branched"}``, children oldest first; ``branched`` is
    where the node was branched from its parent (``placed``, e.g. ``branch_point``)."""
    by_id = {r.id: r for r in family}
    by_id.setdefault(record.id, record)
    root = record
    seen = {root.id}
    while root.parent_id and root.parent_id in by_id and root.parent_id not in seen:
        root = by_id[root.parent_id]
        seen.add(root.id)
    children: dict[str, list[SessionRecord]] = {}
    for r in by_id.values():
        if r.parent_id and r.parent_id in by_id and r.id != root.id:
            children.setdefault(r.parent_id, []).append(r)

    def node(r: SessionRecord, depth: int, path: set[str]) -> dict[str, Any]:
        kids = sorted(children.get(r.id, ()), key=lambda c: c.created_at)
        return {"row": session_row(r), "current": r.id == record.id,
                "branched": placed(r) if placed and r.parent_id else None,
                "children": [node(c, depth + 1, path | {r.id}) for c in kids
                             if c.id not in path and depth < 32]}

    return node(root, 0, set())


def generations(store: Store, session_id: str) -> list[dict[str, Any]]:
    shown = []
    for g in store.list_generations(session_id):
        note = g.note if isinstance(g.note, dict) else dict(g.note)
        shown.append({"number": g.number, "turns": g.turns, "current": g.current,
                      "since": when(g.created_at), "created_at": g.created_at,
                      "ended_by": str(note.get("ended_by", "")),
                      "turns_after": note.get("turns_after"),
                      "tokens_before": note.get("tokens_before"),
                      "tokens_after": note.get("tokens_after"),
                      "summarizer": str(note.get("summarizer", "")),
                      "restored": note.get("restored")})
    return shown


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnPage:
    """Which of a session's turns one page shows: ``TURNS_PAGE`` of them, oldest first."""

    page: int
    pages: int
    total: int
    first: int  # the 0-based position of the page's first turn
    shown: int

    @classmethod
    def of(cls, total: int, page: int) -> TurnPage:
        pages = max(1, -(-total // TURNS_PAGE))
        page = min(max(page, 1), pages)
        first = (page - 1) * TURNS_PAGE
        return cls(page=page, pages=pages, total=total, first=first,
                   shown=min(TURNS_PAGE, total - first))


def session_page(store: Store, record: SessionRecord, *, tenant: str | None,
                 page: int = 1) -> dict[str, Any]:
    """What a session's page shows; of its turns, page ``page`` (``TURNS_PAGE`` a page)."""
    loaded = store.load_history(record.id, skip_damaged=True)
    cfg = record.model_config
    every = turns(loaded)
    paging = TurnPage.of(len(every), page)
    return {"session": session_row(record), "provider": _provider(record),
            "tree": branch_tree(record, store.list_sessions(tenant=tenant),
                                lambda r: branch_point(store, r)),
            "branched": branch_point(store, record),
            "generations": generations(store, record.id),
            "turns": every[paging.first:paging.first + TURNS_PAGE], "paging": paging,
            # The model that answered last: a gateway client switches models per request, and
            # the stored config keeps the one its first request named.
            "answered_by": next((t["model"] for t in reversed(every) if t["model"]), ""),
            "verdicts": [verdict_words(v) for v in listed(cfg.get("verdicts"))
                         if isinstance(v, Mapping)],
            "fingerprints": [f if isinstance(f, str) else json.dumps(f)
                             for f in listed(cfg.get("fingerprints"))]}

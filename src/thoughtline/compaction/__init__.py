"""Compaction that keeps the line of thought: compress, salvage, checkpoints, automatic compaction.

``compress`` summarizes the head of a session's history into a **checkpoint** and keeps the tail
verbatim — every retained turn's reasoning, signatures, encrypted items and opaque blocks are the
same ``Message`` values, so they go back on the wire byte for byte. A checkpoint is an ordinary
user message whose ``native`` record is ``{"thoughtline": {"checkpoint": {...}}}`` (no codec reads
that namespace, so every API sends it as plain user text). The result is written as a new
generation through the session's one persistence path (``Session.replace_history``, ``persist``):
the previous history stays in the store, restorable; when another writer went on meanwhile it
goes on a branch holding what was summarized, and one that cannot be stored is saved to a rescue
file. ``AutoCompaction`` (``auto``) wraps a session's turns; the session knows no compaction.

Cut rules (``cut_points``): leading system messages stay; the cut never separates an assistant
tool call from its results, a thinking-only turn from the turn it precedes, nor falls inside the
current tool loop (``replay.loop_start``); where the model wants whole exchanges (Gemini) it falls
only before a user message. Only checkpoints shadowed by the new one are dropped (they are in the
head, summarized again). The tail walk and the preflight check price candidates with the one
``Estimator`` (``estimate``), so they agree and compaction cannot loop; ``AutoCompaction`` also
compacts at most once per threshold crossing.

The retained tail: at least ``keep`` messages when a count is given (``--keep N``, ``/compact
N``, ``[compaction] keep``); otherwise bounded by tokens (``core.tail_budget``: a quarter of the
model's window, ``DEFAULT_WINDOW`` when unknown, and half of what the conversation costs now,
so a client compacting at a limit of its own lands well below it). A tail still over that (the
current exchange alone) first has its bulky tool outputs shortened to their head and end
(``TRIMMED`` between), which also compacts a conversation with no cut point (nothing summarized).

Salvage, when the candidate is still over budget or not smaller: prune the contents of old tool
results in the tail (the newest two kept), then cap an over-long summary; reasoning is never
touched; when nothing helps the history is left alone and the result says why.

With ``[compaction] native = true`` (``native``) the route's own compaction writes the summary
where its codec offers one (``native_compaction``): the provider's block or item is kept verbatim
in the checkpoint, and its codec sends it, alone and in place, only to the provider that made it;
any failure falls back to ours. Parts a codec calls ``position_critical`` stay with the turn they
precede, like a turn-scoped system message.

Per-model needs are data (``config/models.toml`` via ``estimate.model_facts``) that a codec may
refine with an optional ``compaction_rules(route, rules) -> CompactionRules`` hook; nothing here
branches on an API. This module knows no wire field names and no SQL.
"""

from thoughtline.compaction.auto import AutoCompaction
from thoughtline.compaction.core import (
    PRUNED,
    CompactionRules,
    CompactionSettings,
    checkpoint,
    compact_history,
    cut_points,
    is_checkpoint,
    load_settings,
    rules_for,
    summary_prompt,
)
from thoughtline.compaction.sessions import (
    CompactionResult,
    compress,
    session_estimator,
    summarizer_for,
)

__all__ = [
    "PRUNED",
    "AutoCompaction",
    "CompactionResult",
    "CompactionRules",
    "CompactionSettings",
    "checkpoint",
    "compact_history",
    "compress",
    "cut_points",
    "is_checkpoint",
    "load_settings",
    "rules_for",
    "session_estimator",
    "summarizer_for",
    "summary_prompt",
]

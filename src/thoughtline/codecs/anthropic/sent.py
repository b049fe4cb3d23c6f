"""The values Anthropic's turn encoder (``turns``) stores and carries: a turn's own facts
(``TurnExtra``), what a turn sent (``TurnAfter``) and the walk state (``State``). Plain frozen
values with no rules: ``encode`` reads them to assemble and index a request, ``turns`` makes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from thoughtline.codecs.base import Named


@dataclass(frozen=True, slots=True)
class TurnExtra(Named):
    """Anthropic's facts of a turn beside the neutral ones (``TurnFacts.extra``)."""

    #: An assistant turn's prefix stamp (``binding.stamp_of``): stale when it differs from the
    #: prefix digest the turn has now, on a model that binds blocks.
    stamp: str | None = None
    #: How many thinking parts an assistant turn has (none: nothing in it depends on keeping).
    thinking: int = 0
    #: A top-level system message's ``system`` blocks, as comma-joined JSON.
    system: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> TurnExtra:
        """``Named.from_json``, field by field (read for every stored turn of a resume)."""
        return cls.of_fields(raw.get("stamp"), raw.get("thinking", 0), raw.get("system"))


@dataclass(frozen=True, slots=True)
class TurnAfter(Named):
    """What one turn sent, as the walk, the request log and a rejection read it."""

    #: Each block's type, in order.
    kinds: tuple[str, ...] = ()
    #: The message part behind each block.
    parts: tuple[int, ...] = ()
    #: The blocks made from thinking parts whose fingerprint (``walk.part_fingerprint``, what a
    #: rejection teaches) the block itself gives: read from the turn's bytes when a rejection
    #: asks (``encode.Index.fingerprints``), so no request hashes the signatures it carries.
    reasoning: tuple[int, ...] = ()
    #: (block, fingerprint) of the others: a signed part sent without its signature.
    thinking: tuple[tuple[int, str], ...] = ()
    #: Thinking parts left out (scope, rejection, incomplete, earlier turns).
    omitted: int = 0
    #: The digest of the wire message without its thinking (``binding.visible``), hex; "" when
    #: nothing was sent or the target does not bind blocks.
    visible: str = ""
    #: The binding chain after the turn: has a block gone out, has the chain been cut.
    started: bool = False
    cut: bool = False

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> TurnAfter:
        """``Named.from_json``, field by field (read for every stored turn of a resume)."""
        get = raw.get
        thinking = get("thinking")
        return cls.of_fields(tuple(get("kinds", ())), tuple(get("parts", ())),
                             tuple(get("reasoning", ())),
                             tuple(map(tuple, thinking)) if thinking else (), get("omitted", 0),
                             get("visible", ""), get("started", False), get("cut", False))


@dataclass(frozen=True, slots=True)
class State:
    """The walk state: the rules of the request and what the turns so far carried."""

    loop: int  # the first turn of the current tool loop (0 when every turn keeps its thinking)
    last: int  # the last assistant turn (-1: none, or it does not matter)
    keep_prior: bool  # the target model keeps earlier turns' thinking
    binds: bool  # the target model binds blocks to their prefix
    behavior: str | None  # prefix_mismatch_behavior
    chain_matters: bool  # binds and a fingerprint was rejected: the chain can change a block
    system: tuple[str, ...]  # the top-level system messages' blocks (``TurnExtra.system``)
    running: bytes  # the prefix digest so far (binding models)
    started: bool = False
    cut: bool = False
    stale: int = 0  # turns stamped under another prefix

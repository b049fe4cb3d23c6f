"""The typed profile of an Anthropic-format route, made from a row of ``routes/anthropic.toml``.

Owns what a route does with stored thinking (``replay``) and the signature scope (``accepts``):
a Claude signature goes only to a Claude model that can read it — the same model on any
platform (ids normalised by ``models.normalize``), or one of the cross-model reads of
the preserved-thinking page — and, where blocks are bound to an account (Sonnet/Haiku 5.5, and every
block on Bedrock, whose organisation check removes blocks from other accounts), only within the
same platform and account. A vendor's own signed blocks (MiniMax, Kimi) go back only to that
vendor. Nothing here builds a body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from thoughtline.codecs.anthropic import models
from thoughtline.codecs.base import Profile
from thoughtline.errors import ConfigError
from thoughtline.messages import Origin
from thoughtline.verdicts import Verdict

#: ``signed``: Claude blocks verbatim, in scope; ``strip-signed``: drop signed and redacted blocks,
#: keep unsigned thinking (DeepSeek); ``strip-all``: no thinking at all (unknown relays);
#: ``own-signed``: the vendor's own signed blocks, unchanged, every turn (MiniMax); ``as-is``: the
#: vendor's own blocks as received, unsigned thinking made from stored text (Kimi /coding).
Replay: TypeAlias = Literal["signed", "strip-signed", "strip-all", "own-signed", "as-is"]
Platform: TypeAlias = Literal["anthropic", "vertex", "foundry", "bedrock", "vendor"]
_CLAUDE_APIS = frozenset({"anthropic", "bedrock"})  # Claude thinking in the shared canonical shape


@dataclass(frozen=True, kw_only=True, slots=True)
class AnthropicProfile(Profile):
    """What one Anthropic-format route reads back and how requests to it are shaped."""

    row: str
    replay: Replay = "signed"
    platform: Platform = "anthropic"
    #: ``anthropic-version`` sent when the client gave none; "" sends none (pass-through only).
    version: str = ""
    #: Vertex: ``anthropic_version`` in the body, and no ``model`` (it is in the URL).
    body_version: str = ""
    #: The platform requests go to without a base URL, and how they authenticate there
    #: (``routes/platforms.toml``).
    endpoint: str = "anthropic"
    betas: tuple[str, ...] = ()
    #: The platform names models itself (Vertex URL, Bedrock ids): keep ``model`` out of the body.
    model_in_url: bool = False

    @classmethod
    def from_row(cls, row: str, raw: Mapping[str, Any]) -> AnthropicProfile:
        replay = raw.get("replay", "signed")
        platform = raw.get("platform", "anthropic")
        if replay not in get_args(Replay) or platform not in get_args(Platform):
            raise ConfigError(f"anthropic route {row!r}: replay {replay!r} / platform "
                              f"{platform!r} not one of {get_args(Replay)} / {get_args(Platform)}")
        try:
            return cls(row=row, replay=replay, platform=platform,
                       version=str(raw.get("version", "")),
                       body_version=str(raw.get("body_version", "")),
                       endpoint=str(raw.get("endpoint", "anthropic")),
                       betas=tuple(str(b) for b in raw.get("betas", ())),
                       model_in_url=bool(raw.get("model_in_url", False)))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"anthropic route {row!r}: malformed profile ({exc})") from exc

    def narrowed(self, verdicts: Sequence[Verdict]) -> AnthropicProfile:
        # Anthropic lessons are fingerprints and settings, never carrier verdicts.
        return self

    @property
    def keeps_signed(self) -> bool:
        return self.replay in ("signed", "own-signed", "as-is")

    @property
    def keeps_unsigned(self) -> bool:
        return self.replay in ("strip-signed", "as-is")

    def accepts(self, origin: Origin, target: Origin) -> bool:
        """The signature scope: may a signed/redacted block made at ``origin`` go to ``target``?"""
        if self.replay in ("own-signed", "as-is"):
            return origin.provider == target.provider and origin.host == target.host
        if self.replay != "signed":
            return False
        if origin.api not in _CLAUDE_APIS or not models.is_claude(origin.model):
            return False  # never a vendor's signature to Claude
        if not models.is_claude(target.model):
            return False  # never a Claude signature to a non-Claude model
        if not models.reads(target.model, origin.model, claude_api=self.platform == "anthropic"):
            return False
        if self.platform == "bedrock" or models.account_bound(origin.model):
            return (platform_of(origin) == platform_of(target)
                    and origin.account == target.account)
        return True

    def describe(self) -> list[str]:
        words = {
            "signed": "signed thinking and redacted blocks, verbatim and in order, to a Claude "
                      "model that can read them (same model, or a documented cross-model read)",
            "strip-signed": "unsigned thinking from the stored text; signed and redacted blocks "
                            "are left out",
            "strip-all": "no thinking at all",
            "own-signed": "this vendor's own signed thinking blocks, unchanged; nothing else",
            "as-is": "this vendor's own thinking blocks as received; other turns' thinking as "
                     "unsigned thinking from the stored text",
        }
        lines = [f"replayed on assistant turns: {words[self.replay]}"]
        if self.replay == "signed":
            lines.append("earlier turns: all thinking on Opus >= 4.5, Sonnet >= 4.6, Haiku >= "
                         "5.5 and other Claude >= 5.0; only the last assistant turn's on older "
                         "models; the current tool loop always")
            lines.append("reasoning that cannot go signed is left out, never sent as text")
        if self.platform == "bedrock":
            lines.append("only blocks minted in the same AWS account (organisation check)")
        return lines

    def public_json(self) -> dict[str, Any]:
        return {"thinking_replay": self.replay, "platform": self.platform,
                "anthropic_version": self.version or None, "betas": list(self.betas)}


def platform_of(origin: Origin) -> str:
    """The platform a block was minted on, from its origin's API and route row."""
    if origin.api == "bedrock":
        return "bedrock"
    from thoughtline.routes.resolve import api_table

    table = api_table("anthropic")
    # With no host (a preset whose URL is built from a region) the provider id picks the row,
    # as it does for the route itself (``codec.route_row``): else Bedrock's Messages row, which
    # names a path, is missed and a host-less Bedrock target reads as a vendor's.
    provider = origin.provider.strip().lower()
    listed = None if origin.host else next((r for r in table.rows if provider in r.providers),
                                           None)
    # An origin keeps only its host, not the URL path: treat the rows' path selectors as met.
    row = listed or table.match(origin.provider, f"https://{origin.host}/anthropic"
                                if origin.host else None)
    return str(row.profile.get("platform", "vendor"))

"""Which reasoning of a stored assistant turn a Bedrock model receives, as neutral decisions.

Owns the per-model replay rules (docs/providers.md "Bedrock"; sources in routes/bedrock.toml),
applied to one
part at a time: the profile says what a turn before the current tool loop and a turn inside it
carry; the plan's scope says whose opaque values the target may read; rejected fingerprints are
never sent again. ``encode`` turns a decision into wire blocks. Pure: nothing here reads or
changes a history.

- signed (Claude): a signed block verbatim (``text: ""`` for a signature-only one), a redacted
  block verbatim; never readable reasoning without its signature.
- strip (DeepSeek-R1): nothing.
- redacted-only (GPT-5.6, xAI): the model's own opaque reasoning verbatim, never readable text.
- unsigned (gpt-oss, Nova, MiniMax, others): readable text, never a signature or opaque value.
- region-bound (Kimi K3): nothing before the loop; inside it, its opaque value only when it
  cannot leave its region (the profile's scope).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from thoughtline.codecs.base import profile_of
from thoughtline.codecs.bedrock.profile import BedrockProfile
from thoughtline.codecs.bedrock.wire import REASONING_TEXT, REDACTED, SIGNATURE
from thoughtline.messages import Origin, Reasoning, fingerprint
from thoughtline.replay import ReplayPlan

#: How a kept reasoning part goes on the wire.
Form = Literal["signed", "text", "redacted", "encrypted"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Send:
    form: Form
    text: str = ""
    value: str = ""  # the signature, or the opaque data
    fingerprint: str = ""  # the identity a rejection of this value is recorded under


def fingerprint_of(part: Reasoning) -> str:
    """The fingerprint a rejected value of ``part`` is known by (Anthropic block type names, so
    a value rejected on one Claude platform is never sent on another)."""
    if part.signature:
        return fingerprint("thinking", part.signature)
    if part.kind == "redacted" and part.data:
        return fingerprint("redacted_thinking", part.data)
    return fingerprint(REDACTED, part.data) if part.data else ""


def decide(part: Reasoning, turn_origin: Origin | None, plan: ReplayPlan, *,
           in_loop: bool) -> Send | None:
    """What of ``part`` goes to the plan's target (None: nothing)."""
    if not part.complete:
        return None  # cut before its signature (or its end): never sent as if whole
    profile = profile_of(plan, BedrockProfile)
    carries = profile.carries(in_loop=in_loop)
    origin = part.origin or turn_origin
    fp = fingerprint_of(part)
    opaque_ok = REDACTED in carries and plan.may_replay(origin) and not plan.rejected(fp)
    if part.signature:
        signed_ok = (SIGNATURE in carries and REASONING_TEXT in carries
                     and plan.may_replay(origin) and not plan.rejected(fp))
        if signed_ok:
            return Send(form="signed", text=part.text or "", value=part.signature, fingerprint=fp)
        return _readable(part, carries, signed_only=profile.signed_only)
    if part.kind == "redacted" and part.data:
        return Send(form="redacted", value=part.data, fingerprint=fp) if opaque_ok else None
    if part.data:
        return Send(form="encrypted", value=part.data, fingerprint=fp) if opaque_ok else None
    return _readable(part, carries, signed_only=profile.signed_only)


def _readable(part: Reasoning, carries: frozenset[str], *, signed_only: bool) -> Send | None:
    """Readable thinking alone, with no signature field (gpt-oss rejects even an empty one);
    never to a model that only takes signed blocks (Claude: "thinking.signature: Field
    required", maximhq/bifrost#6942)."""
    text = part.text or part.summary or ""
    if signed_only or REASONING_TEXT not in carries or not text:
        return None
    return Send(form="text", text=text)

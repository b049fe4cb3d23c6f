"""A Converse request assembled from turns read back from storage is the request encoded fresh,
and reads back like it.

The core's wire cache stores each turn's blocks with its facts and after facts as JSON, and on a
resume walks the stored turns without decoding them: a turn's context (inside the current tool
loop or not) comes from the walk state, ``assemble`` merges same-role turns and locates each
opaque block from the after facts read back — what a rejection naming ``messages.N.content.M``
and the request log read. So for random histories under every plan, with a new question or in
the middle of a tool loop, a walk over the read-back values gives the same bytes, summary and
lessons as ``walk_turns`` over the messages.
"""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bedrock_properties import TARGETS, histories

from helpers_turns import same_request
from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.bedrock.policy import fingerprint_of
from thoughtline.messages import Message, Reasoning, user
from thoughtline.verdicts import Verdict

WORDINGS = (
    "Invalid `signature` in `thinking` block",
    "This model doesn't support the reasoningContent.reasoningText.signature field. Remove it.",
    "User messages cannot contain reasoning content.",
    "Encrypted content cannot be used in a different region from the one that created it.",
)


@settings(max_examples=150)
@given(history=histories(), target=st.sampled_from((*TARGETS, "moonshotai.kimi-k3")),
       lesson=st.sampled_from(["none", "fingerprinted", "reasoningContent", "signature"]),
       question=st.booleans())
def test_a_bedrock_request_from_read_back_turns_is_the_fresh_one(
        history: list[Message], target: str, lesson: str, question: bool) -> None:
    codec = registry.codec("bedrock")
    route = codec.resolve("bedrock", None, target)
    found = sorted({fingerprint_of(p) for m in history for p in m.parts
                    if isinstance(p, Reasoning)} - {""})
    verdicts = [] if lesson in ("none", "fingerprinted") else [Verdict(
        provider=route.provider, host=route.host, model=route.model, drop=frozenset({lesson}),
        reason="a test's lesson")]
    plan = replay.plan(route, verdicts, fingerprints=found[::2] if lesson == "fingerprinted"
                       else (), region="us-east-1")
    view = list(replay.answered(history, [user("next")] if question else []))
    bodies = [orjson.dumps({"message": w}).decode() for w in WORDINGS]
    bodies += [orjson.dumps({"message": f"messages.{m}.content.{b}: Invalid `signature` in "
                                        "`thinking` block"}).decode()
               for m in range(6) for b in range(3)]
    same_request("bedrock", view, plan, target, bodies)

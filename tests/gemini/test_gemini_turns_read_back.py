"""A Gemini request assembled from turns read back from storage is the request encoded fresh, and
reads back like it.

The core's wire cache stores each turn's bytes with its facts and after facts as JSON, and on a
resume walks the stored turns without decoding them: contexts come from the walk state (the call
names and text mode a result answers, every call signed), the state advances on the after facts
read back, and ``assemble`` builds the request — whose rejections and request-log summary are
read from those facts alone. So for random histories under every plan the facts and after facts
survive JSON, and a walk over the read-back values gives the same bytes, summary and lessons as
``walk_turns`` over the messages. And one cache over histories that share a prefix (the core
continues its previous walk from there) gives each the fresh request.
"""

from __future__ import annotations

from gemini_histories import HISTORIES, PROVIDERS, SIGNATURES
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_turns import same_request
from thoughtline import replay
from thoughtline.codecs import registry
from thoughtline.codecs.base import RequestSpec, walk_turns
from thoughtline.messages import Message, fingerprint, user
from thoughtline.verdicts import Verdict
from thoughtline.wire.cache import WireCache

BODIES = (
    '{"error":{"code":400,"message":"Corrupted thought signature.","status":"INVALID_ARGUMENT"}}',
    '{"error":{"code":400,"message":"Function call is missing a thought_signature in '
    'functionCall parts.","status":"INVALID_ARGUMENT"}}',
)


@settings(max_examples=150)
@given(history=HISTORIES, provider=st.sampled_from(["pro", "flash", "vertex"]),
       lesson=st.sampled_from(["none", "calls-as-text", "sign-every", "fingerprinted"]))
def test_a_gemini_request_from_read_back_turns_is_the_fresh_one(
        history: list[Message], provider: str, lesson: str) -> None:
    config = PROVIDERS[provider]
    codec = registry.codec("gemini")
    route = codec.resolve(config.route_id, config.base_url, config.model)
    dropped = [Verdict(provider=route.provider, host=route.host, model=route.model,
                       drop=frozenset({"gemini.dummy_signature"}), reason="a test's lesson")]
    plan = replay.plan(route, dropped if lesson == "calls-as-text" else (),
                       fingerprints=[fingerprint("thoughtSignature", s) for s in SIGNATURES[:2]]
                       if lesson == "fingerprinted" else (),
                       settings={"sign_every_call": True} if lesson == "sign-every" else {},
                       account=config.project)
    view = list(replay.answered(history, [user("next")]))
    same_request("gemini", view, plan, config.model, BODIES)


@settings(max_examples=150)
@given(base=HISTORIES, first=HISTORIES, second=HISTORIES,
       provider=st.sampled_from(["pro", "vertex"]))
def test_one_cache_over_histories_sharing_a_prefix_gives_the_fresh_request(
        base: list[Message], first: list[Message], second: list[Message],
        provider: str) -> None:
    # A session's cache continues the previous walk from the last turn both histories share:
    # after ``base + first``, ``base + second`` (an edit, a branch) and ``base + first`` again
    # must answer each call by the name it has in this history, not in the one walked before.
    config = PROVIDERS[provider]
    codec = registry.codec("gemini")
    route = codec.resolve(config.route_id, config.base_url, config.model)
    plan = replay.plan(route, (), account=config.project)
    spec = RequestSpec(model=config.model)
    cache = WireCache()
    for tail in (first, second, first, []):
        view = list(replay.answered([*base, *tail], [user("next")]))
        assert codec.encode_request(view, plan, spec, cache).raw == \
            walk_turns(codec.turns, view, plan, spec).raw

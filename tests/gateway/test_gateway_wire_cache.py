"""Issue 27: a conversation's wire cache lives across its requests.

A client resends the whole history on every request; the upstream codec's wire cache of the
conversation is kept (per tenant, per conversation, per API; the most recently used few), so a
resent history encodes only its new turns. What the upstream receives is unchanged (the replay
and invariant tests compare those bytes); these tests pin that the cache is kept and bounded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from gateway_support import MODEL, TOOLS, StrippingAgent, running_gateway

from thoughtline.gateway import conversation
from thoughtline.testing import ChatEmulator


def test_a_resent_history_is_not_encoded_again(deepseek: ChatEmulator, tmp_path: Path) -> None:
    with running_gateway(deepseek, tmp_path) as gw:
        agent = StrippingAgent(gw.client("none"))
        agent.ask("Weather in Paris?")
        agent.step(stream=False)  # a tool call
        agent.step(stream=False)  # the answer
        caches = gw.gateway.conversations._caches
        assert len(caches) == 1  # one conversation, one cache, kept
        (cache,) = caches.values()
        encoded = len(cache)
        assert encoded > 0
        agent.ask("And in Rome?")
        body = {"model": MODEL, "messages": agent.messages, "tools": TOOLS}
        for _ in range(2):  # the same history twice: its turns were encoded already
            reply = gw.client("none").chat.completions.with_raw_response.create(**body)
            assert reply.http_response.status_code == 200
        assert list(caches.values()) == [cache]
        assert len(cache) <= encoded + 2  # the new question (and its answer), nothing older
    sent = [orjson.loads(r.raw) for r in deepseek.received]
    assert sent[-1]["messages"] == sent[-2]["messages"]  # same request, same bytes' meaning


class _Codec:
    api = "fake"


def test_caches_are_per_tenant_and_the_least_recently_used_go(
        deepseek: ChatEmulator, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(conversation, "CACHED_CONVERSATIONS", 2)
    with running_gateway(deepseek, tmp_path) as gw:
        keep = gw.gateway.conversations.wire_cache
        codec: Any = _Codec()
        alice, bob = keep("alice", "s1", codec), keep("bob", "s1", codec)
        assert alice is not bob  # a tenant never gets another's cache
        assert keep("alice", "s1", codec) is alice  # used last: bob's is now the oldest
        keep("alice", "s2", codec)
        assert keep("alice", "s1", codec) is alice
        assert keep("bob", "s1", codec) is not bob  # evicted, made anew
        assert len(gw.gateway.conversations._caches) == 2

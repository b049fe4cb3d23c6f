"""The route table against the providers' public docs, as a route × carrier matrix.

Every expectation below is restated from the providers' documented contracts (rows, pinned
consequences, must-echo families, keep-thinking flags, native carriers), never read back from the
table, so a change to ``table.toml`` that breaks a contract fails here.
"""

from __future__ import annotations

import copy
import tomllib
from importlib import resources
from typing import Any

import pytest

from helpers_wire import ALL_CARRIERS, OUR_KEYS, RC, RD, R, assistants, encode_on, walk_keys
from thoughtline import replay
from thoughtline.codecs.openai_chat.profile import default_table, parse_table
from thoughtline.codecs.openai_chat.profile import resolve_chat as resolve
from thoughtline.errors import ConfigError
from thoughtline.messages import (
    Message,
    Origin,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    system,
    user,
)
from thoughtline.routes import host_matches, hostname_of, is_local_endpoint
from thoughtline.verdicts import Verdict

NONE: frozenset[str] = frozenset()
RC_ONLY = frozenset({RC})
RC_R = frozenset({RC, R})
RC_RD = frozenset({RC, RD})
RC_R_RD = frozenset({RC, R, RD})

# --- the rows, restated from the providers' docs and recordings (tests/fixtures/SOURCES.md) ------

CONTRACT_ROWS: list[tuple[frozenset[str], list[str], list[str]]] = [
    (NONE, ["mistral", "groq", "sambanova"],
     ["mistral.ai", "groq.com", "sambanova.ai", "hunyuan.cloud.tencent.com"]),
    # Cerebras was once listed as strict; the evidence (a recorded accepted replay of `reasoning`,
    # public reports that only `reasoning_content` is rejected) gives it `reasoning` alone.
    (frozenset({R}), ["cerebras"], ["cerebras.ai"]),
    (RC_ONLY, ["fireworks"], ["fireworks.ai"]),
    (RC_R_RD, ["openrouter", "kilocode", "ai-gateway", "nous"],
     ["openrouter.ai", "kilo.ai", "ai-gateway.vercel.sh", "nousresearch.com"]),
    (RC_RD, ["novita", "minimax", "tencent-tokenhub"],
     ["novita.ai", "minimax.io", "minimaxi.com", "tokenhub.tencentmaas.com",
      "tokenhub-intl.tencentcloudmaas.com"]),
    (RC_R, ["ollama", "ollama-cloud", "lmstudio", "vllm", "llamacpp", "upstage"],
     ["ollama.com", "upstage.ai"]),
]

PROVIDER_CASES = [(p, carriers) for carriers, providers, _ in CONTRACT_ROWS for p in providers]
HOST_CASES = [(h, carriers) for carriers, _, hosts in CONTRACT_ROWS for h in hosts]


@pytest.mark.parametrize(("provider", "carriers"), PROVIDER_CASES)
def test_row_by_provider_id(provider: str, carriers: frozenset[str]) -> None:
    assert resolve(provider).profile.carriers == carriers
    # The provider id alone decides, whatever (public, unlisted) host it is pointed at.
    assert resolve(provider, "https://llm.example.net/v1").profile.carriers == carriers


@pytest.mark.parametrize(("provider", "carriers"), PROVIDER_CASES)
def test_provider_id_is_case_insensitive(provider: str, carriers: frozenset[str]) -> None:
    assert resolve(provider.upper()).profile.carriers == carriers


@pytest.mark.parametrize(("host", "carriers"), HOST_CASES)
def test_row_by_exact_host(host: str, carriers: frozenset[str]) -> None:
    assert resolve("custom", f"https://{host}/v1").profile.carriers == carriers


@pytest.mark.parametrize(("host", "carriers"), HOST_CASES)
def test_row_by_subdomain(host: str, carriers: frozenset[str]) -> None:
    assert resolve("custom", f"https://api.{host}/v1/").profile.carriers == carriers
    assert resolve("custom", f"https://eu.stg-1.{host}:8443/x?y=1").profile.carriers == carriers


@pytest.mark.parametrize(("host", "carriers"), HOST_CASES)
def test_host_spelling_variants_match(host: str, carriers: frozenset[str]) -> None:
    assert resolve("custom", f"HTTPS://API.{host.upper()}/V1").profile.carriers == carriers
    assert resolve("custom", f"https://user:pw@{host}:443/v1").profile.carriers == carriers
    assert resolve("custom", f"{host}/v1").profile.carriers == carriers  # no scheme
    # FQDN trailing dot
    assert resolve("custom", f"https://{host}./v1").profile.carriers == carriers


@pytest.mark.parametrize("host", [h for h, _ in HOST_CASES])
@pytest.mark.parametrize("shape", [
    "https://{h}.evil.io/v1",  # the listed host as a prefix of another domain
    "https://evil.io/{h}/v1",  # in the path
    "https://not{h}/v1",  # suffix without a label boundary
    "https://evil.io/v1?base=https://{h}",  # in the query
    "https://{h}@evil.io/v1",  # as userinfo
    "https://evil.io/v1#{h}",  # in the fragment
])
def test_lookalike_hosts_never_match(host: str, shape: str) -> None:
    # Nothing matched and the host is public: the de-facto standard, RC only.
    assert resolve("custom", shape.format(h=host)).profile.carriers == RC_ONLY


def test_no_row_no_local_endpoint_is_rc_only() -> None:
    for provider, url in [("custom", None), ("custom", ""), ("openai", "https://api.openai.com/v1"),
                          ("xai", "https://api.x.ai/v1"), ("zai", "https://api.z.ai/api/paas/v4"),
                          ("custom", "https://8.8.8.8/v1"), ("somebody", "https://llm.corp.example")]:
        assert resolve(provider, url).profile.carriers == RC_ONLY, (provider, url)


def test_rows_are_checked_in_order_first_match_wins() -> None:
    # A provider id of one row and the host of another: the earlier row wins.
    assert resolve("openrouter", "https://api.groq.com/openai/v1").profile.carriers == NONE
    assert resolve("groq", "https://openrouter.ai/api/v1").profile.carriers == NONE
    assert resolve("fireworks", "https://openrouter.ai/api/v1").profile.carriers == RC_ONLY
    assert resolve("novita", "https://openrouter.ai/api/v1").profile.carriers == RC_R_RD
    assert resolve("ollama", "https://api.novita.ai/openai/v1").profile.carriers == RC_RD
    # A listed row beats the local-endpoint rule; the local rule beats the default.
    assert resolve("mistral", "http://127.0.0.1:8080/v1").profile.carriers == NONE
    assert resolve("novita", "http://localhost:9000/v1").profile.carriers == RC_RD
    assert resolve("acme-local", "http://localhost:9000/v1").profile.carriers == RC_R


@pytest.mark.parametrize(("provider", "must_echo"), [
    ("openai", False), ("deepseek", True), ("kimi", True), ("zai", False), ("xai", False),
])
def test_a_vendor_pointed_at_loopback_keeps_its_route(provider: str, must_echo: bool) -> None:
    # docs/cli.md: --base-url keeps the provider id, so its route rules still apply (this is
    # how a real route is aimed at a loopback emulator).
    for url in (None, "http://127.0.0.1:9001/v1"):
        route = resolve(provider, url)
        assert route.profile.carriers == RC_ONLY
        assert route.profile.must_echo is must_echo


# --- the consequences the contract pins -----------------------------------------------------------

PINNED = [
    ("mistral", None, "deepseek-r1", NONE),
    ("custom", "https://api.groq.com/openai/v1", "", NONE),
    ("fireworks", None, "", RC_ONLY),
    ("nous", "https://inference-api.nousresearch.com/v1", "", RC_R_RD),
    ("kilocode", "https://api.kilo.ai/api/gateway", "", RC_R_RD),
    ("novita", "https://api.novita.ai/openai/v1", "", RC_RD),
    ("ollama-cloud", "https://ollama.com", "", RC_R),
    ("anything", "http://127.0.0.1:8080", "", RC_R),
    ("zai", "https://api.z.ai", "", RC_ONLY),
    ("openai", "https://api.openai.com", "", RC_ONLY),
]


@pytest.mark.parametrize(("provider", "url", "model", "carriers"), PINNED)
def test_pinned_consequences(provider: str, url: str | None, model: str,
                             carriers: frozenset[str]) -> None:
    route = resolve(provider, url, model)
    assert route.profile.carriers == carriers
    assert route.api == "openai-chat"


def test_mistral_serving_deepseek_r1_gets_nothing_not_even_the_pad() -> None:
    route = resolve("mistral", None, "deepseek-r1")
    assert route.profile.carriers == NONE
    assert route.profile.must_echo is False
    assert replay.plan(route).profile.pad is False


@pytest.mark.parametrize(("url", "carriers"), [
    ("https://nousresearch.com.evil.io/v1", RC_ONLY),
    ("https://evil.com/moonshot.ai/v1", RC_ONLY),
    ("https://moonshot.ai.evil/v1", RC_ONLY),
    ("https://stg-inference-api.nousresearch.com/v1", RC_R_RD),
])
def test_contract_lookalike_examples(url: str, carriers: frozenset[str]) -> None:
    route = resolve("custom", url)
    assert route.profile.carriers == carriers
    assert route.profile.must_echo is False  # moonshot.ai lookalikes are not the kimi family


# --- host matching primitives ---------------------------------------------------------------------

@pytest.mark.parametrize(("url", "host"), [
    ("https://API.Groq.com/openai/v1", "api.groq.com"),
    ("api.groq.com/openai/v1", "api.groq.com"),
    ("http://[::1]:8080/v1", "::1"),
    ("https://user:pw@host.example:99/x", "host.example"),
    ("https://host.example./v1", "host.example"),
    ("", ""),
    (None, ""),
    ("http://[not-an-ip/v1", ""),  # malformed: no hostname rather than an exception
])
def test_hostname_of(url: str | None, host: str) -> None:
    assert hostname_of(url) == host


@pytest.mark.parametrize(("hostname", "entry", "expected"), [
    ("groq.com", "groq.com", True),
    ("api.groq.com", "groq.com", True),
    ("notgroq.com", "groq.com", False),
    ("groq.com.evil.io", "groq.com", False),
    ("", "groq.com", False),
    ("token-plan.cn-beijing.maas.aliyuncs.com", "token-plan.*.maas.aliyuncs.com", True),
    ("a.token-plan.ap-southeast-1.maas.aliyuncs.com", "token-plan.*.maas.aliyuncs.com", True),
    ("token-plan.maas.aliyuncs.com", "token-plan.*.maas.aliyuncs.com", False),
    ("token-plan.a.b.maas.aliyuncs.com", "token-plan.*.maas.aliyuncs.com", False),
    ("xtoken-plan.cn.maas.aliyuncs.com", "token-plan.*.maas.aliyuncs.com", False),
    ("token-plan.cn.maas.aliyuncs.com.evil.io", "token-plan.*.maas.aliyuncs.com", False),
])
def test_host_matches(hostname: str, entry: str, expected: bool) -> None:
    assert host_matches(hostname, entry) is expected


# --- local endpoints ------------------------------------------------------------------------------

LOCAL = [
    "localhost", "LOCALHOST", "app.localhost", "127.0.0.1", "127.255.255.254", "[::1]",
    "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.255", "192.168.0.1",
    "192.168.255.254", "169.254.0.1", "169.254.169.254", "100.64.0.0", "100.64.0.1",
    "100.100.100.100", "100.127.255.255", "[fe80::1]", "[fd12:3456::1]", "[::ffff:10.1.2.3]",
]
NOT_LOCAL = [
    "8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
    "192.169.0.1", "11.0.0.1", "169.255.0.1", "[2606:4700::1111]", "localhost.example.com",
    "127.0.0.1.nip.io", "mylocalhost", "api.openai.com",
]


@pytest.mark.parametrize("host", LOCAL)
def test_local_endpoints_get_rc_and_r(host: str) -> None:
    assert is_local_endpoint(hostname_of(f"http://{host}:8080/v1"))
    assert resolve("custom", f"http://{host}:8080/v1").profile.carriers == RC_R


@pytest.mark.parametrize("host", NOT_LOCAL)
def test_public_and_boundary_addresses_are_not_local(host: str) -> None:
    assert not is_local_endpoint(hostname_of(f"http://{host}:8080/v1"))
    assert resolve("custom", f"http://{host}:8080/v1").profile.carriers == RC_ONLY


def test_cgnat_boundaries() -> None:
    # 100.64.0.0/10 is 100.64.0.0 – 100.127.255.255, nothing either side.
    assert is_local_endpoint("100.64.0.0")
    assert is_local_endpoint("100.127.255.255")
    assert not is_local_endpoint("100.63.255.255")
    assert not is_local_endpoint("100.128.0.0")
    assert not is_local_endpoint("")


# --- must-echo families (api-docs.deepseek.com, platform.kimi.ai, platform.xiaomimimo.com) --------

MUST_ECHO = [
    # kimi: provider id or host only
    ("kimi", None, "kimi-k2.6"), ("kimi-coding", None, ""), ("moonshot", None, "kimi-k2.5"),
    ("custom", "https://api.kimi.com/coding/v1", "kimi-for-coding"),
    ("custom", "https://api.moonshot.ai/v1", "kimi-k2.6"),
    ("custom", "https://api.moonshot.cn/v1", "moonshot-v1-8k"),
    # deepseek: provider, host or model id
    ("deepseek", None, ""), ("custom", "https://api.deepseek.com", "deepseek-chat"),
    ("custom", "https://api.deepseek.com/v1", "whatever"),
    ("openrouter", None, "deepseek/deepseek-r1"), ("custom", None, "DeepSeek-V3.2"),
    ("novita", None, "deepseek/deepseek-r1-0528"), ("fireworks", None, "accounts/x/deepseek-v3"),
    ("ollama", "http://localhost:11434/v1", "deepseek-r1:14b"),
    # mimo: provider, host or model id
    ("xiaomi", None, ""), ("custom", "https://api.xiaomimimo.com/v1", "x"),
    ("openrouter", None, "xiaomi/mimo-v2-flash"), ("vllm", None, "XiaomiMiMo/MiMo-7B-RL"),
]

NOT_MUST_ECHO = [
    # aggregators re-exporting Kimi are not padded
    ("openrouter", None, "moonshotai/kimi-k2.6"),
    ("custom", "https://api.avian.io/v1", "kimi-k2.5"),
    ("novita", None, "moonshotai/kimi-k2-thinking"), ("custom", None, "kimi-k2.6"),
    # strict routes never get the pad, whatever the family
    ("mistral", None, "deepseek-r1"), ("groq", None, "deepseek-r1-distill-llama-70b"),
    ("sambanova", None, "DeepSeek-R1-0528"), ("cerebras", None, "mimo-7b"),
    ("custom", "https://api.groq.com/openai/v1", "deepseek-r1"),
    # nothing of the families
    ("openai", None, "gpt-5"), ("openrouter", None, "anthropic/claude-sonnet-4.5"),
    ("zai", None, "glm-4.7"), ("custom", "https://evil.com/api.deepseek.com", "gpt"),
    ("custom", "https://api.deepseek.com.evil.io", "gpt"),
]


@pytest.mark.parametrize(("provider", "url", "model"), MUST_ECHO)
def test_must_echo_families(provider: str, url: str | None, model: str) -> None:
    route = resolve(provider, url, model)
    assert RC in route.profile.carriers
    assert route.profile.must_echo is True
    assert replay.plan(route).profile.pad is True


@pytest.mark.parametrize(("provider", "url", "model"), NOT_MUST_ECHO)
def test_not_must_echo(provider: str, url: str | None, model: str) -> None:
    route = resolve(provider, url, model)
    assert route.profile.must_echo is False
    assert replay.plan(route).profile.pad is False


@pytest.mark.parametrize(("provider", "url", "model"), MUST_ECHO)
def test_echo_never_switches_every_family_off(provider: str, url: str | None, model: str) -> None:
    route = resolve(provider, url, model, echo="never")
    assert route.profile.must_echo is False
    assert replay.plan(route).profile.pad is False
    assert resolve(provider, url, model, echo="never").profile.carriers == resolve(provider, url,
                                                                            model).profile.carriers


@pytest.mark.parametrize(("provider", "url", "model", "padded"), [
    ("openai", None, "gpt-5", True), ("custom", "http://10.0.0.2/v1", "llama", True),
    ("openrouter", None, "moonshotai/kimi-k2.6", True), ("fireworks", None, "x", True),
    # a strict route never gets the pad, not even on request
    ("groq", None, "x", False), ("mistral", None, "deepseek-r1", False),
])
def test_echo_always_opts_in(provider: str, url: str | None, model: str, padded: bool) -> None:
    route = resolve(provider, url, model, echo="always")
    assert route.profile.must_echo is padded
    assert replay.plan(route).profile.pad is padded


# --- keep-thinking body fields (docs.z.ai thinking-mode, Alibaba Model Studio deep-thinking) -----

GLM_KEEP = {"thinking": {"type": "enabled", "clear_thinking": False}}
DASHSCOPE_PRESERVE = {"preserve_thinking": True}
DASHSCOPE_GLM = {"clear_thinking": False}
KIMI_KEEP = {"thinking": {"type": "enabled", "keep": "all"}}

DASHSCOPE_HOSTS = [
    "dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "coding.dashscope.aliyuncs.com",
    "coding-intl.dashscope.aliyuncs.com", "token-plan.cn-beijing.maas.aliyuncs.com",
    "token-plan.ap-southeast-1.maas.aliyuncs.com",
]

KEEP_CASES: list[tuple[str, str | None, str, dict[str, Any]]] = [
    *[(p, None, m, GLM_KEEP) for p in ("zai", "glm", "zhipu")
      for m in ("glm-4.5", "glm-4.5-air", "glm-4.6", "glm-4.7", "glm-4.7-flash", "GLM-5",
                "glm-5.1", "glm-4.10")],
    *[("custom", f"https://{h}/api/paas/v4", "glm-4.7", GLM_KEEP)
      for h in ("api.z.ai", "open.bigmodel.cn")],
    *[("zai", None, m, {}) for m in ("glm-4", "glm-4-32b-0414", "glm-4.1v-thinking", "glm-3-turbo",
                                     "charglm-3")],
    *[("custom", f"https://{h}/compatible-mode/v1", m, DASHSCOPE_PRESERVE) for h in DASHSCOPE_HOSTS
      for m in ("qwen3.6-plus", "qwen3.7-max", "kimi-k2.6", "kimi-k2.7")],
    *[("custom", f"https://{h}/compatible-mode/v1", m, DASHSCOPE_GLM) for h in DASHSCOPE_HOSTS
      for m in ("glm-5", "glm-5.1")],
    *[("custom", f"https://{h}/compatible-mode/v1", m, {}) for h in DASHSCOPE_HOSTS
      for m in ("qwen3.5-plus", "qwen3-max", "qwen-plus", "kimi-k2.5", "deepseek-v3.2")],
    ("dashscope", None, "qwen3.6-plus", DASHSCOPE_PRESERVE),
    ("dashscope", None, "qwen3.5-plus", {}),
    *[(p, None, m, KIMI_KEEP) for p in ("kimi", "kimi-coding", "moonshot")
      for m in ("kimi-k2.6", "kimi-k2.7", "kimi-k2.6-preview")],
    ("custom", "https://api.moonshot.cn/v1", "kimi-k2.6", KIMI_KEEP),
    ("custom", "https://api.kimi.com/coding/v1", "kimi-k2.7", KIMI_KEEP),
    *[("kimi", None, m, {})
      for m in ("kimi-k2.5", "kimi-k2.7-code", "kimi-k3", "kimi-k2-thinking")],
    # the flags belong to their server, not to a model served elsewhere
    ("openrouter", None, "z-ai/glm-4.7", {}), ("openrouter", None, "moonshotai/kimi-k2.6", {}),
    ("openrouter", None, "qwen/qwen3.6-plus", {}), ("custom", None, "glm-4.7", {}),
    ("custom", "https://dashscope.aliyuncs.com.evil.io/v1", "qwen3.6-plus", {}),
    ("custom", "https://token-plan.maas.aliyuncs.com/v1", "qwen3.6-plus", {}),
]


@pytest.mark.parametrize(("provider", "url", "model", "extras"), KEEP_CASES)
def test_keep_thinking_body_fields(provider: str, url: str | None, model: str,
                                   extras: dict[str, Any]) -> None:
    route = resolve(provider, url, model)
    assert dict(route.profile.body_extras) == extras
    _, _, body = encode_on([user("hi")], provider, url, model)
    for key, value in extras.items():
        assert body[key] == value
    if not extras:
        assert not {"thinking", "preserve_thinking", "clear_thinking"} & body.keys()


def test_keep_thinking_fields_merge_with_caller_params() -> None:
    _, _, body = encode_on([user("hi")], "zai", None, "glm-4.7",
                           params={"thinking": {"type": "enabled"}, "temperature": 0.2})
    assert body["thinking"] == {"type": "enabled", "clear_thinking": False}
    assert body["temperature"] == 0.2
    # The route's own extras are not changed by a request that merged into them.
    assert dict(resolve("zai", None, "glm-4.7").profile.body_extras) == GLM_KEEP


# --- provider-native carriers (Gemini OpenAI compatibility, GitHub Copilot) -----------------------

GEMINI_HOST = "generativelanguage.googleapis.com"
NATIVE_CASES = [
    ("gemini-openai", None, "gemini-3-pro-preview", {"google"}),
    ("gemini-openai", None, "", {"google"}),
    ("custom", f"https://{GEMINI_HOST}/v1beta/openai", "gemini-2.5-pro", {"google"}),
    ("custom", f"https://{GEMINI_HOST}/v1beta/openai", "x", {"google"}),
    ("custom", "https://aiplatform.googleapis.com/v1/projects/p/endpoints/openapi", "x",
     {"google"}),
    ("custom", None, "gemini-3-flash", {"google"}),  # a Gemini model id on a plain endpoint
    ("custom", "http://127.0.0.1:4000/v1", "gemini-2.5-pro", {"google"}),
    ("copilot", None, "claude-sonnet-4.5", {"copilot"}),
    ("copilot", None, "gemini-3-pro", {"copilot"}),
    ("custom", "https://api.githubcopilot.com", "gpt-5", {"copilot"}),
    # OpenRouter-format gateways carry Gemini signatures in reasoning_details, never natively
    ("openrouter", None, "google/gemini-3-pro-preview", set()),
    ("ai-gateway", None, "google/gemini-3-pro-preview", set()),
    ("kilocode", None, "google/gemini-2.5-pro", set()),
    ("custom", "https://openrouter.ai/api/v1", "google/gemini-3-pro-preview", set()),
    ("groq", None, "gemini", set()),
    ("openai", None, "gpt-5", set()), ("deepseek", None, "deepseek-reasoner", set()),
    ("custom", "https://generativelanguage.googleapis.com.evil.io/v1", "gpt", set()),
    ("custom", "https://githubcopilot.com.evil.io/v1", "gpt", set()),
]


@pytest.mark.parametrize(("provider", "url", "model", "native"), NATIVE_CASES)
def test_native_carriers(provider: str, url: str | None, model: str, native: set[str]) -> None:
    route = resolve(provider, url, model)
    assert set(route.profile.native) == native
    assert replay.plan(route).profile.native == route.profile.native


# --- replay plans: learned verdicts narrow (or pad) a route ---------------------------------------

def _verdict(route_provider: str, url: str | None, model: str, **kw: Any) -> Verdict:
    route = resolve(route_provider, url, model)
    return Verdict(provider=route.provider, host=route.host, model=route.model, **kw)


def test_verdict_drop_narrows_only_its_own_route() -> None:
    route = resolve("openrouter", None, "anthropic/claude-sonnet-4.5")
    dropped = _verdict("openrouter", None, "anthropic/claude-sonnet-4.5",
                       drop=frozenset({R, RD}))
    assert replay.plan(route, [dropped]).profile.carriers == RC_ONLY
    sibling = resolve("openrouter", None, "anthropic/claude-opus-4.5")
    # a sibling keeps every carrier
    assert replay.plan(sibling, [dropped]).profile.carriers == RC_R_RD


def test_dropping_rc_drops_the_pad() -> None:
    route = resolve("deepseek", None, "deepseek-reasoner")
    verdict = _verdict("deepseek", None, "deepseek-reasoner", drop=frozenset({RC}))
    planned = replay.plan(route, [verdict])
    assert planned.profile.carriers == NONE
    assert planned.profile.pad is False


def test_learned_pad_only_where_rc_is_read() -> None:
    for provider, padded in [("openai", True), ("openrouter", True), ("groq", False),
                             ("copilot", False)]:
        route = resolve(provider, None, "m")
        verdict = _verdict(provider, None, "m", pad=True)
        assert replay.plan(route, [verdict]).profile.pad is padded, provider


def test_verdict_json_round_trip_and_merge() -> None:
    first = Verdict(provider="p", host="h", model="m", drop=frozenset({RD}), reason="a")
    second = Verdict(provider="p", host="h", model="m", drop=frozenset({R}), pad=True, reason="b")
    assert Verdict.from_json(first.to_json()) == first
    merged = first.merged(second)
    assert merged.drop == {R, RD} and merged.pad and merged.reason == "a; b"
    assert merged.key == ("p", "h", "m")


def test_plan_key_is_hashable_and_ignores_body_extras() -> None:
    one = replay.plan(resolve("zai", None, "glm-4.7"))
    two = replay.plan(resolve("zai", None, "glm-4"))
    assert one.profile.body_extras != two.profile.body_extras
    assert one.key[0] == two.key[0] and one.key[1] != two.key[1]  # the target (model) differs
    same = replay.plan(resolve("zai", None, "glm-4.7"))
    assert one.key == same.key and hash(one) == hash(same)
    # The signature scope includes the host: another host is another target (issue 9.3).
    elsewhere = replay.plan(resolve("zai", "https://api.z.ai/api/paas/v4", "glm-4.7"))
    assert one.key[0] == elsewhere.key[0] and one.key != elsewhere.key


# --- the wire: route × turn -----------------------------------------------------------------------

ORIGIN = Origin(api="openai-chat", provider="prior", model="prior-model")
RD_SIGNED = {"type": "reasoning.text", "text": "signed thought", "signature": "c2lnbmF0dXJl==",
             "format": "anthropic-claude-v1", "index": 0}
RD_ENCRYPTED = {"type": "reasoning.encrypted", "data": "gAAAAB-opaque_==", "id": "rs_1",
                "format": "openai-responses-v1", "index": 0}


def _assistant(*parts: Any, **kw: Any) -> Message:
    return Message(role="assistant", parts=tuple(parts), origin=ORIGIN, **kw)


def _rd(item: dict[str, Any]) -> Reasoning:
    kind = "encrypted" if item["type"] == "reasoning.encrypted" else "signed"
    return Reasoning(kind=kind, text=item.get("text"), signature=item.get("signature"),
                     data=item.get("data"), origin=ORIGIN, native={"openrouter": item})


CALL = ToolCall(id="call_1", name="weather", arguments='{"city": "Paris"}')

# name -> (assistant turn, readable reasoning the contract says is replayed, RD items it holds)
TURNS: dict[str, tuple[Message, str, list[dict[str, Any]]]] = {
    "reasoning+tool": (_assistant(Reasoning(kind="text", text="I should call weather."),
                                  Text(text="Checking."), CALL), "I should call weather.", []),
    "no-reasoning": (_assistant(Text(text="Hello.")), "", []),
    "no-reasoning+tool": (_assistant(CALL), "", []),
    "stored-empty": (_assistant(Reasoning(kind="text", text=""), CALL), "", []),
    "stored-whitespace": (_assistant(Reasoning(kind="text", text=" \n\t "), CALL), "", []),
    "stored-pad": (_assistant(Reasoning(kind="text", text=" "), Text(text="x")), "", []),
    "flat+rd": (_assistant(Reasoning(kind="text", text="signed thought"), _rd(RD_SIGNED), CALL),
                "signed thought", [RD_SIGNED]),
    "encrypted-only": (_assistant(_rd(RD_ENCRYPTED), Text(text="Done.")), "", [RD_ENCRYPTED]),
}

# id -> (provider, base URL, model, echo, carriers by the contract, must-echo by the contract)
WIRE_ROUTES: dict[str, tuple[str, str | None, str, str, frozenset[str], bool]] = {
    "mistral+deepseek-r1": ("mistral", None, "deepseek-r1", "auto", NONE, False),
    "groq+echo-always": ("groq", None, "qwen3-32b", "always", NONE, False),
    "custom@groq": ("custom", "https://api.groq.com/openai/v1", "deepseek-r1", "auto", NONE, False),
    "fireworks": ("fireworks", None, "llama-v3", "auto", RC_ONLY, False),
    "fireworks+deepseek": ("fireworks", None, "accounts/fireworks/models/deepseek-r1", "auto",
                           RC_ONLY, True),
    "openrouter": ("openrouter", None, "anthropic/claude-sonnet-4.5", "auto", RC_R_RD, False),
    "openrouter+deepseek": ("openrouter", None, "deepseek/deepseek-r1", "auto", RC_R_RD, True),
    "openrouter+deepseek+never": ("openrouter", None, "deepseek/deepseek-r1", "never", RC_R_RD,
                                  False),
    "openrouter+kimi": ("openrouter", None, "moonshotai/kimi-k2.6", "auto", RC_R_RD, False),
    "nous@stg": ("nous", "https://stg-inference-api.nousresearch.com/v1", "Hermes-4", "auto",
                 RC_R_RD, False),
    "novita": ("novita", "https://api.novita.ai/openai/v1", "meta-llama/llama-4", "auto", RC_RD,
               False),
    "minimax": ("minimax", None, "MiniMax-M2", "auto", RC_RD, False),
    "ollama-cloud": ("ollama-cloud", "https://ollama.com", "gpt-oss:120b", "auto", RC_R, False),
    "local+deepseek": ("custom", "http://192.168.1.20:8000/v1", "deepseek-r1:14b", "auto", RC_R,
                       True),
    "deepseek": ("deepseek", "https://api.deepseek.com", "deepseek-reasoner", "auto", RC_ONLY,
                 True),
    "deepseek+never": ("deepseek", "https://api.deepseek.com", "deepseek-reasoner", "never",
                       RC_ONLY, False),
    "kimi": ("kimi", "https://api.moonshot.ai/v1", "kimi-k2.6", "auto", RC_ONLY, True),
    "xiaomi": ("xiaomi", None, "mimo-v2-flash", "auto", RC_ONLY, True),
    "openai": ("openai", "https://api.openai.com/v1", "gpt-5", "auto", RC_ONLY, False),
    "openai+always": ("openai", "https://api.openai.com/v1", "gpt-5", "always", RC_ONLY, True),
    "zai": ("zai", "https://api.z.ai/api/paas/v4", "glm-4.7", "auto", RC_ONLY, False),
}


@pytest.mark.parametrize("turn", list(TURNS))
@pytest.mark.parametrize("route_id", list(WIRE_ROUTES))
def test_route_by_turn_on_the_wire(route_id: str, turn: str) -> None:
    provider, url, model, echo, carriers, must_echo = WIRE_ROUTES[route_id]
    message, thought, items = TURNS[turn]
    history = [system("sys"), user("q"), message, user("next")]
    route, _, body = encode_on(history, provider, url, model, echo=echo)
    assert route.profile.carriers == carriers
    assert route.profile.must_echo is must_echo

    (wire,) = assistants(body)
    expected: dict[str, Any] = {}
    if RC in carriers and thought:
        expected[RC] = thought
    elif RC in carriers and must_echo:
        expected[RC] = " "  # the pad: never "" and never null
    if R in carriers and thought:
        expected[R] = thought
    if RD in carriers and items:
        expected[RD] = items
    assert {k: wire[k] for k in ALL_CARRIERS & wire.keys()} == expected

    assert not (set(walk_keys(body)) & OUR_KEYS)
    assert "reasoning_opaque" not in wire and "extra_content" not in wire
    # nothing to do with reasoning changes for the other roles
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    assert body["messages"][-1] == {"role": "user", "content": "next"}


@pytest.mark.parametrize("route_id", list(WIRE_ROUTES))
def test_whole_conversation_carries_only_the_route_carriers(route_id: str) -> None:
    provider, url, model, echo, carriers, must_echo = WIRE_ROUTES[route_id]
    history: list[Message] = [system("sys"), user("q")]
    for message, _, _ in TURNS.values():
        history.append(message)
        if message.tool_calls:
            history.append(Message(role="tool", parts=(ToolResult(call_id="call_1",
                                                                 content="sunny"),)))
        history.append(user("go on"))
    _, _, body = encode_on(history, provider, url, model, echo=echo)
    wire_assistants = assistants(body)
    assert len(wire_assistants) == len(TURNS)
    for wire in wire_assistants:
        assert ALL_CARRIERS & wire.keys() <= carriers
        if RC in wire:
            assert isinstance(wire[RC], str) and wire[RC] != ""
        if must_echo:
            assert RC in wire  # every assistant turn carries RC on a must-echo route
    for message in body["messages"]:
        if message["role"] != "assistant":
            assert not ALL_CARRIERS & message.keys()


def test_a_verdict_drop_removes_the_carrier_from_the_wire() -> None:
    message, _, _ = TURNS["flat+rd"]
    verdict = _verdict("openrouter", None, "anthropic/claude-sonnet-4.5", drop=frozenset({RD}))
    _, plan, body = encode_on([user("q"), message], "openrouter", None,
                              "anthropic/claude-sonnet-4.5", verdicts=[verdict])
    (wire,) = assistants(body)
    assert plan.profile.carriers == {RC, R}
    assert RD not in wire and wire[RC] == wire[R] == "signed thought"


# --- routes are data: adding a vendor is one entry ------------------------------------------------

def _raw_table() -> dict[str, Any]:
    text = resources.files("thoughtline.routes").joinpath("openai-chat.toml").read_text("utf-8")
    return tomllib.loads(text)


def test_adding_a_vendor_is_data_only() -> None:
    raw = copy.deepcopy(_raw_table())
    raw["row"].insert(0, {"id": "acme", "providers": ["acme"], "hosts": ["acme-llm.example"],
                          "explain": "Acme documents RD replay", "profile": {"carriers": [RC, RD]}})
    raw["echo"].append({"family": "acme", "providers": ["acme"], "hosts": [],
                        "models_contain": ["acme-think"]})
    raw["keep"].append({"id": "acme", "providers": ["acme"], "hosts": ["acme-llm.example"],
                        "rules": [{"models": ["acme-think-[2-9]"],
                                   "body": {"acme_keep": True}}]})
    table = parse_table(raw)

    assert resolve("acme", table=table).profile.carriers == RC_RD
    eu = resolve("custom", "https://eu.api.acme-llm.example/v1", table=table)
    assert eu.profile.carriers == RC_RD
    evil = resolve("custom", "https://acme-llm.example.evil.io/v1", table=table)
    assert evil.profile.carriers == RC_ONLY
    route = resolve("acme", None, "acme-think-3", table=table)
    assert route.profile.must_echo is True
    assert dict(route.profile.body_extras) == {"acme_keep": True}
    assert dict(resolve("acme", None, "acme-think-1", table=table).profile.body_extras) == {}
    # every other row is unchanged in the new table, and the shipped table is untouched
    for provider, carriers in PROVIDER_CASES:
        assert resolve(provider, table=table).profile.carriers == carriers
    assert resolve("acme").profile.carriers == RC_ONLY
    assert resolve("acme", table=default_table()).profile.must_echo is False


def test_table_must_end_with_a_catch_all() -> None:
    raw = copy.deepcopy(_raw_table())
    raw["row"] = [r for r in raw["row"] if r["id"] != "default"] or raw["row"]
    with pytest.raises(ConfigError):
        parse_table(raw)


@pytest.mark.parametrize("breakage", ["no-carriers", "bad-regex", "no-rows"])
def test_malformed_table_is_a_config_error(breakage: str) -> None:
    raw = copy.deepcopy(_raw_table())
    if breakage == "no-carriers":
        del raw["row"][0]["profile"]["carriers"]
    elif breakage == "bad-regex":
        raw["keep"][0]["rules"][0]["models"] = ["glm-(4"]
    else:
        del raw["row"]
    with pytest.raises(ConfigError):
        parse_table(raw)


def test_route_json_is_the_public_shape() -> None:
    route = resolve("openrouter", None, "deepseek/deepseek-r1")
    out = route.to_json()
    assert list(out) == ["route", "api", "carriers", "must_echo", "body_extras", "native"]
    assert out["carriers"] == sorted(RC_R_RD)
    assert out["must_echo"] is True

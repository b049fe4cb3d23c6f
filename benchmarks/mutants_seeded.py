# ruff: noqa: E501 -- the snippets are quoted verbatim from the modules they mutate
"""The seeded bugs ``benchmarks.mutants`` runs: each one exact snippet of a module under
``src/thoughtline`` and the realistic bug that replaces it, with the few test files that should
catch it. Spread over the codecs, replay, fallback, compaction, the estimator, the gateway, the
store and the transport (issue 33)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Mutant:
    id: str
    area: str
    file: str  # under src/thoughtline
    old: str  # found exactly once
    new: str
    tests: tuple[str, ...]
    what: str


INV = "tests/invariants/"

MUTANTS: tuple[Mutant, ...] = (
    # --- Bedrock codec -------------------------------------------------------------------------
    Mutant(id="M01", area="bedrock", file="codecs/bedrock/encode.py",
           old="            if message.incomplete:\n                continue",
           new="            if False:\n                continue",
           tests=(INV + "test_interrupted.py",),
           what="an interrupted turn's cut toolUse is replayed"),
    Mutant(id="M02", area="bedrock", file="codecs/bedrock/policy.py",
           old="    if not part.complete:\n        return None",
           new="    if False:\n        return None",
           tests=(INV + "test_interrupted.py",),
           what="the completeness check of a Bedrock reasoning block is gone"),
    Mutant(id="M03", area="bedrock", file="codecs/bedrock/policy.py",
           old="    opaque_ok = REDACTED in carries and plan.may_replay(origin) and not "
               "plan.rejected(fp)",
           new="    opaque_ok = REDACTED in carries and plan.may_replay(origin)",
           tests=(INV + "test_rejections.py",),
           what="a rejected redactedContent is sent again"),
    Mutant(id="M04", area="anthropic", file="codecs/anthropic/walk.py",
           old="    signed = bool(part.signature or part.data) and part.complete\n",
           new="    signed = bool(part.signature or part.data)\n",
           tests=(INV + "test_interrupted.py",),
           what="an incomplete Anthropic thinking/redacted block is replayed as signed"),
    Mutant(id="M05", area="replay", file="replay.py",
           old="        if role == \"assistant\" and not incomplete:\n            pending = list(calls)",
           new="        if role == \"assistant\":\n            pending = list(calls)",
           tests=(INV + "test_interrupted.py",),
           what="an interrupted turn's calls open a pending state later requests repair"),
    Mutant(id="M06", area="anthropic", file="codecs/anthropic/walk.py",
           old="            case ToolCall() if not message.incomplete:",
           new="            case ToolCall():",
           tests=(INV + "test_interrupted.py", "tests/anthropic/test_anthropic_session.py"),
           what="an interrupted Anthropic turn's cut tool_use is replayed"),
    Mutant(id="M07", area="bedrock", file="codecs/bedrock/policy.py",
           old="                     and plan.may_replay(origin) and not plan.rejected(fp))",
           new="                     and plan.may_replay(origin))",
           tests=(INV + "test_rejections.py",),
           what="a rejected Claude signature is sent again on Bedrock"),
    Mutant(id="M08", area="bedrock", file="codecs/bedrock/rejections.py",
           old="        hits = [s.fingerprint for s in sent if (s.message, s.block) in named]",
           new="        hits = [s.fingerprint for s in sent if (s.block, s.message) in named]",
           tests=(INV + "test_rejections.py", "tests/codecs/test_bedrock.py"),
           what="the block a Bedrock rejection names is looked up with its indices swapped"),
    # --- repairs (Responses, Chat) --------------------------------------------------------------
    Mutant(id="M20", area="responses", file="codecs/openai_responses/rejections.py",
           old="        if item.get(\"type\") in (MESSAGE, FUNCTION_CALL) and not item.get(ENCRYPTED):",
           new="        if item.get(\"type\") == MESSAGE and not item.get(ENCRYPTED):",
           tests=(INV + "test_rejections.py",),
           what="a function_call rejected by id is fingerprinted whole, not by its id"),
    Mutant(id="M21", area="chat", file="codecs/openai_chat/codec.py",
           old="c = fallback.classify(status, body, sent=sent, must_echo=profile.pad)",
           new="c = fallback.classify(status, body, sent=sent, must_echo=profile.must_echo)",
           tests=(INV + "test_rejections.py",),
           what="the classifier is told the route table's echo rule, not the learned one"),
    Mutant(id="M22", area="fallback", file="fallback.py",
           old="_MAX_UNESCAPE = 4",
           new="_MAX_UNESCAPE = 3",
           tests=(INV + "test_rejections.py",),
           what="error bodies nested four levels deep are no longer read"),
    Mutant(id="M23", area="fallback", file="fallback.py",
           old="    if must_echo and _RC in named:",
           new="    if must_echo and _RC not in named:",
           tests=(INV + "test_rejections.py", "tests/test_fallback.py"),
           what="a must-echo route's reasoning_content complaint is read as an unknown field"),
    # --- Anthropic preserved thinking -------------------------------------------------------------
    Mutant(id="M30", area="anthropic", file="codecs/anthropic/walk.py",
           old="        return (index >= self.loop or self.keep_prior or index == self.last) and not stale",
           new="        return (index > self.loop or self.keep_prior or index == self.last) and not stale",
           tests=(INV + "test_anthropic_loop.py",),
           what="the first turn of the tool loop loses its thinking (off by one)"),
    Mutant(id="M31", area="anthropic", file="codecs/anthropic/forms.py",
           old="    loop = next((i + 1 for i in range(end - 1, -1, -1) if shape(i)[1]), 0)",
           new="    loop = next((i + 2 for i in range(end - 1, -1, -1) if shape(i)[1]), 0)",
           tests=(INV + "test_anthropic_loop.py",),
           what="a resumed splice starts the tool loop one turn late"),
    Mutant(id="M32", area="anthropic", file="codecs/anthropic/forms.py",
           old="    target, behavior, _ = context\n",
           new="    behavior, target, _ = context\n",
           tests=(INV + "test_anthropic_loop.py", "tests/anthropic/test_anthropic_stored_forms.py"),
           what="the stored-form splice reads its context fields in the wrong order"),
    Mutant(id="M33", area="anthropic", file="codecs/anthropic/forms.py",
           old="            and kept.context == context and not any(m.role == \"system\" for m in tail)):",
           new="            and kept.context[0] == context[0] and not any(m.role == \"system\" for m in tail)):",
           tests=(INV + "test_anthropic_loop.py", "tests/anthropic/test_anthropic_stored_forms.py"),
           what="a kept splice is reused after the tools or the mismatch behaviour changed"),
    # --- scope ---------------------------------------------------------------------------------
    Mutant(id="M10", area="replay", file="replay.py",
           old="return bool(self.profile.accepts(origin, self.target))",
           new="return bool(self.profile.accepts(self.target, origin))",
           tests=(INV + "test_scope.py",),
           what="scope asked the wrong way round (target's value to the origin)"),
    Mutant(id="M11", area="responses", file="codecs/openai_responses/profile.py",
           old="        if origin.host or target.host:\n            if origin.host != target.host:",
           new="        if origin.host and target.host:\n            if origin.host != target.host:",
           tests=(INV + "test_scope.py",),
           what="a Responses item crosses between a service with a host and one without"),
    Mutant(id="M12", area="responses", file="codecs/openai_responses/profile.py",
           old="return model_family(origin.model) == model_family(target.model)",
           new="return model_family(origin.model) in model_family(target.model)",
           tests=(INV + "test_scope.py",),
           what="model families compared as substrings (gpt-5 reads gpt-5.6)"),
    Mutant(id="M13", area="routes", file="routes/chat.py",
           old="        if origin.host and target.host:\n            return origin.host == "
               "target.host\n        return origin.provider == target.provider",
           new="        return origin.provider == target.provider",
           tests=(INV + "test_scope.py",),
           what="a Chat opaque value (Copilot) goes to another host of the same provider"),
    Mutant(id="M14", area="routes", file="routes/chat.py",
           old="        elif origin.model.lower() != target.model.lower():\n            return False",
           new="        elif not target.model.lower().startswith(origin.model.lower()):\n"
               "            return False",
           tests=(INV + "test_scope.py",),
           what="a Chat opaque value goes to a model whose id merely starts with the origin's"),
    Mutant(id="M15", area="anthropic", file="codecs/anthropic/models.py",
           old="    if to.family == \"fable\" and to.at_least(5, 1) and made.family == \"opus\":",
           new="    if made.family == \"fable\" and made.at_least(5, 1) and to.family == \"opus\":",
           tests=(INV + "test_scope.py",),
           what="the Fable/Opus cross-model read runs the wrong direction"),
    Mutant(id="M16", area="anthropic", file="codecs/anthropic/models.py",
           old="    if made.family == \"haiku\" and made.at_least(5, 5):\n        return True",
           new="    if made.family == \"haiku\" and made.at_least(5, 0):\n        return True",
           tests=(INV + "test_scope.py",),
           what="Haiku 5.0 blocks treated as not model-locked"),
)

"""The Bedrock Converse codec object the core talks to (``thoughtline.codecs.base.Codec``).

Binds the pure modules to the protocol: routes from ``routes/bedrock.toml`` (``profile``), the
Converse body turn by turn (``turns``, on ``encode``; the core's wire cache stores and splices each
turn's blocks), whole responses (``decode``), ConverseStream events (``fold``), the
endpoint ``POST {endpoint_url}/model/{modelId}/converse`` (``/converse-stream``, AWS event-stream
framing decoded by botocore in the transport), SigV4 authentication and the reading of
ValidationExceptions (``rejections``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from thoughtline import platforms
from thoughtline.codecs.base import CodecBase, Encoded, Endpoint, Lesson
from thoughtline.codecs.bedrock import rejections
from thoughtline.codecs.bedrock.decode import decode_response
from thoughtline.codecs.bedrock.encode import OWNED, summary_of
from thoughtline.codecs.bedrock.fold import StreamFold
from thoughtline.codecs.bedrock.profile import resolve
from thoughtline.codecs.bedrock.turns import TURNS, Carried
from thoughtline.codecs.bedrock.wire import API, CARRIERS, REASONING
from thoughtline.config import ProviderConfig
from thoughtline.events import Done
from thoughtline.messages import Origin
from thoughtline.replay import ReplayPlan
from thoughtline.routes.resolve import Route
from thoughtline.verdicts import Verdict

#: The platform requests go to (``routes/platforms.toml``): the regional runtime endpoint botocore
#: uses when no ``endpoint_url`` is given, SigV4 for the ``bedrock`` service.
PLATFORM = "bedrock-runtime"


class Bedrock(CodecBase):
    """AWS Bedrock Converse and ConverseStream."""

    api = API
    owned = OWNED
    turns = TURNS

    def resolve(self, provider: str, base_url: str | None, model: str) -> Route:
        return resolve(provider, base_url, model)

    def decode_response(self, body: Any, origin: Origin, *, seed: str = "") -> Done:
        return decode_response(body, origin, seed=seed)

    def new_fold(self, origin: Origin, *, seed: str = "") -> StreamFold:
        return StreamFold(origin, seed=seed)

    def endpoint(self, provider: ProviderConfig, model: str, *, stream: bool) -> Endpoint:
        # The model id goes into the path URL-quoted whole: ARNs hold ':' and '/'
        # (API_runtime_Converse.html, "modelId" URI parameter).
        base = platforms.locate(provider, PLATFORM).base
        url = f"{base}/model/{quote(model, safe='')}/" + (
            "converse-stream" if stream else "converse")
        return Endpoint(url=url, framing="aws-eventstream" if stream else "json")

    def default_base_url(self, provider: ProviderConfig) -> str:
        """The URL requests go to without ``--base-url``, ``{region}`` left in when none is set
        (what ``thoughtline routes`` shows; ``endpoint`` insists on a region)."""
        return platforms.default_url(provider, PLATFORM)

    def auth_scheme(self, provider: ProviderConfig) -> str:
        return provider.auth or platforms.facts(PLATFORM).auth

    def summary(self, encoded: Encoded) -> dict[str, Any]:
        carried = _carried(encoded)
        return summary_of(carried.assistant_turns, carried.carriers, carried.extras)

    def classify(self, status: int | None, body: str, encoded: Encoded,
                 plan: ReplayPlan) -> Lesson | None:
        target = plan.target
        carried = _carried(encoded)
        reading = rejections.read(status, body, carried.sent)
        if reading is None or target is None:
            return None
        notice = rejections.describe(reading, target.model)
        if reading.fingerprints:
            fresh = reading.fingerprints - plan.fingerprints
            return Lesson(notice=notice, fingerprints=fresh, wording=reading.wording) \
                if fresh else None
        named = CARRIERS if REASONING in reading.drop else reading.drop
        if not set(carried.carriers) & named:
            return None  # nothing it names was sent: a second request would fail the same way
        verdict = Verdict(provider=target.provider, host=target.host, model=target.model,
                          drop=reading.drop, reason=body[:300])
        return Lesson(notice=notice, verdict=verdict, wording=reading.wording)


def _carried(encoded: Encoded) -> Carried:
    """What the request carried, read from its turns as sent (``turns.Carried``)."""
    index = encoded.index
    return index if isinstance(index, Carried) else Carried()


CODEC = Bedrock()

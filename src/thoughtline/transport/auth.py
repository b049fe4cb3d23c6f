"""Credentials on the wire: an ``httpx.Auth`` per scheme a codec or preset names.

Owns how a key (read from the environment variable a preset or config names, never stored) or a
credential chain becomes request headers: plain API-key headers, bearer tokens, and AWS SigV4
signed by botocore from its standard credential chain (environment, profile, SSO, instance role),
re-signed on every attempt because ``httpx`` runs ``auth_flow`` per request sent; for Vertex,
without a token in the key variable, google-auth's Application Default Credentials when the
package is installed (optional).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import httpx

from thoughtline.errors import UsageError

_HEADER_SCHEMES = {
    "bearer": ("authorization", "Bearer "),
    "x-api-key": ("x-api-key", ""),
    "x-goog-api-key": ("x-goog-api-key", ""),
    "api-key": ("api-key", ""),
    # Tokens minted by a platform (Vertex OAuth, Entra ID) arrive through the key variable.
    "google-oauth": ("authorization", "Bearer "),
    "entra": ("authorization", "Bearer "),
}


class HeaderAuth(httpx.Auth):
    """Puts a key in one header (``Bearer`` prefixed where the scheme wants it)."""

    def __init__(self, header: str, value: str) -> None:
        self._header, self._value = header, value

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._header] = self._value
        yield request


@dataclass(frozen=True, kw_only=True, slots=True)
class SigV4Settings:
    service: str
    region: str
    profile: str = ""


class SigV4Auth(httpx.Auth):
    """AWS Signature V4 from botocore's credential chain; signs the exact bytes sent."""

    requires_request_body = True

    def __init__(self, settings: SigV4Settings) -> None:
        self._settings = settings
        self._credentials: Any = None

    def _resolved(self) -> Any:
        if self._credentials is None:
            import botocore.session

            session = botocore.session.Session(profile=self._settings.profile or None)
            credentials = session.get_credentials()
            if credentials is None:
                raise UsageError("no AWS credentials found: set AWS_ACCESS_KEY_ID and "
                                 "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or configure SSO / an "
                                 "instance role (botocore's standard credential chain)")
            self._credentials = credentials
        return self._credentials

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        from botocore.auth import SigV4Auth as BotoSigner
        from botocore.awsrequest import AWSRequest

        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("authorization", "x-amz-date", "x-amz-security-token",
                                        "content-length", "connection", "accept-encoding")}
        aws = AWSRequest(method=request.method, url=str(request.url), data=request.content,
                         headers=headers)
        BotoSigner(self._resolved().get_frozen_credentials(), self._settings.service,
                   self._settings.region).add_auth(aws)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token",
                     "X-Amz-Content-SHA256"):
            value = aws.headers.get(name)
            if value is not None:
                request.headers[name] = value
        yield request


def auth_for(scheme: str, key: str | None, *, region: str = "",
             profile: str = "") -> httpx.Auth | None:
    """The ``httpx.Auth`` for a scheme; ``None`` when the scheme sends no credentials."""
    if scheme in ("", "none"):
        return None
    if scheme.startswith("sigv4:"):
        if not region:
            from thoughtline.platforms import NO_AWS_REGION

            raise UsageError(NO_AWS_REGION)
        return SigV4Auth(SigV4Settings(service=scheme.split(":", 1)[1], region=region,
                                       profile=profile))
    header = _HEADER_SCHEMES.get(scheme)
    if header is None:
        raise UsageError(f"unknown authentication scheme {scheme!r}; known: "
                         f"{', '.join(sorted([*_HEADER_SCHEMES, 'none', 'sigv4:<service>']))}")
    if not key:
        return GoogleAuth() if scheme == "google-oauth" and google_auth_available() else None
    name, prefix = header
    return HeaderAuth(name, prefix + key)


_CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"


def google_auth_available() -> bool:
    """True when the optional google-auth package is importable (Application Default
    Credentials: ``gcloud auth application-default login``, a service account, the metadata
    server)."""
    try:
        import google.auth  # noqa: F401
    except ImportError:
        return False
    return True


class GoogleAuth(httpx.Auth):
    """A Vertex bearer token from google-auth's Application Default Credentials, refreshed when
    it expires. Used when no token is in the key variable and google-auth is installed."""

    def __init__(self) -> None:
        self._credentials: Any = None

    def _token(self) -> str:
        import google.auth

        if self._credentials is None:
            self._credentials, _ = google.auth.default(scopes=[_CLOUD_PLATFORM])
        credentials = self._credentials
        if not credentials.valid:
            from google.auth.transport.requests import Request

            credentials.refresh(Request())
        return str(credentials.token)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["authorization"] = "Bearer " + self._token()
        yield request


def needs_key(scheme: str) -> bool:
    """True when the scheme can only authenticate with a key from an environment variable."""
    if scheme == "google-oauth" and google_auth_available():
        return False
    return scheme in _HEADER_SCHEMES

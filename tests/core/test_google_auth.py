"""Vertex without a token in the key variable: google-auth's Application Default Credentials,
when the optional package is installed (a stand-in module plays it here: offline, no ADC)."""

from __future__ import annotations

import sys
import types
from typing import Any

import httpx
import pytest

from thoughtline.transport.auth import GoogleAuth, auth_for, needs_key


class _Credentials:
    def __init__(self) -> None:
        self.valid = False
        self.token: str | None = None
        self.refreshed = 0

    def refresh(self, request: Any) -> None:
        self.refreshed += 1
        self.token, self.valid = f"ya29.stand-in-{self.refreshed}", True


@pytest.fixture()
def google(monkeypatch: pytest.MonkeyPatch) -> _Credentials:
    credentials = _Credentials()
    credentials.scopes = []  # type: ignore[attr-defined]
    package = types.ModuleType("google")
    auth = types.ModuleType("google.auth")
    transport = types.ModuleType("google.auth.transport")
    requests = types.ModuleType("google.auth.transport.requests")

    def default(scopes: Any = None) -> tuple[_Credentials, str]:
        credentials.scopes.append(scopes)  # type: ignore[attr-defined]
        return credentials, "project-from-adc"

    auth.default = default  # type: ignore[attr-defined]
    requests.Request = lambda: "request"  # type: ignore[attr-defined]
    package.auth = auth  # type: ignore[attr-defined]
    for name, module in (("google", package), ("google.auth", auth),
                         ("google.auth.transport", transport),
                         ("google.auth.transport.requests", requests)):
        monkeypatch.setitem(sys.modules, name, module)
    return credentials


def test_without_google_auth_a_vertex_route_needs_its_key_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google", None)  # makes the import fail
    assert needs_key("google-oauth")
    assert auth_for("google-oauth", None) is None


def test_adc_token_goes_in_the_authorization_header_and_refreshes_when_expired(
        google: _Credentials) -> None:
    assert not needs_key("google-oauth")
    auth = auth_for("google-oauth", None)
    assert isinstance(auth, GoogleAuth)
    first = next(auth.auth_flow(httpx.Request("POST", "https://aiplatform.googleapis.com/x")))
    assert first.headers["authorization"] == "Bearer ya29.stand-in-1"
    google.valid = False  # expired
    second = next(auth.auth_flow(httpx.Request("POST", "https://aiplatform.googleapis.com/x")))
    assert second.headers["authorization"] == "Bearer ya29.stand-in-2"
    assert google.scopes == [["https://www.googleapis.com/auth/cloud-platform"]]  # type: ignore


def test_a_token_in_the_key_variable_wins_over_adc(google: _Credentials) -> None:
    auth = auth_for("google-oauth", "ya29.from-the-environment")
    request = next(auth.auth_flow(httpx.Request("POST", "https://aiplatform.googleapis.com/x")))
    assert request.headers["authorization"] == "Bearer ya29.from-the-environment"
    assert google.refreshed == 0

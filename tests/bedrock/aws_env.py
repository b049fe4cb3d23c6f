"""Fake AWS credentials for offline tests: botocore signs with them, nothing leaves loopback."""

from __future__ import annotations

import pytest

FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIAEMULATOREXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "emulator/secret/key/not/real/EXAMPLEKEY",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": "/nonexistent/aws/config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws/credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def fake_aws(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in FAKE_ENV.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    return dict(FAKE_ENV)


#: The (access key id, secret) pair the emulator recomputes signatures with.
KEYS = (FAKE_ENV["AWS_ACCESS_KEY_ID"], FAKE_ENV["AWS_SECRET_ACCESS_KEY"])

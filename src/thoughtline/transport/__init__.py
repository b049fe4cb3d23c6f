"""Sending requests: HTTP (httpx + SSE) here; Bedrock via botocore joins with its codec."""

from thoughtline.transport.http import HttpTransport, Target, TransportConfig, provider_message

__all__ = ["HttpTransport", "Target", "TransportConfig", "provider_message"]

"""Python client for Bannerfall: REST (httpx) and match WebSocket (websockets).

Used by bots, ``bannerfall demo`` and the load benchmarks — the same path a person's client takes.
"""
from app.client.rest import ApiError, RestClient
from app.client.socket import MatchSocket, play

__all__ = ["ApiError", "RestClient", "MatchSocket", "play"]

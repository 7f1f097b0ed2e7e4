"""What this server speaks: its version and the match protocol's versions a ``hello`` may ask for
(docs/protocol.md, "Protocol versions"). Public: no token needed, nothing read from storage."""
from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from app.api.errors import responses
from app.runtime.wire import PROTOCOL_VERSION, SUPPORTED_PROTOCOLS

router = APIRouter(tags=["protocol"])


class VersionInfo(BaseModel):
    server: str = Field(description="the server's release (the OpenAPI document's version)")
    protocol: int = Field(description="the match protocol's newest version this server speaks")
    protocols: list[int] = Field(description="every protocol version a hello may ask for (hello's `protocol`)")


@router.get("/version", response_model=VersionInfo, responses=responses())
async def version(request: Request) -> VersionInfo:
    """The server's release and the match protocol versions it speaks. A ``hello`` asking for
    another version is refused ``unsupported_protocol`` and the socket closed with 4426."""
    return VersionInfo(server=request.app.version, protocol=PROTOCOL_VERSION, protocols=list(SUPPORTED_PROTOCOLS))

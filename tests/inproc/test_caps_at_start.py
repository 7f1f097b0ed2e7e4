"""A lobby start checks the cap on running matches with bots against the seats it starts, not an
earlier look at the lobby: bots added between the cap's look and the start's own read of the lobby
(the host's ``bots`` racing its ``start``) are counted. The race is made certain here by adding the
bots inside the start's read of the lobby, through the app's own repository."""
from __future__ import annotations

import secrets
import time
import uuid

import pytest

from app.api.deps import hash_token
from app.client.rest import ApiError
from tests.inproc.conftest import running_node


def _bot(seat: int) -> dict:
    return {"id": uuid.uuid4().hex, "name": f"random-bot-{seat}", "role": "bot",
            "token_hash": hash_token(secrets.token_urlsafe(32)), "created_at": time.time()}


async def test_bots_added_while_a_start_is_checked_are_counted_by_the_cap(tmp_path):
    async with running_node(tmp_path, max_bot_matches_per_player=1) as node:
        async with node.rest() as host:
            await host.register("host")
            first = await host.create_lobby("provinces", 2)
            await host.fill_bots(first["id"], "random")
            await host.start(first["id"])  # one running match with a bot: the cap is reached
            second = await host.create_lobby("provinces", 2)  # no bot yet: the cap has nothing to count
            repo = node.app.state.repo
            plain_read = repo.lobby
            raced = []

            async def read_after_the_bots_came(lobby_id: str):
                if lobby_id == second["id"] and not raced:
                    raced.append(await repo.fill_lobby_bots(lobby_id, "random", None, _bot))
                return await plain_read(lobby_id)

            repo.lobby = read_after_the_bots_came
            try:
                with pytest.raises(ApiError) as refused:
                    await host.start(second["id"])
            finally:
                repo.lobby = plain_read
            assert raced, "the start never read the lobby"
            assert (refused.value.status, refused.value.code) == (429, "too_many_bot_matches")
            lobby = await host.lobby(second["id"])
            assert lobby["status"] == "open" and lobby["match_id"] is None  # nothing started
            assert any(s["bot"] for s in lobby["seats"])

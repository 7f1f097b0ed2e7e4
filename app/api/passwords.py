"""Password hashing with argon2id (the ``argon2-cffi`` library; never by hand). Hashing and checking
run in a worker thread: argon2 is deliberately slow (tens of milliseconds) and must not stall the
event loop that serves every match of the node."""
from __future__ import annotations

import asyncio

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from app.config import Settings

PASSWORD_MIN, PASSWORD_MAX = 8, 128


class Passwords:
    """``hash``/``verify`` with the node's argon2 parameters (``argon2_*`` settings)."""

    def __init__(self, settings: Settings) -> None:
        self.hasher = PasswordHasher(time_cost=settings.argon2_time_cost, memory_cost=settings.argon2_memory_kib,
                                     parallelism=settings.argon2_parallelism)
        #: checked when a username has no account, so "no such user" takes as long as "wrong password"
        self._dummy = self.hasher.hash("not a password of anyone")

    async def hash(self, password: str) -> str:
        return await asyncio.to_thread(self.hasher.hash, password)

    async def verify(self, stored: str | None, password: str) -> bool:
        """Whether ``password`` matches ``stored`` (None: no such account; still costs one check)."""
        def check() -> bool:
            try:
                return self.hasher.verify(stored or self._dummy, password) and stored is not None
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                return False
        return await asyncio.to_thread(check)

    def needs_rehash(self, stored: str) -> bool:
        return self.hasher.check_needs_rehash(stored)

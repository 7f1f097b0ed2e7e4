"""Passwords: hashing with argon2id (the ``argon2-cffi`` library; never by hand) and the policy new
passwords must pass (the ``zxcvbn`` library), all of it run in a bounded pool of worker threads.

argon2 is deliberately slow (tens to hundreds of milliseconds) and holds ``argon2_memory_kib`` for
each hash; zxcvbn costs 5-300 ms of CPU. Neither may stall the event loop that serves every match of
the node, and a burst of requests must not queue unbounded work: :class:`Passwords` runs them on
``argon2_workers`` threads of its own, with at most ``argon2_queue`` more waiting; past that a request
is refused at once with :class:`PasswordsBusy` (the routes answer ``503 busy`` with ``Retry-After``).
Every operation run is counted (``bannerfall_password_work_total{op}``).

Policy (NIST SP 800-63B 3.1.1.2, :meth:`Passwords.check_new`): 8-128 characters of any kind, no
composition rules, and refused when zxcvbn finds it easy to guess: a common or breached password
(its list of the 30,000 most common), a dictionary word or name, repeated or sequential characters
(``aaaaaaaa``, ``12345678``, ``1234abcd``), a keyboard walk (``qwertyui``), a date, or built from the
context: the username, the display name, the service's name (``bannerfall1``), with their l33t and
reversed forms. "Easy" is a zxcvbn score below :data:`MIN_SCORE` (fewer than ~10^6 guesses).
"""
from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from app.config import Settings

PASSWORD_MIN, PASSWORD_MAX = 8, 128
#: the lowest zxcvbn score a new password may have: 2 is "somewhat guessable", at least 10^6 guesses
#: (0 and 1: the most common passwords, words and patterns, and what is built from the context)
MIN_SCORE = 2
#: zxcvbn's own bound on what it reads (its time grows fast with the length); a longer password is
#: judged by its first this many characters
STRENGTH_CHARS = 72
#: words every password is checked against besides the username, the display name and the games'
#: ids and titles (:func:`service_words`)
SERVICE_WORDS = ("bannerfall",)


def service_words() -> list[str]:
    """The server's name and every installed game's id and title (the registry's), lower case."""
    from app.games import registry

    words = list(SERVICE_WORDS)
    for game_id, game in registry().items():
        words += [game_id.lower(), *game.info.title.lower().split()]
    return words
#: seconds a client refused by a full pool is told to wait
BUSY_RETRY_SECONDS = 1

T = TypeVar("T")


class PasswordsBusy(Exception):
    """Every worker is busy and ``argon2_queue`` requests wait already: nothing was done; retry in
    ``retry_after`` seconds."""

    def __init__(self, retry_after: int = BUSY_RETRY_SECONDS) -> None:
        super().__init__("too many password checks at once")
        self.retry_after = retry_after


class WeakPassword(ValueError):
    """A new password the policy refuses; ``message`` says why, for people."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _words(texts: Iterable[str | None]) -> list[str]:
    """The context words of ``texts`` (username, display name): each whole, without its spaces and
    separators, and split at them, lower case, of 3 characters or more."""
    words: list[str] = []
    for text in texts:
        if not text:
            continue
        for word in [text, re.sub(r"[\W_]+", "", text), *re.split(r"[\W_]+", text)]:
            word = word.casefold()
            if len(word) >= 3 and word not in words:
                words.append(word)
    return words


class Passwords:
    """``hash``, ``verify`` and ``check_new`` with the node's argon2 parameters (``argon2_*``
    settings), run on ``argon2_workers`` threads with at most ``argon2_queue`` more waiting.
    ``counter(op)``: called with ``"hash"``, ``"verify"`` or ``"strength"`` as each operation
    starts on a worker (the metrics)."""

    def __init__(self, settings: Settings, counter: Callable[[str], None] | None = None) -> None:
        self.hasher = PasswordHasher(time_cost=settings.argon2_time_cost, memory_cost=settings.argon2_memory_kib,
                                     parallelism=settings.argon2_parallelism)
        self.workers = settings.argon2_workers
        self.queue = settings.argon2_queue
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="argon2")
        #: operations handed to the pool and not finished (running or waiting for a worker)
        self.in_flight = 0
        self._counter = counter
        #: checked when a username has no account, so "no such user" takes as long as "wrong
        #: password"; made on a worker at the first such check
        self._dummy: str | None = None
        self._dummy_lock = threading.Lock()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _run(self, op: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker; :class:`PasswordsBusy` at once when the pool is full. The slot
        is given back when the work ends, not when the caller stops waiting (a client that leaves
        does not free a worker that is still hashing)."""
        if self.in_flight >= self.workers + self.queue:
            raise PasswordsBusy()
        loop = asyncio.get_running_loop()
        counter = self._counter

        def work() -> T:
            if counter is not None:
                loop.call_soon_threadsafe(counter, op)
            return fn(*args)

        self.in_flight += 1
        try:
            future = self._pool.submit(work)
        except BaseException:
            self.in_flight -= 1
            raise
        future.add_done_callback(lambda _f: loop.call_soon_threadsafe(self._release))
        return await asyncio.wrap_future(future)

    def _release(self) -> None:
        self.in_flight -= 1

    async def hash(self, password: str) -> str:
        """The argon2id hash of ``password`` (a PHC string). Raises :class:`PasswordsBusy`."""
        return await self._run("hash", self.hasher.hash, password)

    async def verify(self, stored: str | None, password: str) -> bool:
        """Whether ``password`` matches ``stored`` (None: no such account; still costs one check).
        Raises :class:`PasswordsBusy`."""
        def check() -> bool:
            try:
                return self.hasher.verify(stored or self._dummy_hash(), password) and stored is not None
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                return False
        return await self._run("verify", check)

    def _dummy_hash(self) -> str:
        with self._dummy_lock:
            if self._dummy is None:
                self._dummy = self.hasher.hash("not a password of anyone")
            return self._dummy

    def needs_rehash(self, stored: str) -> bool:
        return self.hasher.check_needs_rehash(stored)

    async def check_new(self, password: str, *context: str | None) -> None:
        """Refuse a new ``password`` the policy does not take (the module's docstring): raises
        :class:`WeakPassword` (with the reason) or :class:`PasswordsBusy`. ``context``: the
        username and display name it must not be built from. The length (8-128) is checked by
        :func:`check_length` first, without the pool."""
        check_length(password)
        words = _words(context)
        folded = password.casefold()
        if any(folded == word or folded == word[::-1] for word in words):
            raise WeakPassword("a password may not be your username or name")
        problem = await self._run("strength", _strength_problem, password, [*words, *service_words()])
        if problem is not None:
            raise WeakPassword(problem)


def check_length(password: str) -> None:
    """Raises :class:`WeakPassword` unless ``password`` has 8-128 characters."""
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        raise WeakPassword(f"passwords are {PASSWORD_MIN}-{PASSWORD_MAX} characters")


def _strength_problem(password: str, words: list[str]) -> str | None:
    """zxcvbn's verdict on ``password`` (its first :data:`STRENGTH_CHARS` characters) with the
    context ``words``: None when its score is at least :data:`MIN_SCORE`, else why not."""
    from zxcvbn import zxcvbn  # imported on a worker at first use: ~0.2 s and ~12 MB of word lists

    result = zxcvbn(password[:STRENGTH_CHARS], user_inputs=words, max_length=STRENGTH_CHARS)
    if result["score"] >= MIN_SCORE:
        return None
    warning = (result.get("feedback") or {}).get("warning") or ""
    return "this password is too easy to guess" + (f": {warning.rstrip('.')}" if warning else "") + \
        "; a longer one, or a few unrelated words, will do"

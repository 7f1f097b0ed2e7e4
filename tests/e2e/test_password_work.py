"""The work a request makes the server do is bounded before the expensive step: a claim checks the
cheap things first (the username's shape, the claim budgets, whether the name is taken) and hashes
only then; claims and password changes have limits of their own (sign-ins had theirs); argon2 and
the strength check run on a bounded pool, and past its bound a request is refused at once with
``503 busy`` and ``Retry-After``. The argon2 work is counted by the server's own metrics
(``bannerfall_password_work_total{op}``), read from ``/metrics`` of a real ``bannerfall serve``."""
from __future__ import annotations

import asyncio
import re
import threading

import httpx
import pytest

from app.api.passwords import Passwords, PasswordsBusy, WeakPassword
from app.config import Settings
from tests.conftest import ServerProcess

API = "/api/v1"
FAST_ARGON2 = {"BANNERFALL_ARGON2_TIME_COST": "1", "BANNERFALL_ARGON2_MEMORY_KIB": "1024",
               "BANNERFALL_RATE_LIMIT_NEW_PLAYERS": "", "BANNERFALL_RATE_LIMIT_SIGN_IN": "",
               "BANNERFALL_RATE_LIMIT_SIGN_IN_USER": "", "BANNERFALL_RATE_LIMIT_SIGN_IN_IP": ""}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    db = tmp_path_factory.mktemp("pwwork") / "pw.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}", env={
        **FAST_ARGON2, "BANNERFALL_RATE_LIMIT_CLAIM": "3/minute", "BANNERFALL_RATE_LIMIT_PASSWORD_CHANGE": "3/minute",
    }).start()
    yield srv
    srv.stop()


def _http(address: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


def _guest(srv, address: str = "127.0.0.1", name: str = "guest") -> str:
    with _http(address) as http:
        r = http.post(srv.url + API + "/players", json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()["token"]


def _post(srv, path: str, token: str | None, body: dict, address: str = "127.0.0.1") -> httpx.Response:
    with _http(address) as http:
        return http.post(srv.url + API + path, json=body,
                         headers={"Authorization": f"Bearer {token}"} if token else None)


def _work(srv) -> dict[str, float]:
    """``bannerfall_password_work_total`` by op, from the node's /metrics."""
    text = httpx.get(srv.url + "/metrics", timeout=10).text
    return {m[1]: float(m[2]) for m in re.finditer(r'^bannerfall_password_work_total\{op="(\w+)"\} (\S+)$', text,
                                                     re.M)}


def test_claims_of_a_taken_name_do_no_password_work(node):
    owner = _guest(node, name="Kim")
    assert _post(node, "/accounts/claim", owner, {"username": "keeper", "password": "keeper's long secret"}
                 ).status_code == 201
    before = _work(node)
    assert before.get("hash", 0) >= 1 and before.get("strength", 0) >= 1
    # one guest per address, each spending its claim budget on names that are taken (look-alikes too)
    refused = 0
    for i in range(12):
        guest = _guest(node, f"127.0.3.{i + 1}", "Rival")
        for name in ("keeper", "KEEPER", "k.eeper", "keep-er_"):  # look-alikes too
            r = _post(node, "/accounts/claim", guest, {"username": name, "password": "password"},
                      f"127.0.3.{i + 1}")
            if r.status_code == 429:
                break
            assert (r.status_code, r.json()["code"]) == (409, "username_taken"), r.text
            refused += 1
    assert refused == 36  # 3 per address (the claim budget), each answered from one lookup
    assert _work(node) == before, "a claim of a taken username hashed or checked a password"


def test_claims_have_a_limit_per_address_and_per_player(node):
    tokens = [_guest(node, "127.0.4.1", f"Claimer{i}") for i in range(4)]
    codes = [_post(node, "/accounts/claim", token, {"username": f"claimer{i}", "password": "password"}, "127.0.4.1")
             for i, token in enumerate(tokens)]
    assert [c.status_code for c in codes] == [422, 422, 422, 429]  # a weak password spends a claim too
    assert {c.json()["code"] for c in codes[:3]} == {"weak_password"}
    assert codes[3].json()["code"] == "rate_limited" and int(codes[3].headers["Retry-After"]) >= 1
    # the fourth player from another address claims at once: the limit was the first address's
    assert _post(node, "/accounts/claim", tokens[3], {"username": "claimer3", "password": "claimer three's secret"},
                 "127.0.4.2").status_code == 201
    # per player, from the exempt loopback too: a player trying names one after another
    guest = _guest(node, name="Prober")
    probes = [_post(node, "/accounts/claim", guest, {"username": f"probe{i}", "password": "password"}).status_code
              for i in range(4)]
    assert probes == [422, 422, 422, 429]


def test_password_changes_are_checked_limited_and_take_effect(node):
    token = _guest(node, name="Changer")
    assert _post(node, "/accounts/claim", token, {"username": "changer", "password": "changer's old secret"}
                 ).status_code == 201
    wrong = _post(node, "/accounts/password", token, {"current_password": "not it at all",
                                                      "new_password": "a brand new secret"})
    assert (wrong.status_code, wrong.json()["code"]) == (403, "wrong_password")
    weak = _post(node, "/accounts/password", token, {"current_password": "changer's old secret",
                                                     "new_password": "changer1"})
    assert (weak.status_code, weak.json()["code"]) == (422, "weak_password")
    ok = _post(node, "/accounts/password", token, {"current_password": "changer's old secret",
                                                   "new_password": "a brand new secret"})
    assert ok.status_code == 200 and ok.json()["username"] == "changer"
    assert _post(node, "/accounts/sign-in", None, {"username": "changer", "password": "changer's old secret"}
                 ).status_code == 401
    assert _post(node, "/accounts/sign-in", None, {"username": "changer", "password": "a brand new secret"}
                 ).status_code == 200
    over = _post(node, "/accounts/password", token, {"current_password": "a brand new secret",
                                                     "new_password": "another new secret"})
    assert (over.status_code, over.json()["code"]) == (429, "rate_limited")  # the 4th of 3/minute
    guest = _guest(node, name="NoAccount")
    none = _post(node, "/accounts/password", guest, {"current_password": "whatever it is", "new_password": "x" * 9})
    assert (none.status_code, none.json()["code"]) == (409, "no_account")


def test_a_full_password_pool_answers_503_busy_at_once(tmp_path):
    """One worker, nobody waiting, and a slow hash: of 6 parallel sign-ins the ones that find the
    worker busy are refused with 503 busy and Retry-After, and the others get their answer."""
    env = {**FAST_ARGON2, "BANNERFALL_ARGON2_WORKERS": "1", "BANNERFALL_ARGON2_QUEUE": "0",
           "BANNERFALL_ARGON2_TIME_COST": "6", "BANNERFALL_ARGON2_MEMORY_KIB": "65536"}
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path}/busy.db", env=env).start()
    try:
        async def sign_ins() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=60) as http:
                return await asyncio.gather(*[http.post(srv.url + API + "/accounts/sign-in",
                                                        json={"username": f"nobody{i}", "password": f"guess {i:04}"})
                                              for i in range(6)])
        answers = asyncio.run(sign_ins())
        busy = [a for a in answers if a.status_code == 503]
        assert busy, [a.status_code for a in answers]
        for a in busy:
            assert a.json()["code"] == "busy" and a.headers["Retry-After"] == "1"
        assert all(a.status_code in (401, 503) for a in answers)
        assert 'bannerfall_errors_total{code="busy"}' in httpx.get(srv.url + "/metrics", timeout=10).text
    finally:
        srv.stop()


# -- the pool itself ----------------------------------------------------------------------------

class _HeldHasher:
    """argon2's hasher with each hash held until the test releases it, counting how many run at once."""

    def __init__(self, hasher) -> None:
        self.hasher = hasher
        self.release = threading.Event()
        self.started = threading.Semaphore(0)
        self.running = self.most = 0
        self.lock = threading.Lock()

    def hash(self, password: str) -> str:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.started.release()
        try:
            assert self.release.wait(30)
            return self.hasher.hash(password)
        finally:
            with self.lock:
                self.running -= 1

    def __getattr__(self, name):
        return getattr(self.hasher, name)


async def _started(held: _HeldHasher) -> None:
    assert await asyncio.to_thread(held.started.acquire, True, 30)


async def test_the_pool_runs_at_most_its_workers_and_queues_at_most_its_queue():
    passwords = Passwords(Settings(argon2_time_cost=1, argon2_memory_kib=1024, argon2_workers=2, argon2_queue=1))
    held = passwords.hasher = _HeldHasher(passwords.hasher)  # type: ignore[assignment]
    try:
        tasks = [asyncio.create_task(passwords.hash(f"password {i}")) for i in range(3)]
        await _started(held)
        await _started(held)
        assert passwords.in_flight == 3  # two running, one waiting
        for _ in range(5):
            with pytest.raises(PasswordsBusy):
                await passwords.hash("one too many")
        with pytest.raises(PasswordsBusy):
            await passwords.verify(None, "one too many")
        held.release.set()
        hashes = await asyncio.gather(*tasks)
        assert all(h.startswith("$argon2id$") for h in hashes)
        assert held.most == 2
        await asyncio.wait_for(_until(lambda: passwords.in_flight == 0), 10)
        assert await passwords.verify(hashes[0], "password 0")  # room again
    finally:
        held.release.set()
        passwords.close()


async def test_a_caller_that_leaves_frees_its_slot_only_when_its_work_ends():
    passwords = Passwords(Settings(argon2_time_cost=1, argon2_memory_kib=1024, argon2_workers=1, argon2_queue=1))
    held = passwords.hasher = _HeldHasher(passwords.hasher)  # type: ignore[assignment]
    try:
        running = asyncio.create_task(passwords.hash("running"))
        await _started(held)
        waiting = asyncio.create_task(passwords.hash("waiting"))
        await asyncio.wait_for(_until(lambda: passwords.in_flight == 2), 10)
        assert passwords.in_flight == 2
        with pytest.raises(PasswordsBusy):
            await passwords.hash("over the bound")
        running.cancel()  # its client leaves while the worker hashes: the slot stays taken
        waiting.cancel()  # this one leaves before it started: it never runs, its slot is free
        await asyncio.gather(running, waiting, return_exceptions=True)
        await asyncio.wait_for(_until(lambda: passwords.in_flight == 1), 10)
        third = asyncio.create_task(passwords.hash("third"))
        await asyncio.wait_for(_until(lambda: passwords.in_flight == 2), 10)
        assert passwords.in_flight == 2
        with pytest.raises(PasswordsBusy):  # the abandoned hash still counts
            await passwords.hash("fourth")
        held.release.set()
        assert (await third).startswith("$argon2id$")
        await asyncio.wait_for(_until(lambda: passwords.in_flight == 0), 10)
        assert held.most == 1
    finally:
        held.release.set()
        passwords.close()


async def _until(predicate) -> None:
    while not predicate():
        await asyncio.sleep(0.01)


async def test_new_passwords_refuse_common_and_context_words_and_take_good_ones():
    passwords = Passwords(Settings(argon2_time_cost=1, argon2_memory_kib=1024))
    try:
        for bad in ("password", "12345678", "qwertyuiop", "aaaaaaaa", "1234abcd", "iloveyou", "bannerfall1",
                    "Provinces2024", "alice_99", "ecila_99", "AliceSmith", "p@ssw0rd", "letmein123"):
            with pytest.raises(WeakPassword):
                await passwords.check_new(bad, "alice_99", "Alice Smith")
        for short_or_long in ("seven77", "x" * 129):
            with pytest.raises(WeakPassword, match="8-128"):
                await passwords.check_new(short_or_long, "alice_99")
        for good in ("correct horse battery", "kx8vqpwz", "Wren's 2 cats", "ünïcödé-pässwörd"):
            await passwords.check_new(good, "alice_99", "Alice Smith")
    finally:
        passwords.close()

"""Names and passwords, against a real server: a username that looks like an existing one is taken
(``rn`` for ``m``, ``vv`` for ``w``, ``cl`` for ``d``, separators added or moved, with the older
foldings: case, digits, other scripts); staff-like display names are refused; a new password that
is common, a pattern, or built from the username or display name is refused."""
from __future__ import annotations

import httpx
import pytest

from app.api.names import NameRefused, check_name, check_username, username_key
from tests.conftest import ServerProcess

API = "/api/v1"
ENV = {"BANNERFALL_ARGON2_TIME_COST": "1", "BANNERFALL_ARGON2_MEMORY_KIB": "1024",
       "BANNERFALL_RATE_LIMIT_NEW_PLAYERS": "", "BANNERFALL_RATE_LIMIT_CLAIM": ""}

#: (an existing username, look-alikes of it that must be refused as taken)
LOOKALIKES = [
    ("mark", ["rnark", "RNARK", "m.ark", "rn.ark", "Mark_", "-mark"]),
    ("wendy", ["vvendy", "VVendy", "w.endy", "vv_endy", "wen-dy"]),
    ("dave", ["clave", "CLAVE", "d.ave", "cl-ave", "dave."]),
    ("milo_west", ["rnilo_vvest", "milowest", "milo.west", "milo-west", "m_i_l_o_w_e_s_t", "MILO__WEST"]),
    ("bill", ["bi11", "b1ll", "BILL", "b.i.l.l", "biII"]),
]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    db = tmp_path_factory.mktemp("names") / "names.db"
    srv = ServerProcess(f"sqlite+aiosqlite:///{db}", env=ENV).start()
    yield srv
    srv.stop()


def _guest(srv, name: str = "guest") -> tuple[int, dict]:
    r = httpx.post(srv.url + API + "/players", json={"name": name}, timeout=10)
    return r.status_code, r.json()


def _claim(srv, token: str, username: str, password: str) -> httpx.Response:
    return httpx.post(srv.url + API + "/accounts/claim", json={"username": username, "password": password},
                      headers={"Authorization": f"Bearer {token}"}, timeout=30)


@pytest.mark.parametrize(("existing", "lookalikes"), LOOKALIKES, ids=[e for e, _ in LOOKALIKES])
def test_a_username_that_looks_like_an_existing_one_is_taken(node, existing, lookalikes):
    assert {username_key(n) for n in lookalikes} == {username_key(existing)}
    status, owner = _guest(node, "Owner of " + existing[:4])
    assert status == 201
    assert _claim(node, owner["token"], existing, "a long and good secret").status_code == 201
    for name in lookalikes:
        status, guest = _guest(node, "Rival")
        r = _claim(node, guest["token"], name, "another good secret")
        assert (r.status_code, r.json()["code"]) == (409, "username_taken"), name
    # the owner signs in by any of them, and only with its password
    r = httpx.post(node.url + API + "/accounts/sign-in", json={"username": lookalikes[0],
                                                                "password": "a long and good secret"}, timeout=30)
    assert r.status_code == 200 and r.json()["username"] == existing


def test_different_names_stay_different():
    pairs = [("mark", "marc"), ("wendy", "windy"), ("dave", "dove"), ("alice", "alike"), ("rn", "rm"),
             ("clara", "clora")]
    for a, b in pairs:
        assert username_key(a) != username_key(b), (a, b)
    with pytest.raises(NameRefused) as refused:
        check_username("...")
    assert refused.value.code == "bad_username"


STAFF_NAMES = ["Adrnin", "ADRNIN", "adrn1n", "Game Master", "game-master", "The Game Master", "GameMaster",
               "GM", "G.M.", "gm", "GM Kate", "Server Notice", "server_notice", "System Notice", "Official Notice",
               "Notice", "Announcement", "Customer Support", "Help Desk", "Moclerator", "Staff Bot"]
FINE_NAMES = ["Germaine", "Gemma", "Noticeable Nick", "Modern Bob", "Dave Clark", "Amanda", "Carmen", "Madam Mim",
              "Admiral Ackbar", "Bernard", "G Money", "Wendy", "Clementine"]


@pytest.mark.parametrize("name", STAFF_NAMES)
def test_staff_like_display_names_are_refused(node, name):
    status, body = _guest(node, name)
    assert (status, body.get("code")) == (422, "reserved_name"), body


@pytest.mark.parametrize("name", FINE_NAMES)
def test_ordinary_names_with_the_same_letters_pass(name):
    assert check_name(name) == name


@pytest.mark.parametrize(("password", "why"), [
    ("password", "common"), ("12345678", "sequence"), ("qwertyuiop", "keyboard"), ("aaaaaaaaaa", "repeat"),
    ("iloveyou1", "common"), ("Pr0vinces!", "the game's name"), ("bannerfall", "the service"),
    ("kestrel_07", "the username"), ("70_lertsek", "the username reversed"), ("Kira Moon", "the display name"),
    ("kiramoon99", "the display name"),
])
def test_common_and_context_specific_passwords_are_refused_and_change_nothing(node, password, why):
    status, guest = _guest(node, "Kira Moon")
    r = _claim(node, guest["token"], "kestrel_07", password)
    assert (r.status_code, r.json()["code"]) == (422, "weak_password"), why
    me = httpx.get(node.url + API + "/accounts/me", headers={"Authorization": f"Bearer {guest['token']}"}, timeout=10)
    assert me.json()["username"] is None  # nothing claimed


def test_a_good_password_is_taken(node):
    status, guest = _guest(node, "Kira Moon")
    assert _claim(node, guest["token"], "kestrel_08", "otter lamp gravel").status_code == 201

"""The documented proxy topology with a real nginx (``deploy/nginx.conf``, only its upstream and port
changed) in front of a real node: clients that send made-up ``X-Forwarded-For`` headers (and
``X-Real-IP``, ``Forwarded``) over REST and over sockets are still counted by their own address, so
the per-address limits hold; two real addresses still get a budget each. The node is started with
uvicorn's old ``FORWARDED_ALLOW_IPS=*`` too, which must change nothing.

Clients pick their source address in 127.0.0.0/8, so one machine is several client addresses; nginx
reaches the node from 127.0.0.1, the node's trusted proxy. Skipped in one line without nginx (CI
installs it: ``.ci/run``)."""
from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import websockets

from app.api.limits import TrustedProxies, address_key, parse_networks
from app.client import RestClient
from app.client.socket import ws_url
from tests.conftest import ROOT, ServerProcess, both_transports, free_port, transport_env

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)

FORGED = [
    {"X-Forwarded-For": "203.0.113.{i}"},
    {"X-Forwarded-For": "127.0.0.1"},  # an exempt address
    {"X-Forwarded-For": "198.51.100.{i}, 127.0.0.1"},
    {"X-Real-IP": "192.0.2.{i}", "Forwarded": "for=192.0.2.{i}"},
    {"X-Forwarded-For": "not-an-address-{i}"},
]


def _forged(i: int) -> dict[str, str]:
    return {k: v.format(i=i) for k, v in FORGED[i % len(FORGED)].items()}


# -- the rule, without a network ----------------------------------------------------------------

def test_only_a_trusted_peer_s_header_is_read_and_only_from_the_right():
    proxies = TrustedProxies("127.0.0.1, 10.0.0.0/8")
    # an untrusted peer: its header is never read
    assert proxies.client("198.51.100.7", ["1.2.3.4"]) == "198.51.100.7"
    # the proxy sets the header: the one entry is the client
    assert proxies.client("127.0.0.1", ["198.51.100.7"]) == "198.51.100.7"
    # a proxy that appends: whatever the client wrote on the left is never read
    assert proxies.client("127.0.0.1", ["127.0.0.1", "6.6.6.6", "198.51.100.7"]) == "198.51.100.7"
    # a chain of trusted proxies is walked through to the first address that is not one
    assert proxies.client("10.0.0.2", ["9.9.9.9", "198.51.100.7", "10.1.2.3"]) == "198.51.100.7"
    # garbage where the client's address should be: one shared "invalid", never the proxy (exempt)
    assert proxies.client("127.0.0.1", ["1.2.3.4", "junk"]) == "invalid"
    # IPv4-mapped IPv6 peers are their IPv4 address
    assert proxies.client("::ffff:127.0.0.1", ["198.51.100.7"]) == "198.51.100.7"
    assert TrustedProxies("").client("127.0.0.1", ["1.2.3.4"]) == "127.0.0.1"


def test_scope_rewrite_sets_client_and_scheme_only_for_a_trusted_peer():
    proxies = TrustedProxies("127.0.0.1")
    headers = [(b"x-forwarded-for", b"6.6.6.6"), (b"x-forwarded-for", b"198.51.100.7"),
               (b"x-forwarded-proto", b"https")]
    scope = {"type": "websocket", "client": ("127.0.0.1", 5000), "scheme": "ws", "headers": headers}
    proxies.resolve(scope)
    assert scope["client"] == ("198.51.100.7", 0) and scope["scheme"] == "wss"
    direct = {"type": "http", "client": ("198.51.100.9", 5000), "scheme": "http", "headers": headers}
    proxies.resolve(direct)
    assert direct["client"] == ("198.51.100.9", 5000) and direct["scheme"] == "http"


def test_ipv6_clients_are_counted_by_their_64_and_star_is_refused():
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("198.51.100.7") == "198.51.100.7"
    with pytest.raises(ValueError, match=r"\*"):
        parse_networks("*")
    with pytest.raises(ValueError, match="not an IP"):
        parse_networks("10.0.0.1, proxy.local")


def test_serve_refuses_a_trusted_proxy_list_of_star_in_one_line(tmp_path):
    env = {**os.environ, "BANNERFALL_TRUSTED_PROXIES": "*", "BANNERFALL_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
    out = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--port", str(free_port())], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "BANNERFALL_TRUSTED_PROXIES" in lines[0], out.stderr
    assert not (tmp_path / "x.db").exists()


# -- a real nginx in front of a real node -------------------------------------------------------

def _nginx_conf(folder: Path, listen: int, upstream: int) -> Path:
    """``deploy/nginx.conf`` with its upstream servers made ``127.0.0.1:upstream`` and its ``listen``
    ``127.0.0.1:listen``, inside the main context a conf.d file lacks (nginx as this user, no daemon)."""
    site = (ROOT / "deploy" / "nginx.conf").read_text()
    site, servers = re.subn(r"server\s+node-\d+:8000[^;]*;", "", site)
    assert servers == 2
    site = site.replace("upstream bannerfall {", f"upstream bannerfall {{\n    server 127.0.0.1:{upstream};", 1)
    site, listens = re.subn(r"listen\s+80;", f"listen 127.0.0.1:{listen};", site)
    assert listens == 1
    (folder / "site.conf").write_text(site)
    temp = "".join(f"    {kind}_temp_path {folder / kind};\n" for kind in ("client_body", "proxy", "fastcgi",
                                                                             "uwsgi", "scgi"))
    main = (f"daemon off;\nmaster_process off;\npid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'} warn;\n"
            f"events {{ worker_connections 256; }}\nhttp {{\n    access_log off;\n{temp}"
            f"    include {folder / 'site.conf'};\n}}\n")
    path = folder / "nginx.conf"
    path.write_text(main)
    return path


@pytest.fixture(scope="module")
def proxied(tmp_path_factory, transport):
    if NGINX is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light): the real-proxy tests need it")
    folder = tmp_path_factory.mktemp("nginx")
    node = ServerProcess(f"sqlite+aiosqlite:///{folder / 'proxy.db'}", env={
        "BANNERFALL_RATE_LIMIT_NEW_PLAYERS": "3/minute", "BANNERFALL_RATE_LIMIT_IP": "5/minute",
        "BANNERFALL_TRUSTED_PROXIES": "127.0.0.1", "FORWARDED_ALLOW_IPS": "*", **transport_env(transport)})
    port = free_port()
    proc = None
    try:
        node.start()
        conf = _nginx_conf(folder, port, node.port)
        check = subprocess.run([NGINX, "-t", "-c", str(conf), "-p", str(folder)], capture_output=True, text=True,
                               timeout=30)
        assert check.returncode == 0, check.stderr
        proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(folder)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (folder / "error.log").read_text()
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "nginx did not answer"
            time.sleep(0.05)
        yield url, node
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        node.stop()


def _from(address: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=30, transport=httpx.AsyncHTTPTransport(local_address=address))


async def test_forged_forwarded_headers_over_rest_do_not_give_fresh_budgets(proxied):
    url, _node = proxied
    statuses = []
    async with _from("127.0.0.2") as http:
        for i in range(12):
            answer = await http.post(url + "/api/v1/players", json={"name": f"forger{i}"}, headers=_forged(i))
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                assert answer.json()["code"] == "rate_limited" and int(answer.headers["Retry-After"]) >= 1
    assert statuses[:3] == [201, 201, 201] and set(statuses[3:]) == {429}, statuses
    async with _from("127.0.0.3") as other:  # another client behind the same proxy: a budget of its own
        assert (await other.post(url + "/api/v1/players", json={"name": "other"})).status_code == 201


async def _open(url: str, match_id: str, token: str, address: str, headers: dict[str, str]):
    ws = await websockets.connect(ws_url(url, match_id), local_addr=(address, 0), open_timeout=20,
                                  additional_headers=headers)
    try:
        await ws.send(json.dumps({"type": "hello", "token": token}))
    except websockets.ConnectionClosed:
        pass  # refused before the hello: the error is still there to read
    return ws, json.loads(await asyncio.wait_for(ws.recv(), 10))


@both_transports  # each transport finds the client's address in its own code
async def test_forged_forwarded_headers_over_sockets_do_not_give_fresh_budgets(proxied):
    url, node = proxied
    async with RestClient(node.url) as host:  # set up on the node itself, from its exempt loopback
        token = (await host.register("host"))["token"]
        lobby = await host.create_lobby("provinces", 2)
        await host.fill_bots(lobby["id"], "random")
        match_id = (await host.start(lobby["id"]))["match_id"]
    opened, refused = [], []
    try:
        for i in range(10):
            ws, first = await _open(url, match_id, token, "127.0.0.4", _forged(i))
            (opened if first["type"] == "state" else refused).append((ws, first))
        assert len(opened) == 5, [f["type"] for _, f in opened + refused]
        for ws, first in refused:
            assert first["code"] == "rate_limited"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4429
        ws, first = await _open(url, match_id, token, "127.0.0.5", {})  # another client: let through
        opened.append((ws, first))
        assert first["type"] == "state"
    finally:
        for ws, _ in opened + refused:
            await ws.close()

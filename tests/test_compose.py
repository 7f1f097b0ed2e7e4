"""docker-compose.yml: the production topology users run (Docker itself cannot run here)."""
from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT


def test_compose_topology_and_health_checks():
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = spec["services"]
    assert {"postgres", "redis", "migrate", "node-1", "node-2", "proxy"} <= set(services)
    for name in ("postgres", "redis", "node-1", "node-2", "proxy"):
        assert "healthcheck" in services[name], name
    for node in ("node-1", "node-2"):
        env = services[node]["environment"]
        assert env["BANNERFALL_DATABASE_URL"].startswith("postgresql+asyncpg://")
        assert env["BANNERFALL_REDIS_URL"].startswith("redis://")
        assert env["BANNERFALL_MIGRATE_ON_START"] == "false"
        assert services[node]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert env["BANNERFALL_ADMIN_TOKEN"].startswith("${BANNERFALL_ADMIN_TOKEN:?"), "admin token required"
        # only the proxy's fixed address is trusted for X-Forwarded-For (never "*": clients would
        # choose their own address), and nginx sets the header on every location, never appends
        assert "FORWARDED_ALLOW_IPS" not in env
        assert env["BANNERFALL_TRUSTED_PROXIES"] == services["proxy"]["networks"]["default"]["ipv4_address"]
        assert ipaddress.ip_address(env["BANNERFALL_TRUSTED_PROXIES"]) in ipaddress.ip_network(
            spec["networks"]["default"]["ipam"]["config"][0]["subnet"])
    assert services["migrate"]["command"] == ["bannerfall", "migrate"]
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    assert "node-1:8000" in conf and "node-2:8000" in conf and "Upgrade $http_upgrade" in conf
    locations = re.findall(r"location\s+(\S+)\s*\{(.*?)\n    \}", conf, re.S)
    assert {path for path, _ in locations} == {"/", "/ws/"}
    for path, body in locations:
        assert re.search(r"proxy_set_header\s+X-Forwarded-For\s+\$remote_addr;", body), path
    assert "proxy_add_x_forwarded_for" not in conf


def test_compose_config_validates_when_the_tool_exists():
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.skip("docker-compose is not installed on this machine; the YAML test above checks the file")
    out = subprocess.run([tool, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr

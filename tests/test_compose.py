"""docker-compose.yml: the production topology users run (Docker itself cannot run here)."""
from __future__ import annotations

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
        assert env["FORWARDED_ALLOW_IPS"] == "*"
    assert services["migrate"]["command"] == ["bannerfall", "migrate"]
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    assert "node-1:8000" in conf and "node-2:8000" in conf and "Upgrade $http_upgrade" in conf


def test_compose_config_validates_when_the_tool_exists():
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.skip("docker-compose is not installed on this machine; the YAML test above checks the file")
    out = subprocess.run([tool, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr

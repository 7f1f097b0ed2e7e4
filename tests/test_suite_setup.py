"""The suite's own setup: what it needs is said in one line when missing, and test servers leave
no log files loose in the temporary directory."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import ROOT, ServerProcess


def test_postgres_is_there(postgres_server):
    assert postgres_server.startswith("postgresql://")


def test_a_postgres_without_the_role_errors_in_one_line_and_never_skips():
    env = {**os.environ, "BANNERFALL_TEST_PG": "postgresql://bf_no_such_role@127.0.0.1:5432/test"}
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
                          "tests/test_suite_setup.py::test_postgres_is_there"], cwd=ROOT, env=env,
                         check=False, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    assert "1 error" in res.stdout and "skipped" not in res.stdout, res.stdout
    lines = [ln for ln in res.stdout.splitlines() if "bf_no_such_role" in ln and "BANNERFALL_TEST_PG" in ln]
    assert lines and "createuser" in lines[0] and 'role "bf_no_such_role" does not exist' in lines[0], res.stdout
    assert "Traceback" not in res.stdout


def test_server_logs_go_to_pytests_temporary_directory(tmp_path_factory):
    srv = ServerProcess("sqlite+aiosqlite:///unused.db")
    assert ServerProcess.log_dir is not None
    assert srv.log_path.parent == ServerProcess.log_dir
    assert tmp_path_factory.getbasetemp() in srv.log_path.parents
    assert srv.log_path.parent != Path(tempfile.gettempdir())


def test_server_logs_outside_pytest_are_removed_at_stop(monkeypatch):
    monkeypatch.setattr(ServerProcess, "log_dir", None)
    srv = ServerProcess("sqlite+aiosqlite:///unused.db")
    folder = srv.log_path.parent
    assert folder.is_dir() and folder.parent == Path(tempfile.gettempdir())
    srv.stop()
    assert not folder.exists()

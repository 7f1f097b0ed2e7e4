"""The suite's own setup: what it needs is said in one line when missing, and test servers leave
no log files loose in the temporary directory."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

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


# --- issue 26 item 18b: every server a test starts is stopped whatever happens; deadlines scale ------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead too (its parent has not reaped it yet)
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_server_whose_start_times_out_is_killed(tmp_path, monkeypatch):
    monkeypatch.setenv("BANNERFALL_TEST_TIME_SCALE", "1")
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'slow.db'}")
    with pytest.raises(RuntimeError, match="did not start within"):
        srv.start(timeout=0.05)   # far less than a start takes: the start "times out"
    assert srv.proc is not None and srv.proc.poll() is not None, "the server was left running"
    assert not _alive(srv.proc.pid)
    assert srv not in ServerProcess.running
    srv.stop()


def test_a_server_runs_in_a_process_group_of_its_own_and_stop_ends_it_even_when_stopped(tmp_path):
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'group.db'}").start()
    try:
        assert srv.proc is not None and os.getpgid(srv.proc.pid) == srv.proc.pid
        srv.proc.send_signal(signal.SIGSTOP)   # a paused node (the fault tests pause some)
    finally:
        srv.stop()
    assert srv.proc.poll() is not None and srv not in ServerProcess.running


FORGETFUL = '''
import os
from pathlib import Path

from tests.conftest import ServerProcess


def test_forgets_its_server(tmp_path):
    srv = ServerProcess(f"sqlite+aiosqlite:///{tmp_path / 'f.db'}").start()
    Path(os.environ["PID_FILE"]).write_text(str(srv.proc.pid))
    {ending}
'''


@pytest.mark.parametrize("ending", ["assert False, 'a failing test'", "raise KeyboardInterrupt"])
def test_a_server_a_test_forgot_to_stop_is_killed_at_the_sessions_end(tmp_path, ending):
    test_file = tmp_path / "test_forgetful.py"
    test_file.write_text(FORGETFUL.replace("{ending}", ending))
    pid_file = tmp_path / "pid"
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                          "-p", "tests.conftest", "--rootdir", str(tmp_path), str(test_file)],
                         cwd=ROOT, env={**os.environ, "PID_FILE": str(pid_file), "PYTHONPATH": str(ROOT)},
                         check=False, capture_output=True, text=True, timeout=300)
    assert res.returncode != 0, res.stdout
    pid = int(pid_file.read_text())
    assert not _alive(pid), f"server {pid} outlived its test session:\n{res.stdout[-2000:]}"


def test_deadlines_scale_with_the_variable_or_the_load(monkeypatch):
    from tests import timing

    monkeypatch.setenv("BANNERFALL_TEST_TIME_SCALE", "3")
    assert timing.time_scale() == 3.0 and timing.scaled(10) == 30.0
    monkeypatch.setenv("BANNERFALL_TEST_TIME_SCALE", "0.2")   # never shorter than nominal
    assert timing.time_scale() == 1.0
    monkeypatch.setenv("BANNERFALL_TEST_TIME_SCALE", "fast")
    with pytest.raises(ValueError, match="not a number"):
        timing.time_scale()
    monkeypatch.delenv("BANNERFALL_TEST_TIME_SCALE")
    cores = os.cpu_count() or 1
    monkeypatch.setattr(os, "getloadavg", lambda: (6.0 * cores, 0.0, 0.0))
    assert timing.time_scale() == 6.0
    monkeypatch.setattr(os, "getloadavg", lambda: (100.0 * cores, 0.0, 0.0))
    assert timing.time_scale() == timing.MAX_MEASURED_SCALE
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.0, 0.0))
    assert timing.time_scale() == 1.0


def test_each_tests_time_limit_scales_too(tmp_path):
    (tmp_path / "test_sleepy.py").write_text("import time\n\n\ndef test_sleepy():\n    time.sleep(3)\n")
    results = {}
    for scale in ("1", "4"):
        res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                              "-p", "tests.conftest", "-o", "timeout=1.5", "--rootdir", str(tmp_path),
                              str(tmp_path / "test_sleepy.py")],
                             cwd=ROOT, env={**os.environ, "BANNERFALL_TEST_TIME_SCALE": scale, "PYTHONPATH": str(ROOT)},
                             check=False, capture_output=True, text=True, timeout=120)
        results[scale] = (res.returncode, res.stdout[-600:])
    assert results["1"][0] != 0 and "Timeout" in results["1"][1], results   # 3 s > 1.5 s
    assert results["4"][0] == 0, results                                      # 3 s < 4 x 1.5 s

"""docs/quickstart.md's Python program, run as written (its server URL replaced by a test server's):
it plays a Provinces match to its end through ``app.client`` and prints the outcome. (Its
JavaScript program is run by ``clients/js/test/quickstart.test.js``, from tests/e2e/test_js_sdk.py.)"""
from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT, ServerProcess, make_db_url
from tests.timing import scaled


def test_the_quick_starts_python_plays_a_match_to_its_end(tmp_path):
    text = (ROOT / "docs" / "quickstart.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block, "docs/quickstart.md has a python block"
    code = block.group(1)
    assert len([line for line in code.splitlines() if line.strip()]) < 30
    assert "http://127.0.0.1:8000" in code
    url, _ = make_db_url("sqlite", tmp_path)
    srv = ServerProcess(url).start()
    try:
        program = tmp_path / "quickstart.py"
        program.write_text(code.replace("http://127.0.0.1:8000", srv.url))
        res = subprocess.run([sys.executable, str(program)], cwd=ROOT, capture_output=True, text=True,
                             timeout=scaled(120), check=False)
    finally:
        srv.stop()
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"^finished \{'ranks'", res.stdout, re.M), res.stdout
    assert re.search(r"^ack \d+ $", res.stdout, re.M), res.stdout

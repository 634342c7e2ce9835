"""The example script runs as the README says, and checks its own answers."""

import subprocess
import sys

from conftest import REPO


def test_the_python_tour_runs():
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "python_tour.py")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    for step in ["keyword PIR:", "YPIR:", "TreePIR:", "KKRT-PSI:", "ECDH messages:"]:
        assert step in result.stdout

"""Shared fixtures: the `obscura` command for the interoperability tests, and a server."""

import os
import re
import subprocess
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def cli() -> str:
    """The `obscura` command: $OBSCURA_CLI, else the workspace's debug build."""
    path = os.environ.get("OBSCURA_CLI") or str(REPO / "target" / "debug" / "obscura")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no obscura command at {path}: build it (cargo build --bin obscura) or set OBSCURA_CLI")
    return path


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    """Runs a command, with its output captured as text; fails the test on a non-zero exit."""
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, **kwargs)
    assert result.returncode == 0, f"{args}: {result.stderr}"
    return result


class Served:
    """`obscura serve` running in a subprocess on a free loopback port."""

    def __init__(self, cli: str, files):
        self.process = subprocess.Popen(
            [cli, "serve", *map(str, files), "--listen", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = None
        for line in self.process.stderr:
            found = re.search(r"serving on (http://\S+)", line)
            if found:
                self.url = found.group(1)
                break
        if self.url is None:
            self.process.kill()
            raise RuntimeError("obscura serve did not start")
        # Keep reading stderr so the server never blocks on a full pipe.
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def serve(cli):
    """Starts `obscura serve` on the given database files; stopped after the test."""
    started = []

    def start(*files) -> Served:
        served = Served(cli, files)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()

"""Starts and stops an `amulet dev` cluster (3 partitions x 3 replicas on
127.0.0.1) for the tests. The binary is $AMULET_BIN, by default
<repo>/target/release/amulet. Base ports are drawn from 22000-22990 (this
client's share of the machine's test ports); every wait is bounded and the
cluster is stopped on every path, with `--seconds` as a last resort if this
process is killed."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PORT_LOW, PORT_HIGH = 22000, 22990
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
# The cluster stops itself after this long even if nobody stops it.
LIFETIME_SECONDS = 900


def amulet_bin() -> Path:
    path = Path(os.environ.get("AMULET_BIN", REPO / "target" / "release" / "amulet"))
    if not path.is_file():
        raise RuntimeError(f"no amulet binary at {path}: build it (cargo build --release -p amulet) or set AMULET_BIN")
    return path


def _ports_free(ports) -> bool:
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


class DevCluster:
    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.dir: tempfile.TemporaryDirectory | None = None
        self.addresses: list[str] = []

    def start(self) -> "DevCluster":
        binary = amulet_bin()
        last = ""
        for _ in range(8):
            # `amulet dev` uses base+1..+3 and base+11..+13.
            base = random.randrange(PORT_LOW, PORT_HIGH - 20, 20)
            if not _ports_free([base + i for i in (1, 2, 3, 11, 12, 13)]):
                continue
            self.dir = tempfile.TemporaryDirectory(prefix="amulet-py-")
            log = open(Path(self.dir.name) / "dev.log", "wb")
            self.process = subprocess.Popen(
                [str(binary), "dev", "--dir", self.dir.name, "--base-port", str(base),
                 "--storage", "memory", "--seconds", str(LIFETIME_SECONDS)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            log.close()
            self.addresses = [f"127.0.0.1:{base + i}" for i in (1, 2, 3)]
            try:
                self._wait_ready()
                return self
            except RuntimeError as e:
                last = str(e)
                self.stop()
        raise RuntimeError(f"could not start an amulet dev cluster: {last}")

    def _wait_ready(self) -> None:
        import amulet

        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"amulet dev exited with {self.process.returncode}: {self.log()[-2000:]}")
            if "serving clients" in self.log():
                try:
                    with amulet.Client(self.addresses, operation_timeout=5.0) as client:
                        client.map("default").raw.size()
                    return
                except amulet.AmuletError:
                    pass
            time.sleep(0.2)
        raise RuntimeError(f"amulet dev not ready in {START_TIMEOUT}s: {self.log()[-2000:]}")

    def log(self) -> str:
        try:
            return (Path(self.dir.name) / "dev.log").read_text(errors="replace")
        except (OSError, AttributeError):
            return ""

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            # SIGTERM lets `amulet dev` stop its nodes; then the whole
            # process group is killed in case anything is left.
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=STOP_TIMEOUT)
        elif process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.dir is not None:
            self.dir.cleanup()
            self.dir = None

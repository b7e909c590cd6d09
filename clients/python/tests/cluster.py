"""Starts and stops an `amulet dev` cluster (3 partitions x 3 replicas on
127.0.0.1) for the tests. The binary is $AMULET_BIN, by default
<repo>/target/release/amulet. Base ports are drawn from 22000-22990 (this
client's share of the machine's test ports); every wait is bounded and the
cluster is stopped on every path, with `--seconds` as a last resort if this
process is killed.

`amulet dev` turns TLS on by default: it writes a CA, the nodes'
certificates and the user `admin`'s in `<dir>/tls`, and the nodes then
require a user certificate of that CA on every connection. Once the
cluster is up, `DevCluster.tls` is the `amulet.TlsFiles` of `admin`
(`TlsFiles.from_dir(<dir>/tls)`), to pass as `Client(..., tls=...)`.
`DevCluster(insecure=True)` starts it with `--insecure` instead (plain TCP,
`tls` is False, i.e. plaintext)."""

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


def _dev_env() -> dict[str, str]:
    """The environment of `amulet dev` (and of other `amulet` commands the
    tests run): without the TLS settings of the shell running the tests
    (its own checks would present `AMULET_USER`'s certificate, which it
    does not create, or `AMULET_TOKEN`, which the cluster does not know)."""
    return {k: v for k, v in os.environ.items() if k not in ("AMULET_TLS_DIR", "AMULET_USER", "AMULET_TOKEN")}


class DevCluster:
    def __init__(self, insecure: bool = False) -> None:
        self.insecure = insecure
        self.process: subprocess.Popen | None = None
        self.dir: tempfile.TemporaryDirectory | None = None
        self.addresses: list[str] = []
        # What clients of the cluster pass as tls=: the user admin's files
        # (an amulet.TlsFiles) once it started, False if it is insecure.
        self.tls = None

    @property
    def tls_dir(self) -> Path:
        """Where `amulet dev` wrote the CA, node and admin files."""
        return Path(self.dir.name) / "tls"

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
                 "--storage", "memory", "--seconds", str(LIFETIME_SECONDS)]
                + (["--insecure"] if self.insecure else []),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=_dev_env(),
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
                    # The files are written before the nodes start.
                    tls = False if self.insecure else amulet.TlsFiles.from_dir(self.tls_dir)
                    with amulet.Client(self.addresses, tls=tls, operation_timeout=5.0) as client:
                        client.map("default").raw.size()
                    self.tls = tls
                    return
                except (amulet.AmuletError, ValueError):
                    pass
            time.sleep(0.2)
        raise RuntimeError(f"amulet dev not ready in {START_TIMEOUT}s: {self.log()[-2000:]}")

    def log(self) -> str:
        try:
            return (Path(self.dir.name) / "dev.log").read_text(errors="replace")
        except (OSError, AttributeError):
            return ""

    def stop(self) -> None:
        self.tls = None
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

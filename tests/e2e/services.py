"""Real services the tests need: libvirtd (with virtlogd) and a Dask
scheduler with workers. Each is started only if not already running and
stopped again by whoever started it."""

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

LIBVIRT_SOCK = Path("/run/libvirt/libvirt-sock")
VIRTLOGD_SOCK = Path("/run/libvirt/virtlogd-sock")


def _wait_for(path: Path, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout_s} s")
        time.sleep(0.1)


def _scheduler_address(path: Path, proc: subprocess.Popen, timeout_s: float = 60.0) -> str:
    """The address in the Dask scheduler's --scheduler-file. The scheduler
    creates the file before it writes it, so an empty or half-written file
    means "not yet", not an error."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"dask scheduler exited {proc.returncode} before writing {path}")
        try:
            return json.loads(path.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} held no scheduler address within {timeout_s} s")
        time.sleep(0.1)


def _listening(path: Path) -> bool:
    """True if something accepts connections on the Unix socket at path. A
    daemon killed without cleanup leaves its socket file behind."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False


class Libvirtd:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.pids: list[int] = []

    def start(self) -> None:
        Path("/var/log/libvirt").mkdir(parents=True, exist_ok=True)
        for daemon, sock in (("/usr/sbin/virtlogd", VIRTLOGD_SOCK),
                             ("/usr/sbin/libvirtd", LIBVIRT_SOCK)):
            if _listening(sock):
                continue
            # Stale sockets of a daemon that died make the next one's
            # clients fail with "connection refused"; the daemon recreates
            # them on start.
            for stale in sock.parent.glob(sock.name + "*"):
                stale.unlink()
            pid_file = self.tmp / (Path(daemon).name + ".pid")
            subprocess.run([daemon, "--daemon", "--pid-file", str(pid_file)], check=True)
            _wait_for(sock)
            self.pids.append(int(pid_file.read_text()))

    def stop(self) -> None:
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.pids = []


class DaskCluster:
    """A scheduler and N workers on loopback, each worker able to import
    blklab from this checkout."""

    def __init__(self, tmp: Path, repo: Path, workers: int = 2):
        self.tmp = tmp
        self.repo = repo
        self.n = workers
        self.procs: dict[str, subprocess.Popen] = {}
        self.address = ""

    def start(self) -> None:
        sched_file = self.tmp / "scheduler.json"
        env = dict(os.environ, PYTHONPATH=str(self.repo / "harness"))
        self.procs["scheduler"] = subprocess.Popen(
            ["dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--dashboard-address", ":0", "--scheduler-file", str(sched_file)],
            stdout=open(self.tmp / "scheduler.log", "w"), stderr=subprocess.STDOUT, env=env)
        self.address = _scheduler_address(sched_file, self.procs["scheduler"])
        for i in range(self.n):
            self.procs[f"w{i}"] = subprocess.Popen(
                ["dask", "worker", self.address, "--name", f"w{i}", "--nthreads", "1",
                 "--nworkers", "1", "--no-dashboard", "--no-nanny"],
                stdout=open(self.tmp / f"w{i}.log", "w"), stderr=subprocess.STDOUT,
                env=env, cwd=self.repo / "harness")
        self.wait_for_workers(self.n)

    def wait_for_workers(self, n: int, timeout_s: float = 60.0) -> dict:
        from distributed import Client

        with Client(self.address, timeout="30s") as c:
            c.wait_for_workers(n, timeout=timeout_s)
            return c.scheduler_info()["workers"]

    def kill(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait()

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()

"""Running a scenario: cells in parallel, one fresh VM each, a manifest of
every input, and resume.

The run directory is results/<scenario>/<run-id>/ where run-id is a hash of
every input (scenario file, mode, accelerator, QEMU build, guest image), so
running the same command again finds the same directory and runs only the
cells that are missing or failed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blklab import __version__, accel as accel_mod, cluster as cluster_mod, paths
from blklab.cell import CellContext, cell_json_path, failed_result, run_cell
from blklab.errors import BlklabError
from blklab.results import CellResult, load_cell, validate, write_atomic, write_atomic_bytes
from blklab.scenario import Cell, Scenario, check_deterministic

log = logging.getLogger(__name__)

MANIFEST_SCHEMA_VERSION = 1
# The scenario as it was run, so that report and check need only the run.
SCENARIO_COPY = "scenario.toml"
# scenario.customer_fio, kept with the run for its report.
CUSTOMER_FIO_COPY = "customer-fio.json"


@dataclass
class RunOptions:
    mode: str | None = None  # overrides the scenario's
    accel: str | None = None  # None: probe
    jobs: int | None = None
    out: Path | None = None  # the run directory; default results/<scenario>/<run-id>
    repeats: int | None = None
    results_root: Path | None = None
    backend: str = "direct"
    libvirt_uri: str = "qemu:///system"
    cluster: str | None = None  # a Dask scheduler address; None: a local pool


def host_info() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "cpu_model": model, "cores": os.cpu_count(),
            "kernel": platform.release(), "python": platform.python_version()}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def profile_hashes(scenario: Scenario) -> dict[str, str]:
    """Device name -> sha256 of its profile, for devices that have one."""
    return {d.name: d.profile.sha256 for d in scenario.devices if d.profile is not None}


def job_file_hashes(scenario: Scenario) -> dict[str, str]:
    """Name under /job/files/ -> sha256, for the traces and fio job files the
    jobs bring (as the guest gets them)."""
    return {f.name: f.sha256 for job in scenario.jobs for f in job.files}


def run_id_of(scenario: Scenario, mode: str, accel: str,
              qemu_manifest: dict[str, Any], image: dict[str, Any]) -> str:
    inputs = {
        "scenario": scenario.sha256, "profiles": profile_hashes(scenario),
        "repeats": scenario.repeats, "mode": mode, "accel": accel,
        "cpu_rate": scenario.guest.cpu_rate_text, "qemu": qemu_manifest, "image": image.get("hash"),
        "blklab": __version__,
    }
    # Only then, so other runs keep their ids.
    if scenario.guest.vcpu_clocks == "parallel" or scenario.guest.vcpu_quantum_ns:
        inputs["vcpu_clocks"] = [scenario.guest.vcpu_clocks, scenario.guest.vcpu_quantum_ns]
    if scenario.guest.pause_ns:  # only then, so other runs keep their ids
        inputs["pause_ns"] = scenario.guest.pause_ns
    events = {k: getattr(scenario.guest, k) for k in ("irq_ns", "syscall_ns", "wake_ns")}
    if any(events.values()):  # only then, so other runs keep their ids
        inputs["cpu_events"] = events
    if scenario.short:  # the short form is another run of the same file
        inputs["short"] = True
    if scenario.guest_set:  # only then, so other runs keep their ids
        inputs["guest_set"] = scenario.guest_set
    if job_file_hashes(scenario):  # only then, so other runs keep their ids
        inputs["job_files"] = job_file_hashes(scenario)
    key = json.dumps(inputs, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


class Progress:
    """Cells done and failed, and an ETA: a live bar on a terminal, one line
    per finished cell otherwise (logs, CI)."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total = total
        self.done = 0
        self.failed = 0
        self.started = time.monotonic()
        self.stream = stream
        self._bar = None
        if total and stream.isatty():
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar,
                                       TextColumn, TimeRemainingColumn)
            self._bar = Bar(TextColumn("cells"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failed]} failed"), TimeRemainingColumn(),
                            console=Console(file=stream), transient=False)
            self._task = self._bar.add_task("cells", total=total, failed=0)
            self._bar.start()

    def cell_finished(self, cell_id: str, status: str, seconds: float) -> None:
        self.done += 1
        self.failed += status != "ok"
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed)
            if status != "ok":
                self._bar.console.print(f"{cell_id}: {status}")
            return
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        print(f"[{self.done}/{self.total} done, {self.failed} failed, ETA {eta:.0f} s] "
              f"{cell_id}: {status} ({seconds:.1f} s)", file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _run_local(todo: list[Cell], scenario: Scenario, ctx: CellContext, jobs: int,
               record) -> None:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_cell, c, scenario, ctx): c for c in todo}
        for fut in as_completed(futures):
            cell = futures[fut]
            try:
                result, files = fut.result()
            except Exception as e:  # a harness fault fails this cell only
                log.exception("cell %s: harness error", cell.id)
                result, files = failed_result(cell, scenario, ctx, f"harness error: {e}"), {}
            record(cell, result, files)


def pending_cells(run_dir: Path, cells: list[Cell]) -> list[Cell]:
    """The cells a run still has to do, in order: those without a complete
    result of this schema version that says "ok". A failed cell runs again;
    a missing, truncated or foreign JSON counts as not run."""
    todo = []
    for c in cells:
        existing = load_cell(cell_json_path(run_dir, c.id))
        if existing is None or existing.get("status") != "ok":
            todo.append(c)
    return todo


def run(scenario: Scenario, options: RunOptions) -> tuple[Path, list[dict[str, Any]]]:
    """Run every cell not already done; return the run directory and every
    cell's result, in cell order."""
    if options.repeats is not None:
        scenario.repeats = options.repeats
    mode = options.mode or scenario.mode
    if mode == "deterministic" and scenario.mode != "deterministic":
        check_deterministic(str(scenario.path), scenario.devices, "--mode deterministic")
    qemu = paths.qemu_binary()
    image_dir = paths.image_dir(scenario.guest.kernel)
    image = _read_json(image_dir / "image.json")
    qemu_manifest = _read_json(paths.qemu_dir() / "manifest.json")

    accel_fallback = ""
    if options.accel:
        accel = options.accel
    elif mode == "deterministic":
        accel = "tcg"
    else:
        accel, accel_fallback = accel_mod.probe(qemu, image_dir,
                                                paths.cache_dir() / "accel-probe.json")
        if accel_fallback:
            print(f"accelerator: {accel_fallback}", file=sys.stderr)
    if mode == "deterministic" and accel != "tcg":
        raise BlklabError("deterministic mode runs under TCG only (icount); "
                          f"--accel {accel} is not possible with it")

    run_id = run_id_of(scenario, mode, accel, qemu_manifest, image)
    root = options.results_root or (paths.REPO / "results")
    run_dir = options.out or (root / scenario.name / run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    cells = scenario.cells()

    manifest = {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "run_id": run_id,
        "blklab_version": __version__,
        "scenario": {"name": scenario.name, "path": str(scenario.path),
                     "sha256": scenario.sha256, "description": scenario.description},
        "mode": mode,
        "accel": accel,
        "accel_fallback": accel_fallback or None,
        # Instructions per ns per vCPU (-icount rate=); None in realtime mode.
        "cpu_rate": scenario.guest.cpu_rate,
        # "shared" or "parallel" (-icount parallel=on) and its quantum; None
        # in realtime mode.
        "vcpu_clocks": scenario.guest.vcpu_clocks,
        "vcpu_quantum_ns": scenario.guest.vcpu_quantum_ns,
        "pause_ns": scenario.guest.pause_ns,  # -icount pause=; None in realtime mode
        # The named CPU (cpus/*.toml) and the ns spent besides instructions
        # per interrupt, system call and wake-up (-icount irq=, syscall=,
        # wake=): the values in effect, [guest] keys applied; None in
        # realtime mode.
        "cpu": scenario.guest.cpu,
        "irq_ns": scenario.guest.irq_ns,
        "syscall_ns": scenario.guest.syscall_ns,
        "wake_ns": scenario.guest.wake_ns,
        "nvme_poll_queues": scenario.guest.nvme_poll_queues,  # nvme.poll_queues
        "seeds": scenario.seeds,
        "repeats": scenario.repeats,
        "short": scenario.short,  # [short] applied (blklab run --short)
        "guest_set": [f"{k}={v}" for k, v in scenario.guest_set],  # blklab run --guest
        "qemu": qemu_manifest,
        "image": image,
        "devmodel": {"sha256": qemu_manifest.get("devmodel_sha256"),
                     "profiles": {d.name: {"name": d.profile.name, "path": d.profile.path,
                                           "sha256": d.profile.sha256,
                                           "precondition": d.profile.precondition or None}
                                  for d in scenario.devices if d.profile is not None}},
        # [[fault]]: the device faults asked for (each cell's "faults" says
        # which fired and when).
        "faults": [f.to_json() for f in scenario.faults],
        "customer_fio": (hashlib.sha256(scenario.customer_fio).hexdigest()
                         if scenario.customer_fio is not None else None),
        "job_files": {f.name: {"source": f.source, "sha256": f.sha256}
                      for job in scenario.jobs for f in job.files},
        "cells": [c.id for c in cells],
        "host": host_info(),
        "backend": options.backend,
        # Which host ran which cell is in each cell's host.hostname / host.worker.
        "cluster": cluster_mod.cluster_info(options.cluster) if options.cluster else None,
    }
    write_atomic(run_dir / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    write_atomic(run_dir / SCENARIO_COPY, scenario.path.read_text())
    if scenario.customer_fio is not None:
        write_atomic_bytes(run_dir / CUSTOMER_FIO_COPY, scenario.customer_fio)

    todo = pending_cells(run_dir, cells)
    if len(todo) < len(cells):
        print(f"resuming {run_dir}: {len(cells) - len(todo)} of {len(cells)} cells done",
              file=sys.stderr)

    ctx = CellContext(qemu=qemu, image_dir=image_dir, image=image, accel=accel, mode=mode,
                      backend=options.backend,
                      libvirt_uri=options.libvirt_uri,
                      qemu_cache_key=qemu_manifest.get("cache_key", ""),
                      accel_fallback=accel_fallback)
    progress = Progress(len(todo))

    def record(cell: Cell, result: CellResult, files: dict[str, bytes]) -> None:
        """Keep a cell's logs and then its JSON. A write that fails (a full
        disk) loses only this cell: it has no JSON, so a rerun runs it."""
        validate(json.loads(result.to_json()))
        status = result.status
        try:
            for rel, blob in files.items():
                write_atomic_bytes(run_dir / rel, blob)
            write_atomic(cell_json_path(run_dir, cell.id), result.to_json())
        except OSError as e:
            log.error("cell %s: cannot write its results: %s", cell.id, e)
            print(f"cell {cell.id}: cannot write its results to {run_dir}: {e.strerror}",
                  file=sys.stderr)
            status = "unrecorded"
        progress.cell_finished(cell.id, status, result.host.get("wall_seconds", 0.0))

    try:
        if options.cluster:
            cluster_mod.run_on_cluster(options.cluster, todo, scenario, ctx, run_id, record)
        else:
            _run_local(todo, scenario, ctx, options.jobs or os.cpu_count() or 1, record)
    finally:
        progress.close()

    results = []
    for c in cells:
        data = load_cell(cell_json_path(run_dir, c.id))
        if data is not None:
            results.append(data)
    return run_dir, results


@dataclass
class Run:
    """A run directory read back: manifest, scenario and cells."""

    path: Path
    manifest: dict[str, Any]
    scenario: Scenario
    cells: list[dict[str, Any]]


def load_run(run_dir: Path) -> Run:
    from blklab import scenario as scenario_mod

    manifest_path = run_dir / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        raise BlklabError(f"{run_dir}: not a blklab run (no manifest.json)") from None
    except (OSError, ValueError) as e:
        raise BlklabError(f"{manifest_path}: unreadable: {e}") from None
    # The mode the run had (a scenario without scenario.mode reads as the
    # default of the blklab that reads it).
    mode = manifest.get("mode")
    guest_set = tuple(tuple(item.split("=", 1)) for item in manifest.get("guest_set") or ())
    scenario = scenario_mod.load(run_dir / SCENARIO_COPY, check_profiles=False,
                                 short=bool(manifest.get("short")),
                                 mode=mode if mode in scenario_mod.MODES else None,
                                 guest_set=guest_set)
    cells = []
    for cid in manifest.get("cells", []):
        data = load_cell(cell_json_path(run_dir, cid))
        if data is not None:
            cells.append(data)
    return Run(run_dir, manifest, scenario, cells)

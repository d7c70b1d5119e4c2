"""Running cells on a Dask cluster (distributed, from Debian).

Each worker host has blklab built (same QEMU and guest image: the cell
fails with a clear error otherwise). A cell runs on a worker in a
temporary directory; its result and its logs come back to the submitting
host, which writes them into the run directory atomically, as for local
runs. A worker that dies mid-cell loses only that cell: Dask runs it again
on another worker, up to the scheduler's allowed-failures limit, after
which the cell is reported failed.
"""

from __future__ import annotations

import json
import logging
import socket
from dataclasses import dataclass
from typing import Any, Callable

from blklab import paths
from blklab.cell import CellContext, failed_result, run_cell
from blklab.results import CellResult
from blklab.scenario import Cell, Scenario

log = logging.getLogger(__name__)

# Dask retries a task whose worker died this many times before giving up
# (distributed's scheduler setting of the same name).
ALLOWED_FAILURES = 3


@dataclass
class RemoteInputs:
    """What a worker needs besides the cell: the run's settings and the
    identity of the builds the submitting host used."""

    mode: str
    accel: str
    image_hash: str
    qemu_cache_key: str


@dataclass
class RemoteResult:
    result_json: str
    files: dict[str, bytes]  # path relative to the run directory -> content
    worker: str


def run_cell_remote(cell: Cell, scenario: Scenario, inputs: RemoteInputs) -> RemoteResult:
    """Runs on a worker: one cell in a private directory, results returned."""
    from distributed import get_worker

    try:
        worker = get_worker().address
    except ValueError:
        worker = "local"
    image_dir = paths.image_dir(scenario.guest.kernel)
    image = json.loads((image_dir / "image.json").read_text())
    qemu_manifest = json.loads((paths.qemu_dir() / "manifest.json").read_text())
    ctx = CellContext(qemu=paths.qemu_binary(), image_dir=image_dir, image=image,
                      accel=inputs.accel, mode=inputs.mode)
    mismatch = []
    if image.get("hash") != inputs.image_hash:
        mismatch.append(f"guest image {image.get('hash')} (submitter: {inputs.image_hash})")
    if qemu_manifest.get("cache_key") != inputs.qemu_cache_key:
        mismatch.append(f"QEMU build {qemu_manifest.get('cache_key')} "
                        f"(submitter: {inputs.qemu_cache_key})")
    if mismatch:
        result = failed_result(cell, scenario, ctx, f"worker {socket.gethostname()} has a "
                               f"different {' and '.join(mismatch)}: build the same inputs")
        result.host["hostname"] = socket.gethostname()
        result.host["worker"] = worker
        return RemoteResult(result.to_json(), {}, worker)
    result, files = run_cell(cell, scenario, ctx)
    result.host["hostname"] = socket.gethostname()
    result.host["worker"] = worker
    return RemoteResult(result.to_json(), files, worker)


def run_on_cluster(address: str, cells: list[Cell], scenario: Scenario, ctx: CellContext,
                   run_id: str, on_result: Callable[[Cell, CellResult, dict[str, bytes]], None]
                   ) -> None:
    """Submit every cell to the cluster at `address` and hand each result
    to on_result as it arrives."""
    from distributed import Client, as_completed

    inputs = RemoteInputs(mode=ctx.mode, accel=ctx.accel,
                          image_hash=ctx.image.get("hash", ""),
                          qemu_cache_key=ctx.qemu_cache_key)
    with Client(address, timeout="30s") as client:
        futures = {client.submit(run_cell_remote, c, scenario, inputs, pure=False,
                                 key=f"blklab-{run_id}-{c.id}-{id(c)}"): c
                   for c in cells}
        for fut in as_completed(futures):
            cell = futures[fut]
            try:
                remote: RemoteResult = fut.result()
            except Exception as e:  # KilledWorker after the retries, or a worker fault
                log.warning("cell %s failed on the cluster: %s", cell.id, e)
                result = failed_result(cell, scenario, ctx,
                                       f"cluster: {type(e).__name__}: {e}")
                on_result(cell, result, {})
                continue
            data = json.loads(remote.result_json)
            result = CellResult(**{k: v for k, v in data.items()})
            on_result(cell, result, remote.files)


def cluster_info(address: str) -> dict[str, Any]:
    from distributed import Client

    with Client(address, timeout="30s") as client:
        info = client.scheduler_info()
    return {"address": address,
            "workers": sorted(w.get("host", a) + f" ({a})" for a, w in info["workers"].items())}

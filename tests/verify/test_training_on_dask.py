"""Training claims on a real Dask LocalCluster: ``check --backend dask`` (the two environment
variables it sets) spreads a claim's training points over the workers and gives the same record
as the in-process run, bit for bit; a rerun reuses every stored point."""
from __future__ import annotations

import importlib.util
import os
import sqlite3
from collections import OrderedDict
from pathlib import Path

import pytest

import verify.memo
from verify.registry import get
from verify.runner import run_claim
from verify.sweep import ENV_BACKEND, ENV_SCHEDULER, stored_sweep

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None,
    reason="dask distributed is not installed (optional extra theory-verify[dask]; CI has it)")

#: Each claim at settings that train in seconds; what matters is that both backends agree.
#: li2.sec7-predictions: one point per configuration (16 here); li2.thm6-training: one per seed;
#: li2.fig8: one per optimiser and width; li2.fig3: one per seed.
REDUCED = {
    "li2.sec7-predictions": {"group": "Z11", "K": 32, "budget": 60, "chunk": 20,
                             "gradient_descent.budget": 60, "grids.K": (64, 32),
                             "grids.eta": (3e-3, 1.5e-3)},
    "li2.thm6-training": {"M": 11, "K": 32, "checkpoints": (50, 100), "sweep_at": (100,)},
    # one point per (optimiser, width): 2 here
    "li2.fig8": {"M": 11, "epochs": 200, "seeds": (10, 11, 12)},
    # one point per seed: 2 here
    "li2.fig3": {"M": 11, "K": 64, "epochs": 60, "gf_window": (10, 40)},
}


@pytest.fixture(scope="module")
def client():
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _record(claim_id: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The claim's record (check and control) at its reduced settings, with an empty process
    memo, so that its training runs (or is read from the store) in this call."""
    monkeypatch.setattr(verify.memo, "_STORE", OrderedDict())
    record = run_claim(get(claim_id), overrides=REDUCED[claim_id],
                       sweeper=stored_sweep).as_record()
    del record["seconds"]
    return record


def _workers(path: Path, sweep: str) -> list[int]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT status, worker FROM sweep_points WHERE sweep = ?",
                          (sweep,)).fetchall()
    assert {status for status, _ in rows} == {"ok"}
    return [int(worker.rsplit(":", 1)[1]) for _, worker in rows]


@pytest.mark.parametrize("claim_id", sorted(REDUCED))
def test_a_training_claim_on_the_cluster_equals_the_in_process_run(claim_id, client, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("THEORY_VERIFY_STORE", "off")
    local = _record(claim_id, monkeypatch)

    path = tmp_path / "results.sqlite"
    monkeypatch.setenv("THEORY_VERIFY_STORE", str(path))
    monkeypatch.setenv(ENV_BACKEND, "dask")
    monkeypatch.setenv(ENV_SCHEDULER, client.scheduler.address)
    remote = _record(claim_id, monkeypatch)
    assert remote == local                # evidence, figures, verdicts, control: bit for bit
    workers = _workers(path, f"{claim_id}:training")
    cluster = set(client.run(os.getpid).values())
    assert set(workers) <= cluster and os.getpid() not in workers   # computed on the workers
    assert len(set(workers)) == 2         # and spread over both

    # a rerun (in process now) computes nothing: every point is read from the store
    monkeypatch.setenv(ENV_BACKEND, "local")
    assert _record(claim_id, monkeypatch) == local
    assert len(_workers(path, f"{claim_id}:training")) == len(workers)

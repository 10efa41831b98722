"""The sweep API: in-process and on a real Dask LocalCluster give the same results; points stream
into the store; a rerun reuses them; a failed point or a lost worker loses only its own point."""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sqlite3
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics.li2.trainer import GroupTrainer, Hyper, TrainConfig
from verify.points import batched, canonical_points
from verify.sweep import (
    ENV_BACKEND,
    SweepStore,
    point_key,
    run_sweep,
)
from verify.cli.sweep import add_sweep_parser, cmd_sweep

needs_dask = pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None,
    reason="dask distributed is not installed (optional extra theory-verify[dask]; CI has it)")


# --- point functions (module level: a Dask worker imports them by name) --------------------------

@batched
def train_points(points: list[dict]) -> list[dict]:
    """A few Adam steps of Li2's network on Z_M, every point's (seed, p) on the batch axis."""
    out: list[dict] = [{}] * len(points)
    groups: dict[tuple, list[int]] = {}
    for i, q in enumerate(points):
        groups.setdefault((q["M"], q["K"], q["epochs"], q["lr"]), []).append(i)
    for (M, K, epochs, lr), idx in groups.items():
        table = [[(a + b) % M for b in range(M)] for a in range(M)]
        hyper = Hyper.batch(seed=[points[i]["seed"] for i in idx],
                            p=[points[i]["p"] for i in idx], lr=lr)
        config = TrainConfig(K=K, eval_every=epochs, diag_every=epochs, diagnostics=())
        history = GroupTrainer(table, hyper, config, dtype=torch.float64).train(epochs)
        loss, acc = history.series("train_loss")[1], history.series("test_acc")[1]
        for j, i in enumerate(idx):
            out[i] = {"loss_curve": loss[:, j].tolist(), "test_acc": acc[-1, j].item()}
    return out


def square_point(point: dict) -> dict:
    """x^2; the first call at a point with ``once`` (a file path) kills its worker process or
    interrupts the sweep, as ``action`` says; ``x == -1`` raises."""
    once = point.get("once")
    if once and not Path(once).exists():
        Path(once).touch()
        if point["action"] == "die":
            os._exit(1)
        raise KeyboardInterrupt
    if point["x"] == -1:
        raise ValueError("x = -1 is planted to fail")
    return {"y": point["x"] ** 2}


@batched
def square_points(points: list[dict]) -> list[dict]:
    return [square_point(p) for p in points]


def _rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT point, status, error FROM sweep_points ORDER BY id").fetchall()


TRAIN = [{"M": 5, "K": 8, "epochs": 15, "lr": 0.01, "seed": s, "p": p}
         for p in (0.4, 0.6) for s in range(4)]


# --- a real Dask cluster --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    import dask
    import distributed

    # allowed-failures 0: a task whose worker dies fails at once (KilledWorker) instead of being
    # retried elsewhere; worker-saturation 1: a worker holds only the task it runs; a long
    # lost-worker-timeout: on a busy machine a restarted worker can take over the default 15 s
    # to come back, and the cluster would then close it under whatever task it had just taken
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0,
                          "distributed.deploy.lost-worker-timeout": "10 minutes"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@needs_dask
def test_cluster_equals_in_process_and_rerun_reuses_across_backends(client, tmp_path):
    local = run_sweep(train_points, TRAIN, name="t", batch_size=4, store="off")
    path = tmp_path / "s.sqlite"
    remote = run_sweep(train_points, TRAIN, name="t", backend="dask", client=client,
                       batch_size=4, store=path)
    assert not local.failed and not remote.failed
    assert remote.results == local.results      # bit for bit: same chunks, seeded per point
    workers = {int(w.split(":")[1]) for w, in _rows_workers(path)}
    assert workers and os.getpid() not in workers                 # computed on the workers
    # every point was streamed in; the in-process rerun reuses them all (the key has no backend)
    again = run_sweep(train_points, TRAIN, name="t", batch_size=4, store=path)
    assert all(o.reused for o in again.outcomes) and again.results == local.results
    assert len(_rows(path)) == len(TRAIN)


def _rows_workers(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT worker FROM sweep_points").fetchall()


@needs_dask
def test_lost_worker_loses_only_its_point(client, tmp_path):
    points = [{"x": x} for x in range(8)]
    points[5] = {"x": 5, "once": str(tmp_path / "died"), "action": "die"}
    path = tmp_path / "s.sqlite"
    first = run_sweep(square_point, points, name="kill", backend="dask", client=client,
                      store=path)
    assert [o.ok for o in first.outcomes] == [i != 5 for i in range(8)]
    assert "lost with its worker" in first.outcomes[5].error
    assert "KilledWorker" in first.outcomes[5].error
    assert [r[1] for r in _rows(path)].count("ok") == 7           # the others are stored
    second = run_sweep(square_point, points, name="kill", backend="dask", client=client,
                       store=path)
    assert [o.reused for o in second.outcomes] == [i != 5 for i in range(8)]
    assert second.results == [{"y": x * x} for x in range(8)]


# --- in process -----------------------------------------------------------------------------------

def test_points_stream_into_the_store_before_an_interrupt(tmp_path):
    path = tmp_path / "s.sqlite"
    points = [{"x": x} for x in range(6)]
    points[4] = {"x": 4, "once": str(tmp_path / "stop"), "action": "interrupt"}
    with pytest.raises(KeyboardInterrupt):
        run_sweep(square_points, points, name="stream", batch_size=2, store=path)
    assert [json.loads(r[0])["x"] for r in _rows(path)] == [0, 1, 2, 3]   # two chunks landed
    seen: list[str] = []
    rerun = run_sweep(square_points, points, name="stream", batch_size=2, store=path,
                      progress=seen.append)
    assert [o.reused for o in rerun.outcomes] == [True] * 4 + [False] * 2
    assert rerun.results == [{"y": x * x} for x in range(6)]
    assert seen == ["sweep stream: 6/6 points (0 failed)"]


def test_a_failing_point_is_recorded_and_loses_no_other(tmp_path):
    path = tmp_path / "s.sqlite"
    points = [{"x": x} for x in (1, 2, -1, 3)]
    first = run_sweep(square_points, points, name="err", batch_size=4, store=path)
    assert [o.ok for o in first.outcomes] == [True, True, False, True]
    assert first.outcomes[2].error.startswith("ValueError: x = -1 is planted to fail (at ")
    assert first.results[3] == {"y": 9}
    stored = SweepStore(path).history("err")
    assert [(s.status, s.batch) for s in stored] == [("ok", 1), ("ok", 1), ("error", 1),
                                                     ("ok", 1)]   # isolated point by point
    assert "planted to fail" in stored[2].error
    second = run_sweep(square_points, points, name="err", batch_size=4, store=path)
    assert [o.reused for o in second.outcomes] == [True, True, False, True]   # error retried
    forced = run_sweep(square_points, points, name="err", batch_size=4, store=path, force=True)
    assert not any(o.reused for o in forced.outcomes)


def test_results_that_are_not_json_are_errors_and_nan_is_written_as_a_string(tmp_path):
    out = run_sweep(tensor_point, [{"v": 1.0}, {"v": 2.0}], name="j", store="off")
    assert "Tensor is not JSON data" in out.outcomes[0].error
    assert out.outcomes[1].result == {"y": "inf"}


def tensor_point(point: dict) -> dict:
    return {"y": torch.tensor(1.0) if point["v"] == 1.0 else float("inf")}


def test_progress_goes_to_stderr_only_on_a_terminal(tmp_path, capsys):
    run_sweep(square_point, [{"x": 1}], name="p", store="off")
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("kwargs, names", [
    ({"backend": "ray"}, "backend: 'ray'"),
    ({"points": []}, "points: empty"),
    ({"points": {"x": 1}}, "points: needs a list"),
    ({"points": [{"x": 1}, {"x": object()}]}, "points[1]"),
    ({"points": [{"x": float("nan")}]}, "points[0]"),
    ({"points": [{1: 2}]}, "points[0]"),
    ({"points": [{"x": 1}, {"x": 1}]}, "points[1]: repeats points[0]"),
    ({"batch_size": 0}, "batch_size"),
    ({"fn": lambda p: p}, "fn: "),
    ({"name": " "}, "name"),
    ({"client": "tcp://127.0.0.1:1"}, "client"),
    ({"store": 3}, "store"),
])
def test_bad_input_names_the_parameter(kwargs, names):
    args = {"fn": square_point, "points": [{"x": 1}], "name": "bad", "store": "off", **kwargs}
    with pytest.raises(ValueError) as err:
        run_sweep(args.pop("fn"), args.pop("points"), **args)
    assert names in str(err.value)


def test_backend_from_the_environment(monkeypatch):
    monkeypatch.setenv(ENV_BACKEND, "slurm")
    with pytest.raises(ValueError, match=ENV_BACKEND):
        run_sweep(square_point, [{"x": 1}], name="env", store="off")


@given(st.dictionaries(st.text(max_size=3), st.one_of(st.integers(), st.floats(allow_nan=False,
       allow_infinity=False), st.lists(st.integers(), max_size=3)), max_size=4))
def test_key_ignores_key_order_and_tuple_versus_list(point):
    reordered = dict(reversed(list(point.items())))
    tupled = {k: tuple(v) if isinstance(v, list) else v for k, v in point.items()}
    keys = {point_key("s", "m:f", p, code="c", versions={}) for q in (point, reordered, tupled)
            for p in canonical_points([q])}
    assert len(keys) == 1


# --- the sub-command ------------------------------------------------------------------------------

def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_sweep_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["sweep", *argv])


def test_cli_runs_a_grid_writes_json_and_rejects_a_bad_function(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    args = _parse("tests.verify.test_sweep:square_point", "--name", "cli", "--grid", "x=[1, 2, -1]",
                  "--store", str(tmp_path / "s.sqlite"), "--json", str(out), "--strict")
    assert cmd_sweep(args) == 1                            # --strict: one point failed
    record = json.loads(out.read_text())
    assert [p["result"] for p in record["points"]] == [{"y": 1}, {"y": 4}, None]
    assert "1 failed" in capsys.readouterr().out
    from verify.cli import UsageError
    with pytest.raises(UsageError, match="tests.verify.test_sweep:nope"):
        cmd_sweep(_parse("tests.verify.test_sweep:nope", "--name", "cli", "--grid", "x=[1]"))


def test_check_backend_options_reach_the_sweeps_inside_claims(tmp_path, monkeypatch, capsys):
    """``check --backend/--scheduler`` set the sweep environment for the run only (a claim's
    ``run_sweep`` reads it), and are refused up front when inconsistent."""
    from tests.planted import gauss_check, make_claim, planted
    from verify.cli import main
    from verify.sweep import ENV_SCHEDULER

    seen = {}

    def check(run):
        seen.update(backend=os.environ.get(ENV_BACKEND))
        yield from gauss_check(run)

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV_BACKEND, raising=False)
    with planted(make_claim("test.sweepenv", check=check)):
        assert main(["check", "test.sweepenv", "--backend", "local", "--store", "off",
                     "--jobs", "1"]) == 0
        assert seen == {"backend": "local"} and ENV_BACKEND not in os.environ
        assert main(["check", "test.sweepenv", "--scheduler", "tcp://127.0.0.1:1"]) == 2
        assert "--scheduler: needs --backend dask" in capsys.readouterr().err
    assert ENV_SCHEDULER not in os.environ


def test_run_sweep_inside_a_claim_is_memoised_and_names_failed_points(tmp_path, monkeypatch):
    """``run.sweep`` runs the grid once per process (the control reuses it) and turns failed
    points into one error naming them."""
    from tests.planted import gauss_check, make_claim
    from verify.runner import run_claim
    from verify.store import ENV

    monkeypatch.setenv(ENV, "off")
    calls = []

    def check(run):
        calls.append(run.sweep("squares", square_point, [{"x": 2}, {"x": 3}]))
        yield from gauss_check(run)

    result = run_claim(make_claim("test.sweepmemo", check=check))
    assert calls == [[{"y": 4}, {"y": 9}]] * 2 and result.verdict.value == "pass"

    def failing(run):
        run.sweep("bad", square_point, [{"x": 1}, {"x": -1}])
        yield from gauss_check(run)

    bad = run_claim(make_claim("test.sweepbad", check=failing), control=False)
    assert bad.verdict.value == "error" and "1 of 2 points failed" in bad.reason

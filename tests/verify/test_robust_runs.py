"""A run survives its claims (issue 22): a claim past its time limit and a claim whose worker
process dies each become an ``error`` record naming the claim, the other claims keep their
records, and ``check`` still writes results.json."""
from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest
import torch

from tests.planted import gauss_check, make_claim, planted
from verify import check_pool
from verify.check_pool import ClaimTask, run_claims_in_pool
from verify.cli import main
from verify.runner import run_claim
from verify.store import ResultStore

needs_fork = pytest.mark.skipif(sys.platform != "linux", reason="forked workers see the "
                                "planted claims; spawned ones would not")
needs_signals = pytest.mark.skipif(not hasattr(signal, "pthread_kill"),
                                   reason="the in-process limit signals the main thread")

#: Longer than any limit below by far: a check still sleeping at the end has not been stopped.
ASLEEP_S = 120


def dies(run):
    os._exit(3)


def dies_once(marker):
    """Dies the first time (no marker yet), then checks the Gauss sum."""
    def check(run):
        if not marker.exists():
            marker.touch()
            os._exit(3)
        yield from gauss_check(run)
    return check


def sleeps(run):
    time.sleep(ASLEEP_S)
    yield from gauss_check(run)


def spins(run):
    while True:
        pass


def swallows(run):
    """Catches every Exception, as careless check code might."""
    try:
        time.sleep(ASLEEP_S)
    except Exception:  # noqa: BLE001 - what is under test
        pass
    yield from gauss_check(run)


def deaf(run):
    """Blocks the limit's signal, as a native call that never returns to Python would."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    time.sleep(ASLEEP_S)
    yield from gauss_check(run)


def verdicts_in(path) -> dict[str, tuple[str, str]]:
    return {c["id"]: (c["verdict"], c["reason"]) for c in json.loads(path.read_text())["claims"]}


def pooled(tasks, **kwargs) -> dict[int, dict]:
    records = {}
    for index, record in run_claims_in_pool(
            tasks, jobs=2, fidelity="quick", device=torch.device("cpu"), dtype=torch.float64,
            seed=0, threads=1, start_method="fork", **kwargs):
        assert index not in records
        records[index] = record
    return records


# --- the limit in this process (--jobs 1) ----------------------------------------------------

@needs_signals
@pytest.mark.parametrize("check", [sleeps, spins, swallows])
def test_a_claim_past_its_limit_is_an_error_naming_it(check):
    before = signal.getsignal(signal.SIGUSR1)
    with planted(make_claim("test.slow", check=check)) as claim:
        start = time.monotonic()
        result = run_claim(claim, time_limit=0.5)
    assert time.monotonic() - start < 30
    assert result.verdict.value == "error"
    # a spinning check runs out of CPU seconds, a sleeping one waits 6 x the limit
    assert result.reason.startswith("time limit of 0.5 CPU-s exceeded")
    assert ("in wall time" in result.reason) == (check is not spins)
    assert "ClaimTimeLimit" in result.error           # where it was: the traceback
    assert signal.getsignal(signal.SIGUSR1) is before


def test_a_claim_within_its_limit_gives_the_record_it_gives_without_one():
    with planted(make_claim("test.gauss")) as claim:
        limited = run_claim(claim, time_limit=60).as_record()
        free = run_claim(claim).as_record()
    assert limited["verdict"] == free["verdict"] == "pass"
    assert limited["evidence"] == free["evidence"]


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan")])
def test_a_time_limit_that_is_not_a_positive_number_is_refused(bad):
    with planted(make_claim("test.gauss")) as claim, pytest.raises(ValueError,
                                                                    match="time_limit"):
        run_claim(claim, time_limit=bad)


# --- worker processes (--jobs N) ----------------------------------------------------------

@needs_fork
def test_a_worker_that_dies_twice_is_an_error_and_the_other_claims_finish():
    claims = [make_claim("test.dies", check=dies), make_claim("test.gauss"),
              make_claim("test.gauss2")]
    with planted(claims[0]), planted(claims[1]), planted(claims[2]):
        records = pooled([ClaimTask(c.id, {}) for c in claims])
    assert sorted(records) == [0, 1, 2]
    assert records[0]["verdict"] == "error"
    assert records[0]["reason"] == ("worker process lost twice running test.dies "
                                    "(the last exit code 3)")
    assert records[1]["verdict"] == records[2]["verdict"] == "pass"


@needs_fork
def test_a_claim_whose_worker_dies_once_is_run_again(tmp_path):
    notes = []
    with planted(make_claim("test.flaky", check=dies_once(tmp_path / "died"))), \
            planted(make_claim("test.gauss")):
        serial = run_claim(make_claim("test.flaky", check=gauss_check)).as_record()
        records = pooled([ClaimTask("test.flaky", {}), ClaimTask("test.gauss", {})],
                         notify=notes.append)
    assert records[0]["verdict"] == "pass" and records[0]["evidence"] == serial["evidence"]
    assert records[1]["verdict"] == "pass"
    assert notes == ["worker lost running test.flaky (exit code 3); running it again in a "
                     "fresh worker"]


@needs_fork
def test_a_claim_past_its_limit_in_a_worker_is_an_error_naming_it():
    with planted(make_claim("test.slow", check=sleeps)), planted(make_claim("test.gauss")):
        records = pooled([ClaimTask("test.slow", {}), ClaimTask("test.gauss", {})],
                         time_limit=1.0)
    assert records[0]["verdict"] == "error"
    assert records[0]["reason"].startswith("time limit of 1 CPU-s exceeded in wall time "
                                           "(test.slow")
    assert "ClaimTimeLimit" in records[0]["error"]     # stopped by the worker itself
    assert records[1]["verdict"] == "pass"


@needs_fork
def test_a_worker_deaf_to_its_limit_is_killed(monkeypatch):
    monkeypatch.setattr(check_pool, "KILL_GRACE_S", 1.0)
    with planted(make_claim("test.deaf", check=deaf)), planted(make_claim("test.gauss")):
        start = time.monotonic()
        records = pooled([ClaimTask("test.deaf", {}), ClaimTask("test.gauss", {}),
                          ClaimTask("test.gauss", {"n": 3})], time_limit=1.0)
    assert time.monotonic() - start < 60
    assert records[0]["verdict"] == "error"
    assert records[0]["reason"].startswith("time limit of 1 CPU-s exceeded in wall time "
                                           "(test.deaf")
    assert "was killed" in records[0]["error"]
    assert records[0]["seconds"] >= 7.0          # 6 x the limit on the clock, and the grace
    assert records[1]["verdict"] == records[2]["verdict"] == "pass"


# --- the command line -----------------------------------------------------------------------

@needs_fork
def test_check_writes_results_when_a_worker_dies_and_stores_no_run_error(tmp_path, capsys):
    out, store = tmp_path / "results.json", tmp_path / "store.sqlite"
    with planted(make_claim("test.dies", check=dies)), planted(make_claim("test.gauss")):
        code = main(["check", "test.dies", "test.gauss", "--jobs", "2", "--json", str(out),
                     "--store", str(store)])
    assert code == 0
    verdicts = verdicts_in(out)
    assert verdicts["test.dies"] == ("error", "worker process lost twice running test.dies "
                                              "(the last exit code 3)")
    assert verdicts["test.gauss"][0] == "pass"
    assert "worker lost running test.dies" in capsys.readouterr().err
    assert {r.id for r in ResultStore(str(store)).latest_per_claim()} == {"test.gauss"}


@needs_signals
def test_check_time_limit_in_one_process(tmp_path):
    out = tmp_path / "results.json"
    with planted(make_claim("test.slow", check=sleeps)), planted(make_claim("test.gauss")):
        code = main(["check", "test.slow", "test.gauss", "--jobs", "1", "--time-limit", "0.5",
                     "--json", str(out), "--no-store"])
    assert code == 0
    verdicts = verdicts_in(out)
    assert verdicts["test.slow"][0] == "error"
    assert verdicts["test.slow"][1].startswith("time limit of 0.5 CPU-s exceeded in wall time")
    assert verdicts["test.gauss"][0] == "pass"


@pytest.mark.parametrize("value", ["0", "-3", "inf", "nan", "soon"])
def test_a_bad_time_limit_is_a_usage_error(value, capsys):
    assert main(["check", "li2.eq2", "--time-limit", value, "--no-store"]) == 2
    assert "--time-limit" in capsys.readouterr().err


@needs_signals
def test_a_loaded_machine_does_not_stop_a_claim_within_its_cpu_seconds():
    """A claim that waits 1.5 s on the clock but computes little is within a 1 s limit: the
    limit counts CPU seconds, so a share of a busy core is not a time-out (was: an error)."""
    def slow_but_light(run):
        time.sleep(1.5)
        yield from gauss_check(run)

    with planted(make_claim("test.light", check=slow_but_light)) as claim:
        result = run_claim(claim, time_limit=1.0)
    assert result.verdict.value == "pass", result.reason

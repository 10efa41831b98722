"""The counterexample search (``verify stress``) and its quality tier: planted false claims
must be found and shrunk to their known minimal case; planted true claims must give none."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import time

import pytest

from tests.planted import (
    cubes_wrong_exponent,
    exact_cubes_recheck,
    gauss_off_by_one,
    make_cubes,
    make_gauss_spaced,
    make_harmonic,
    make_square_bound,
    planted,
    square_bound_short,
)
from verify import registry
from verify.cli import main
from verify.sampling import IntRange
from verify.stress import _strategy, bin_label, space_of, stress


def test_wrong_constant_is_found_and_shrunk_to_n_1():
    report = stress(make_gauss_spaced(stated=gauss_off_by_one), budget=20)
    cx = report.counterexample
    assert cx is not None and cx.config == {"n": 1}
    assert cx.status == "genuine" and cx.inside
    assert cx.reproduce == "python -m verify check test.gauss-space --set n=1"


def test_wrong_exponent_is_shrunk_to_n_2_and_confirmed_exactly():
    claim = make_cubes(stated=cubes_wrong_exponent)
    report = stress(claim, budget=20)
    assert report.counterexample.config == {"n": 2, "seed": 0}
    assert report.counterexample.status == "genuine"
    exact = dataclasses.replace(claim, recheck=exact_cubes_recheck)
    cx = stress(exact, budget=20).counterexample
    assert [r["how"] for r in cx.rechecks] == ["float64 rerun", "exact re-check"]
    assert cx.rechecks[1]["verdict"] == "fail" and cx.status == "genuine"


def test_dropped_assumption_is_found_at_n_3_and_respected_when_present():
    dropped = stress(make_square_bound(assumption=False), budget=40)
    assert dropped.counterexample.config == {"n": 3}
    kept = make_square_bound()
    assert stress(kept, budget=40, mode="inside").counterexample is None
    outside = stress(kept, budget=40, mode="outside").counterexample
    assert outside.config == {"n": 3} and not outside.inside


def test_a_failure_inside_the_assumptions_is_shrunk_before_smaller_ones_outside():
    # n = 1..3 fail outside the assumption n >= 4, and n = 4, 5 inside it
    claim = make_square_bound(bound=square_bound_short)
    both = stress(claim, budget=40, mode="both").counterexample
    assert both.config == {"n": 4} and both.inside and both.status == "genuine"
    outside = stress(claim, budget=40, mode="outside").counterexample
    assert outside.config == {"n": 1} and not outside.inside


def test_a_time_limit_stops_the_search_and_keeps_what_it_found():
    report = stress(make_gauss_spaced(stated=gauss_off_by_one), budget=20, time_limit=0.5,
                    checkpoint=lambda report: time.sleep(0.2))
    assert report.stopped.startswith(f"time limit of 0.5 s reached after {len(report.points)} "
                                     f"runs")
    assert 1 <= len(report.points) < 20
    assert report.counterexample.status == "genuine"  # a time limit still re-checks
    with pytest.raises(ValueError, match="time_limit"):
        stress(make_cubes(), time_limit=0)


def test_an_interrupted_search_keeps_its_failures_unconfirmed():
    def interrupt_at_the_third_run(report):
        if len(report.points) == 3:
            raise KeyboardInterrupt("SIGTERM")

    report = stress(make_gauss_spaced(stated=gauss_off_by_one), budget=20,
                    checkpoint=interrupt_at_the_third_run)
    assert len(report.points) == 3 and "interrupted (SIGTERM) after 3 runs" in report.stopped
    cx = report.counterexample
    assert cx.status == "unconfirmed" and cx.rechecks == ()
    assert cx.config in [p.config for p in report.points]


def test_cli_stress_killed_by_sigterm_prints_and_writes_what_it_found(tmp_path, capsys):
    out = tmp_path / "stress.json"
    seen = []
    claim = make_gauss_spaced(stated=gauss_off_by_one)
    handler = signal.getsignal(signal.SIGTERM)

    def check(run):
        seen.append(json.loads(out.read_text()) if out.exists() else None)
        if len(seen) == 3:  # as `timeout` does to the search
            os.kill(os.getpid(), signal.SIGTERM)
        yield from claim.check(run)

    with planted(dataclasses.replace(claim, check=check)):
        assert main(["stress", claim.id, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "  stopped early: interrupted (SIGTERM) after 2 runs" in text
    assert "smallest counterexample so far (unconfirmed, inside the assumptions)" in text
    assert seen[0] is None and seen[2]["run"]["in_progress"] == "2 runs so far"
    assert len(seen[2]["points"]) == 2
    record = json.loads(out.read_text())
    assert "in_progress" not in record["run"] and record["stopped"].startswith("interrupted")
    assert record["counterexample"]["status"] == "unconfirmed"
    assert signal.getsignal(signal.SIGTERM) is handler  # put back


@pytest.mark.parametrize("claim", [make_gauss_spaced(), make_cubes()], ids=lambda c: c.id)
def test_true_claims_give_no_counterexample(claim):
    report = stress(claim, budget=30)
    assert report.counterexample is None
    # the budget was spent (hypothesis may draw a configuration twice; the cache runs it once)
    assert len(report.points) >= 25


def test_a_float32_artefact_is_reported_as_numerical_not_as_a_counterexample():
    cx = stress(make_harmonic(), budget=10, dtype="float32").counterexample
    assert cx is not None and cx.status == "numerical"
    assert cx.rechecks[0] == {**cx.rechecks[0], "how": "float64 rerun", "verdict": "pass"}


def test_regime_map_and_coverage_count_every_run():
    report = stress(make_square_bound(), budget=40, mode="both")
    runs = len(report.points)
    cells = report.regime_map()["n"]
    assert sum(c["inside"] + c.get("outside", 0) if "inside" in c else c["outside"]
               for c in cells.values()) == runs
    assert cells["3"]["outside"] >= 1 and cells["3"].get("fail", 0) >= 1
    assert sum(report.coverage()["n"].values()) == runs


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="mode"):
        stress(make_cubes(), mode="around")
    with pytest.raises(ValueError, match="budget"):
        stress(make_cubes(), budget=0)
    with pytest.raises(ValueError, match="not parameters"):
        make_cubes().__class__(**{**make_cubes().__dict__, "space": {"q": IntRange(1, 2)}})


def test_bin_labels():
    assert bin_label(3) == "3" and bin_label("Z4") == "Z4"
    assert bin_label(0.003) == "1e-3..1e-2" and bin_label(-20.0) == "-1e1..1e2"


def test_every_registered_claim_has_a_space_stress_can_draw_from():
    from hypothesis import find, settings
    for claim in registry.all_claims():
        config = find(_strategy(space_of(claim)), lambda c: True,
                      settings=settings(database=None))
        heads = {name.split(".")[0] for name in config}      # a dotted name: a nested key
        assert heads <= set(claim.parameters["quick"]) | {"seed"}, claim.id


def test_cli_stress_and_check_with_overrides(tmp_path, capsys):
    with planted(make_cubes(stated=cubes_wrong_exponent)):
        out = tmp_path / "stress.json"
        assert main(["stress", "test.cubes", "--budget", "10", "--json", str(out)]) == 0
        text = capsys.readouterr().out
        assert "minimal counterexample (genuine, inside the assumptions): " \
               "{'n': 2, 'seed': 0}" in text
        assert "reproduce: python -m verify check test.cubes --set n=2 --seed 0" in text
        record = json.loads(out.read_text())
        assert record["kind"] == "stress" and record["counterexample"]["config"] == {
            "n": 2, "seed": 0}
        assert record["run"]["seed"] == 0
        res = tmp_path / "r.json"
        assert main(["check", "test.cubes", "--set", "n=2", "--json", str(res)]) == 0
        checked = json.loads(res.read_text())["claims"][0]
        assert checked["parameters"]["n"] == 2 and checked["verdict"] == "fail"
        assert main(["check", "test.cubes", "--set", "q=2", "--json", str(res)]) == 2
        assert "--set: 'q' is not a parameter of test.cubes" in capsys.readouterr().err
        assert main(["stress", "test.cubes", "--budget", "0"]) == 2


def test_reproduce_line_round_trips_through_the_shell_and_the_cli_parser():
    import shlex

    from verify.cli.commands import _assignment
    from verify.stress import reproduce_line
    config = {"groups": ("Z3",), "g": "Z4", "x": 0.5, "L": [2, 3], "pair": (1, 2)}
    words = shlex.split(reproduce_line("li2.thm2", config, "float64"))
    parsed = dict(_assignment(w) for w in words[words.index("--set") + 1::2])
    assert parsed == config

"""The check command's terminal: cut lines, colour, comparable tolerances, the key figure,
the summary line, the --jobs default and merging a selection into an earlier results file."""
from __future__ import annotations

import json
import os

from tests.planted import gauss, gauss_off_by_one, make_claim, planted
from verify.cli import main
from verify.cli import commands
from verify.evidence import Route, Tolerance, compare, undecided
from verify.results import compared_texts, key_figure_text, key_item

RECORD = {"id": "li2.sec7-predictions", "verdict": "fail", "seconds": 8.53,
          "inside_assumptions": True, "diagnosis": "stated slope < 0, measured slope 0.524 "
          "(interval [0.32, 0.727]), smallest case K = 128; fails in 4 of 10 cases " * 2}


def test_lines_are_cut_in_the_middle_keeping_id_verdict_and_time():
    line = commands.claim_line(RECORD, 26, columns=100)
    assert len(line) == 100
    assert line.startswith(f"{'li2.sec7-predictions':<26}  fail          stated slope < 0")
    assert line.endswith("...  8.53s")
    short = commands.claim_line({**RECORD, "diagnosis": "short"}, 26, columns=100)
    assert short.endswith("short  8.53s") and "..." not in short
    outside = commands.claim_line({**RECORD, "inside_assumptions": False}, 26, columns=80)
    assert len(outside) == 80 and outside.endswith("8.53s  [outside assumptions]")


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    plain = commands.claim_line(RECORD, 26, columns=100)
    coloured = commands.claim_line(RECORD, 26, columns=100, colour=True)
    assert "\033[31mfail\033[0m" in coloured and "\033" not in plain
    assert coloured.replace("\033[31m", "").replace("\033[0m", "") == plain
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert commands.use_colour()
    monkeypatch.setenv("NO_COLOR", "1")
    assert not commands.use_colour()
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    monkeypatch.delenv("NO_COLOR")
    assert not commands.use_colour() and commands.terminal_columns() == 100


def test_tolerances_have_the_digits_to_compare():
    assert compared_texts(42.0, 45.0) == ("4.2e+01", "4.5e+01")
    assert compared_texts(0.011, 0.03) == ("1.1e-02", "3e-02")
    d, t = compared_texts(45.04, 45.03)  # a fail that two digits would hide
    assert float(d) > float(t)
    for disc, tol in [(0.0296, 0.03), (7.1e-10, 7.13e-10), (3.2e-1, 0.0), (45.0, 45.0)]:
        d, t = compared_texts(disc, tol)
        assert (float(d) <= float(t)) == (disc <= tol)
    figure = {"quantity": "angle", "discrepancy": 42.0, "tolerance": 45.0, "finite": True}
    assert key_figure_text(figure, "") == "angle: 4.2e+01 (tol 4.5e+01)"


def test_the_key_figure_is_a_failing_item_before_an_undecided_one():
    tol = Tolerance(0.1, "test")
    failing = compare(Route.NUMERIC, "wrong", stated=1.0, measured=2.0, tolerance=tol)
    unknown = undecided(Route.NUMERIC, "unknown", "never reached", tolerance=tol)
    passing = compare(Route.NUMERIC, "right", stated=1.0, measured=1.05, tolerance=tol)
    assert key_item([passing, unknown, failing]).quantity == "wrong"
    assert key_item([passing, unknown]).quantity == "unknown"
    assert key_item([passing]).quantity == "right"


def test_jobs_default_to_the_usable_cores():
    args = commands.build_parser().parse_args(["check"])
    assert args.jobs is None  # resolved in check: the usable cores on the CPU, 1 on CUDA
    assert commands.usable_cores() == len(os.sched_getaffinity(0))


def _claims(path):
    return {c["id"]: c for c in json.loads(path.read_text())["claims"]}


def test_summary_line_and_a_selection_merged_into_an_earlier_file(tmp_path, capsys):
    out = tmp_path / "results.json"
    with planted(make_claim("test.true")), \
            planted(make_claim("test.false", stated=gauss_off_by_one, control=gauss)):
        assert main(["check", "test.*", "--jobs", "1", "--no-store", "--json", str(out)]) == 0
        summary = capsys.readouterr().out.strip().splitlines()[-1]
        assert summary.startswith("2 claims: 1 pass, 1 fail in ")
        assert summary.endswith(f"(--jobs 1); wrote {out}")
        first = _claims(out)
        assert first["test.false"]["diagnosis"].startswith("stated")

        assert main(["check", "test.true", "--seed", "0", "--jobs", "1", "--no-store",
                     "--json", str(out)]) == 0
        summary = capsys.readouterr().out.strip().splitlines()[-1]
        assert f"merged into {out} (1 replaced or added, 1 kept)" in summary
        merged = json.loads(out.read_text())
        assert [c["id"] for c in merged["claims"]] == ["test.false", "test.true"]
        assert merged["claims"][0] == first["test.false"]
        assert merged["summary"]["pass"] == 1 and merged["summary"]["fail"] == 1

        assert main(["check", "test.true", "--seed", "7", "--jobs", "1", "--no-store",
                     "--json", str(out)]) == 0  # another seed: not the same run, written anew
        summary = capsys.readouterr().out.strip().splitlines()[-1]
        assert "wrote" in summary and "(new:" in summary
        assert list(_claims(out)) == ["test.true"]


def test_a_file_that_is_no_results_file_is_replaced(tmp_path, capsys):
    out = tmp_path / "results.json"
    out.write_text("not json")
    with planted(make_claim("test.true")):
        assert main(["check", "test.true", "--jobs", "1", "--no-store",
                     "--json", str(out)]) == 0
    assert list(_claims(out)) == ["test.true"]
    assert "(new:" in capsys.readouterr().out


def test_show_prints_no_backslash_command_for_any_claim(capsys):
    """Statements, readings and assumptions come out as unicode text (issue 31), never raw
    LaTeX: for every registered claim."""
    import re

    from verify import registry

    offenders = {}
    for claim_id in [c.id for c in registry.select([])]:
        assert main(["show", claim_id]) == 0
        left = re.findall(r"\\[A-Za-z]+", capsys.readouterr().out.split("\nnegative control")[0])
        if left:
            offenders[claim_id] = left[:3]
    assert offenders == {}

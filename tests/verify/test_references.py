"""Reference results (verify/references.py): saved with their provenance, loaded, shown beside
a quick verdict by ``check``, stale when the claim code changed, a contradiction leading the
diagnosis; every training claim has one that loads."""
from __future__ import annotations

import json

import pytest

from verify import references, registry
from verify.cli import main
from verify.code_closure import claim_code_digest
from verify.diagnosis import diagnose, diagnosed
from verify.metadata import run_metadata
from verify.runner import run_claim

#: The claims that train networks (issue 28, item 2): each must carry a paper-size reference.
TRAINING = ("li2.fig3", "li2.eq6", "li2.fig5", "li2.fig6", "li2.fig7", "li2.fig8",
            "li2.fig10-ridge-top", "li2.fig11-complex", "li2.fig14-zero-init", "li2.thm4",
            "li2.thm6-training", "li2.sec6-deep", "li2.sec7-predictions",
            "li2.sec8-discussion", "li2.x.lock-in", "li2.x.paper-vs-code",
            "li2.x.fig3-third-party")
#: Those whose paper-size run has not been made yet: the list only shrinks (the test below
#: fails when one of them gains a reference and is still listed).
PENDING = {"li2.fig5", "li2.fig6",
           "li2.fig7", "li2.fig8", "li2.fig14-zero-init", "li2.thm4",
           "li2.sec6-deep", "li2.sec7-predictions", "li2.x.lock-in"}


@pytest.fixture(scope="module")
def full_record():
    """li2.eq2 at full fidelity (seconds): a real record to make a reference of."""
    import torch

    result = run_claim(registry.get("li2.eq2"), fidelity="full")
    run = run_metadata(device=torch.device("cpu"), dtype=torch.float64, seed=0,
                       fidelity="full")
    return diagnosed(result.as_record()), {**run, "finished": "2026-12-07T00:00:00+00:00"}


def _save(folder, full_record, **changes):
    record, run = full_record
    return references.save({**record, **changes}, module="verify.claims.li2.eq2", run=run,
                           cpu_seconds=3.5, wall_seconds=2.0, load={"1min": 0.5},
                           made="2026-12-07", folder=folder)


def test_a_reference_round_trips_with_its_provenance(tmp_path, full_record):
    path = _save(tmp_path, full_record)
    assert path.name == "li2.eq2.json"
    ref = references.load("li2.eq2", tmp_path)
    assert ref.verdict == full_record[0]["verdict"] and ref.fidelity == "full"
    p = ref.provenance
    assert p["cpu_seconds"] == 3.5 and p["threads"] >= 1 and p["torch"] and p["seed"] == 0
    assert p["machine"]["cores"] and p["load"] == {"1min": 0.5}
    assert ref.code == claim_code_digest("verify.claims.li2.eq2") and not ref.stale


def test_a_changed_claim_code_makes_it_stale(tmp_path, full_record, monkeypatch):
    _save(tmp_path, full_record)
    monkeypatch.setattr(references, "claim_code_digest", lambda module: "0" * 16)
    ref = references.load("li2.eq2", tmp_path)
    assert ref.stale
    assert references.summary_text(ref.summary()).endswith(
        "stale: the claim code changed since")


def test_a_full_run_is_not_shown_beside_itself(tmp_path, full_record):
    _save(tmp_path, full_record)
    assert "reference" not in references.attach(full_record[0], tmp_path)


def test_a_contradiction_leads_the_diagnosis(tmp_path, full_record):
    _save(tmp_path, full_record, verdict="fail")
    quick = diagnosed(run_claim(registry.get("li2.eq2")).as_record())
    assert quick["verdict"] == "pass"
    both = references.attach(quick, tmp_path)
    assert both["reference"]["verdict"] == "fail"
    assert diagnose(both).startswith("CONTRADICTS paper size (fail at full, 2026-12-07); "
                                     "at quick: ")
    # agreeing verdicts say nothing extra
    _save(tmp_path, full_record)
    assert diagnose(references.attach(quick, tmp_path)) == quick["diagnosis"]


def test_a_malformed_reference_names_its_file(tmp_path):
    (tmp_path / "li2.eq2.json").write_text('{"schema": 1, "claim": "li2.eq2"}')
    with pytest.raises(references.ReferenceError, match=r"li2\.eq2\.json: field"):
        references.load("li2.eq2", tmp_path)


def test_check_prints_the_paper_size_verdict_beside_the_quick_one(tmp_path, full_record,
                                                                  monkeypatch, capsys):
    _save(tmp_path, full_record, verdict="fail")
    monkeypatch.setattr(references, "FOLDER", tmp_path)
    assert main(["check", "li2.eq2", "--no-store", "--jobs", "1",
                 "--json", str(tmp_path / "r.json")]) == 0
    line, paper, _ = capsys.readouterr().out.splitlines()
    assert line.startswith("li2.eq2") and "CONTRADICTS" in line
    assert paper.strip().startswith("paper size: fail (reference, full, 2026-12-07, rev ")
    record = json.loads((tmp_path / "r.json").read_text())["claims"][0]
    assert record["reference"]["verdict"] == "fail"


def test_the_reference_command_refuses_bad_input_before_any_work(tmp_path, capsys):
    assert main(["reference", "no.such.claim"]) == 2
    assert main(["reference", "li2.eq2", "--from", str(tmp_path / "none.json"),
                 "--cpu-seconds", "1"]) == 2
    assert main(["reference", "li2.eq2", "--cpu-seconds", "1"]) == 2
    assert main(["reference", "li2.eq2", "--from", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert "ID:" in err and "--from" in err and "--cpu-seconds" in err


@pytest.mark.parametrize("claim_id", TRAINING)
def test_every_training_claim_has_a_reference_that_loads(claim_id):
    ref = references.load(claim_id)
    if claim_id in PENDING:
        assert ref is None, f"{claim_id} has a reference now: take it off PENDING"
        pytest.skip(f"{claim_id}: its paper-size run has not been made yet (PENDING)")
    assert ref is not None, f"{claim_id}: no verify/references/{claim_id}.json"
    assert ref.fidelity == "full" and ref.provenance["cpu_seconds"] is not None
    assert registry.get(claim_id).check.__module__ == ref.module


def test_the_reports_and_the_findings_show_both_verdicts(tmp_path, full_record):
    from verify.report.findings import render_findings_html, render_findings_markdown
    from verify.report.html import claim_section

    _save(tmp_path, full_record, verdict="fail")
    quick = diagnosed(references.attach(
        diagnosed(run_claim(registry.get("li2.eq2")).as_record()), tmp_path))
    html = claim_section(quick)
    assert "<b>Paper size:</b>" in html and "(reference, full, 2026-12-07, rev" in html
    record = {"claims": [quick], "run": {}}
    page = render_findings_html(record)
    assert "Toy size and paper size disagree (1)" in page and "<b>Paper size:</b>" in page
    assert "- **Paper size:** fail (reference, full" in render_findings_markdown(record)


def test_the_reference_list_shows_each_with_its_state(tmp_path, full_record, capsys,
                                                      monkeypatch):
    _save(tmp_path, full_record)
    assert main(["reference", "--list", "--out", str(tmp_path)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("li2.eq2") and "fresh" in line and "4 CPU-s" in line
    monkeypatch.setattr(references, "claim_code_digest", lambda module: "0" * 16)
    assert main(["reference", "--list", "--out", str(tmp_path)]) == 0
    assert "STALE" in capsys.readouterr().out


def test_a_resumed_run_states_its_stored_points_and_the_estimate_counts_them(
        tmp_path, full_record, capsys, monkeypatch):
    from verify import estimates

    record, run = full_record
    points = {"computed": 3, "reused": 9, "reused_seconds": 3105.04}
    references.save(record, module="verify.claims.li2.eq2", run=run, cpu_seconds=40.0,
                    wall_seconds=50.0, load={"1min": 0.5}, made="2026-12-07", folder=tmp_path,
                    sweep_points=points)
    assert main(["reference", "--list", "--out", str(tmp_path)]) == 0
    assert "(+ 9 of 12 training points from the store, 3105 s when computed)" in \
        capsys.readouterr().out
    monkeypatch.setattr(references, "FOLDER", tmp_path)
    est = estimates._from_reference("li2.eq2", "full", "cpu")
    assert est.seconds == pytest.approx(50.0 + 3105.0, abs=0.1)
    assert "with its stored points" in est.source
    # nothing reused: nothing stated, nothing added
    references.save(record, module="verify.claims.li2.eq2", run=run, cpu_seconds=40.0,
                    wall_seconds=50.0, load={"1min": 0.5}, made="2026-12-07", folder=tmp_path,
                    sweep_points={"computed": 12, "reused": 0, "reused_seconds": 0.0})
    assert "sweep_points" not in json.loads((tmp_path / "li2.eq2.json").read_text())["provenance"]
    assert estimates._from_reference("li2.eq2", "full", "cpu").seconds == pytest.approx(50.0)


def test_the_sweep_tally_counts_computed_and_stored_points(tmp_path, monkeypatch):
    from verify import sweep

    monkeypatch.setenv("THEORY_VERIFY_STORE", str(tmp_path / "s.sqlite"))
    before = sweep.sweep_tally()
    pts = [{"x": 1.0}, {"x": 2.0}]
    sweep.stored_sweep(_double, pts, name="tally")
    sweep.stored_sweep(_double, pts + [{"x": 3.0}], name="tally")
    after = sweep.sweep_tally()
    assert after["computed"] - before["computed"] == 3
    assert after["reused"] - before["reused"] == 2
    assert after["reused_seconds"] >= before["reused_seconds"]


def _double(point):
    return {"y": 2 * point["x"]}

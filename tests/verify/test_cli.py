"""The command line: exit codes, one-line usage errors, the results JSON and its schema."""
import json
import os
import subprocess
import sys

import pytest

from tests.planted import gauss, gauss_check, gauss_off_by_one, make_claim, planted
from verify.cli import main
from verify.results import SCHEMA_VERSION

CLAIM_FIELDS = {
    "id", "aliases", "paper", "kind", "title", "source", "statement", "reading", "assumptions",
    "parameters", "negative_control", "fidelity", "seed", "device", "dtype", "verdict",
    "reason", "key_figure", "seconds", "inside_assumptions", "evidence", "derivations",
    "figures", "error"}
EVIDENCE_FIELDS = {"route", "quantity", "stated", "derived", "measured", "metric",
                   "discrepancy", "comparisons", "tolerance", "tolerance_why", "parameters",
                   "finite", "ok", "note"}
RUN_FIELDS = {"fidelity", "device", "dtype", "seed", "precision_flags", "versions", "git",
              "argv", "started", "finished"}


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_unknown_id_exits_2_with_one_line(tmp_path):
    proc = run_cli("check", "li2.nope", "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "li2.nope" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("args, names", [
    (["check", "--fidelity", "fast"], "--fidelity"),
    (["check", "--dtype", "float16"], "--dtype"),
    (["check", "--seed", "-3"], "--seed"),
    (["check", "--threads", "0"], "--threads"),
    (["show", "zz.nothing"], "zz.nothing"),
])
def test_bad_values_exit_2_naming_the_parameter(capsys, args, names):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert names in err and "\n" not in err


def test_bad_input_keeps_earlier_results(tmp_path, capsys):
    out = tmp_path / "results.json"
    out.write_text('{"earlier": true}')
    assert main(["check", "li2.eq2", "--seed", "x", "--json", str(out)]) == 2
    assert json.loads(out.read_text()) == {"earlier": True}


def test_cuda_without_cuda_is_a_usage_error(capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["check", "li2.eq2", "--device", "cuda"]) == 2
    assert "cuda" in capsys.readouterr().err


def test_strict_exits_1_when_a_claim_is_not_pass(tmp_path, capsys):
    with planted(make_claim("test.false", stated=gauss_off_by_one, control=gauss)):
        assert main(["check", "test.false", "--json", str(tmp_path / "a.json")]) == 0
        assert main(["check", "test.false", "--strict", "--json", str(tmp_path / "b.json")]) == 1
    line = capsys.readouterr().out.strip().splitlines()[-2]  # the last is the summary line
    assert line.startswith("test.false") and "fail" in line


def test_list_and_show(capsys):
    assert main(["list", "--json"]) == 0
    ids = {c["id"] for c in json.loads(capsys.readouterr().out)}
    assert "li2.eq2" in ids
    assert main(["show", "li2.d0"]) == 0
    assert "statement" in capsys.readouterr().out


def test_check_writes_json_with_every_field(tmp_path):
    out = tmp_path / "results.json"
    proc = run_cli("check", "li2.eq2", "--seed", "3", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # progress is quiet when stderr is not a terminal
    line = proc.stdout.strip().splitlines()[0]
    assert line.split()[:2] == ["li2.eq2", "pass"]
    record = json.loads(out.read_text())
    assert record["schema_version"] == SCHEMA_VERSION
    assert RUN_FIELDS <= set(record["run"])
    assert record["run"]["seed"] == 3 and record["run"]["dtype"] == "float64"
    assert record["run"]["precision_flags"]["cuda_matmul_allow_tf32"] is False
    assert record["summary"]["pass"] == 1
    (claim,) = record["claims"]
    assert CLAIM_FIELDS <= set(claim)
    assert claim["evidence"] and all(EVIDENCE_FIELDS <= set(e) for e in claim["evidence"])
    assert claim["negative_control"]["rejected"] is True
    assert claim["derivations"][0]["steps"]


def test_console_script_is_installed():
    proc = subprocess.run(["theory-verify", "list"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "li2.eq2" in proc.stdout


def test_internal_error_exits_3_with_one_line(monkeypatch, capsys):
    import verify.cli.commands

    def broken():
        raise RuntimeError("registry exploded")

    monkeypatch.setattr(verify.cli.commands.registry, "load_builtin_claims", broken)
    assert main(["list"]) == 3
    err = capsys.readouterr().err.strip()
    assert "internal error" in err and "\n" not in err


def test_every_builtin_claim_module_loads():
    from tests.conftest import LOAD_FAILURES

    assert LOAD_FAILURES == {}


def test_a_broken_claim_module_is_reported_and_the_rest_still_run(tmp_path, monkeypatch, capsys):
    import verify.cli.commands

    monkeypatch.setattr(verify.cli.commands.registry, "load_builtin_claims",
                        lambda: {"verify.claims.x.broken": "SyntaxError: invalid syntax"})
    assert main(["check", "li2.eq2", "--json", str(tmp_path / "r.json")]) == 0
    captured = capsys.readouterr()
    assert "verify.claims.x.broken" in captured.err and "li2.eq2" in captured.out


def test_jobs_give_the_records_a_serial_run_gives(tmp_path):
    """--jobs 2 runs claims in spawned workers; every draw is seeded by (seed, claim, stream),
    so the evidence must be identical to the serial run's, in the selection order."""
    runs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"r{jobs}.json"
        proc = run_cli("check", "li2.eq2", "li2.lemma2", "--seed", "5", "--jobs", jobs,
                       "--no-store", "--json", str(out))
        assert proc.returncode == 0, proc.stderr
        runs[jobs] = json.loads(out.read_text())["claims"]
    assert [c["id"] for c in runs["2"]] == ["li2.eq2", "li2.lemma2"]
    for serial, pooled in zip(runs["1"], runs["2"]):
        assert serial["verdict"] == pooled["verdict"]
        assert serial["evidence"] == pooled["evidence"]


def test_jobs_below_one_is_a_usage_error(tmp_path):
    proc = run_cli("check", "li2.eq2", "--jobs", "0", "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 2 and "--jobs" in proc.stderr


def test_check_restores_the_store_variable_it_routes_sweeps_with(tmp_path, monkeypatch):
    """check --store points sweeps inside claims at that store through the environment; an
    in-process caller of main() must get its own setting back afterwards."""
    monkeypatch.setenv("THEORY_VERIFY_STORE", "off")
    code = main(["check", "li2.lemma11", "--store", str(tmp_path / "s.sqlite"),
                 "--json", str(tmp_path / "r.json")])
    assert code == 0
    assert os.environ["THEORY_VERIFY_STORE"] == "off"


def test_check_force_recomputes_the_sweep_points_inside_a_claim(tmp_path, monkeypatch):
    """A claim that runs a sweep reuses its stored points on a second check; --force must
    recompute them as it recomputes the claim (stale points would otherwise survive it)."""
    from tests.verify.test_sweep import square_points
    from verify.sweep import ENV_FORCE, run_sweep

    reused: list[list[bool]] = []

    def check(run):
        report = run_sweep(square_points, [{"x": x} for x in range(3)], name="test.sweeping")
        reused.append([o.reused for o in report.outcomes])
        yield from gauss_check(run)

    monkeypatch.delenv(ENV_FORCE, raising=False)
    store = str(tmp_path / "s.sqlite")
    with planted(make_claim("test.sweeping", check=check)):
        assert main(["check", "test.sweeping", "--store", store,
                     "--json", str(tmp_path / "a.json")]) == 0
        assert reused == [[False] * 3, [True] * 3]     # the control run reused the check's
        assert main(["check", "test.sweeping", "--store", store, "--force",
                     "--json", str(tmp_path / "b.json")]) == 0
    assert reused[2:] == [[False] * 3, [False] * 3]
    assert ENV_FORCE not in os.environ


def test_a_reader_that_stops_early_is_not_an_error():
    """``theory-verify list | head -1``: the closed pipe ends the command quietly (exit 0),
    not with 'internal error: BrokenPipeError'."""
    import subprocess
    import sys
    done = subprocess.run(f"{sys.executable} -m verify list | head -1", shell=True,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.startswith("li2.") and "error" not in done.stderr, done.stderr


def test_importing_the_toolkit_makes_openmp_wait_passively_unless_the_user_chose():
    """Spinning OpenMP threads cost 7x the CPU on a busy machine (verify/__init__.py); the
    setting must precede torch's import, and a user's own value stays."""
    import subprocess
    import sys

    probe = "import os, verify, torch; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    assert subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, check=True).stdout.strip() == "PASSIVE"
    assert subprocess.run([sys.executable, "-c", probe], env={**env, "OMP_WAIT_POLICY": "ACTIVE"},
                          capture_output=True, text=True, check=True).stdout.strip() == "ACTIVE"

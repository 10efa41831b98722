"""The worked example (examples/deep_linear) run as a user would, from outside the repository,
through all three entry points; and the --module / --claims-module handling it relies on.

The three entry points run as subprocesses, started together (they are independent and mostly
wait on imports), from a temporary directory holding a copy of examples/.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verify import registry
from verify.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
IDS = ("arora2018.balance", "saxe2014.sigmoid")
CLAIMS = ["arora2018.*", "saxe2014.*"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(THEORY_VERIFY_STORE="off", PYTHONDONTWRITEBYTECODE="1")
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The three entry points, run concurrently: {name: (completed process, paths)}."""
    tmp = tmp_path_factory.mktemp("user")
    shutil.copytree(EXAMPLES, tmp / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    here = tmp / "examples"
    cli = shutil.which("theory-verify") or str(Path(sys.executable).parent / "theory-verify")
    commands = {
        # by name, from inside the copied examples/ (the current directory is on sys.path)
        "theory-verify": ([cli, "check", *CLAIMS, "--module", "deep_linear", "--json",
                           str(tmp / "tv.json"), "--report", str(tmp / "report"),
                           "--no-store"], here),
        # by path, from the folder above it
        "python -m verify": ([sys.executable, "-m", "verify", "check", *CLAIMS, "--module",
                              "examples/deep_linear", "--json", str(tmp / "pm.json"),
                              "--no-store"], tmp),
        # the pytest plugin; saxe2014.sigmoid listed as a known counterexample, so its pass
        # is reported as a failure with a reproduce line
        "pytest": ([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "--claims", CLAIMS[0], "--claims", CLAIMS[1], "--claims-only",
                    "--claims-module", "deep_linear",
                    "--claims-expect-fail", "saxe2014.sigmoid"], here),
    }
    procs = {name: subprocess.Popen(cmd, cwd=cwd, env=_env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name, (cmd, cwd) in commands.items()}
    out = {}
    for name, p in procs.items():
        stdout, stderr = p.communicate(timeout=240)
        out[name] = (p.returncode, stdout, stderr)
    return tmp, out


@pytest.mark.parametrize("entry, json_name", [("theory-verify", "tv.json"),
                                              ("python -m verify", "pm.json")])
def test_check_passes_both_claims_and_rejects_their_controls(runs, entry, json_name):
    tmp, out = runs
    rc, stdout, stderr = out[entry]
    assert rc == 0, stderr
    claims = {c["id"]: c for c in json.loads((tmp / json_name).read_text())["claims"]}
    assert set(claims) == set(IDS)
    for c in claims.values():
        assert c["verdict"] == "pass", (c["id"], c["reason"])
        assert c["negative_control"]["rejected"], c["id"]
        assert c["negative_control"]["verdict_of_variant"] == "fail"
        assert c["error"] is None
        assert {e["route"] for e in c["evidence"]} >= {"symbolic", "numeric", "rate"}
    for claim_id in IDS:
        assert claim_id in stdout


def test_report_renders_the_example(runs):
    tmp, _ = runs
    html = (tmp / "report" / "index.html").read_text()
    md = (tmp / "report" / "report.md").read_text()
    for claim_id in IDS:
        assert claim_id in html and claim_id in md
    assert "internal error" not in html and "Traceback" not in html
    # the report's reproduce line works when pasted where the check ran
    assert "--module deep_linear" in md and "--module deep_linear" in html


def test_pytest_plugin_runs_the_example_and_reproduce_line_names_the_module(runs):
    _, out = runs
    rc, stdout, stderr = out["pytest"]
    assert rc == 1, stdout + stderr  # only the deliberately mislabelled claim fails
    assert "1 failed, 1 passed" in stdout
    assert "saxe2014.sigmoid was expected to fail" in stdout
    lines = [ln for ln in stdout.splitlines() if ln.startswith("reproduce: ")]
    assert lines and all("--module deep_linear" in ln for ln in lines), stdout


# --- --module handling (in-process; the registry is restored after each test) ------------

USER_MODULE = textwrap.dedent('''
    import sympy as sp
    from verify import Claim, NegativeControl, register, symbolic_identity

    def check(run):
        n = sp.Symbol("n", positive=True)
        yield symbolic_identity("n + 0", stated=run.stated["f"](n), derived=n)

    register(Claim(id="{id}", paper="user", kind="equation", title="toy", source="tests",
                   statement="n", reading="as stated", parameters={{"quick": {{}}, "full": {{}}}},
                   stated={{"f": lambda n: n}}, check=check,
                   control=NegativeControl("off by one", {{"f": lambda n: n + 1}})))
''')


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """A project folder (the current directory) with a module, a package and a broken one."""
    (tmp_path / "mymod_ex.py").write_text(USER_MODULE.format(id="user.ex-mod"))
    (tmp_path / "mypkg_ex").mkdir()
    (tmp_path / "mypkg_ex" / "__init__.py").write_text(USER_MODULE.format(id="user.ex-pkg"))
    (tmp_path / "broken_ex.py").write_text("raise ValueError('planted\\nsecond line')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("THEORY_VERIFY_STORE", "off")
    before = {c.id for c in registry.all_claims()}
    yield tmp_path
    for claim in registry.all_claims():
        if claim.id not in before:
            registry.unregister(claim.id)
    for name in ("mymod_ex", "mypkg_ex", "broken_ex"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("spec, claim_id", [("mymod_ex", "user.ex-mod"),
                                            ("./mymod_ex.py", "user.ex-mod"),
                                            ("mypkg_ex", "user.ex-pkg"),
                                            ("mypkg_ex/", "user.ex-pkg")])
def test_module_by_name_from_cwd_or_by_path(user_dir, capsys, spec, claim_id):
    assert main(["list", "--module", spec]) == 0
    assert claim_id in capsys.readouterr().out


@pytest.mark.parametrize("spec, words", [("broken_ex", "ValueError: planted"),
                                         ("./broken_ex.py", "ValueError: planted"),
                                         ("no_such_module_ex", "ModuleNotFoundError"),
                                         ("./no_such_file.py", "no such .py file")])
def test_a_module_that_cannot_be_imported_is_a_usage_error(user_dir, capsys, spec, words):
    assert main(["list", "--module", spec]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if "warning" not in ln]
    assert len(err) == 1 and repr(spec) in err[0] and words in err[0], err


def test_stress_reproduce_line_repeats_every_module():
    from verify.stress import reproduce_line

    line = reproduce_line("user.x", {"n": 2, "seed": 3}, "float64", ["a.b", "./my mod.py"])
    words = shlex.split(line)
    assert words[words.index("--module") + 1] == "a.b"
    assert words[-2:] == ["--module", "./my mod.py"]
    assert reproduce_line("user.x", {"n": 2}, "float64") == "python -m verify check user.x " \
                                                            "--set n=2"


def _history_revision(capsys, store: Path) -> str:
    capsys.readouterr()
    assert main(["history", "user.ex-mod", "--module", "mymod_ex", "--store", str(store)]) == 0
    row = capsys.readouterr().out.splitlines()[-1]  # the newest result
    return row.split(" rev ")[1]


def test_history_shows_the_user_modules_revision_or_that_it_is_not_under_git(user_dir, capsys):
    store = user_dir / "s.sqlite"
    assert main(["check", "user.ex-mod", "--module", "mymod_ex", "--store", str(store),
                 "--json", str(user_dir / "r.json")]) == 0
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    outside = subprocess.run(["git", "-C", str(user_dir), "rev-parse"], capture_output=True)
    if outside.returncode == 0:
        pytest.skip("the temporary directory lies inside a git checkout")
    assert _history_revision(capsys, store).startswith("not under git")
    git = ["git", "-C", str(user_dir), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "mymod_ex.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "claims"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    from verify.cli import commands
    commands._folder_revision.cache_clear()
    assert main(["check", "user.ex-mod", "--module", "mymod_ex", "--store", str(store),
                 "--json", str(user_dir / "r.json"), "--force"]) == 0
    assert _history_revision(capsys, store).startswith(head[:10])

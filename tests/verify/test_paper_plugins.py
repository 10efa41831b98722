"""Papers as plug-ins (verify/papers.py): the built-in papers declare themselves through the
``theory_verify.papers`` entry points, a broken declaration is reported without hiding the
others, and the worked example, once installed, is found with no ``--module``."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from verify import Paper, registry
from verify import papers as plugins

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "deep_linear"


def test_each_builtin_paper_declares_the_claims_of_its_package():
    builtin = registry.papers(builtin_only=True)
    assert builtin, "the registry finds no built-in paper"
    claims = registry.builtin_claims()
    for paper in builtin:
        own = [c for c in claims if c.check.__module__.startswith(f"{paper.claims}.")]
        assert own, f"{paper.id}: no claim registered by {paper.claims}"
        assert {c.id.split(".")[0] for c in own} == {paper.id}
        assert {c.paper for c in own} == {paper.title}
    # every claim a built-in paper's package registers is counted as that paper's
    assert len(claims) == sum(c.check.__module__.startswith("verify.claims.")
                              for c in registry.all_claims())


def test_a_broken_declaration_is_reported_and_the_others_still_load(monkeypatch):
    builtin = registry.papers(builtin_only=True)[0]
    # a second declaration of a built-in paper's id, from another distribution
    monkeypatch.setattr(sys.modules[__name__], "IMPOSTOR",
                        Paper(id=builtin.id, title="an impostor", claims=__name__),
                        raising=False)
    planted = {"gone": "no_such_paper_module:PAPER",      # does not import
               "label": f"{builtin.claims}:PAPER",        # a title, not a Paper
               "renamed": f"{__name__}:IMPOSTOR",         # its id is not its name
               builtin.id: f"{__name__}:IMPOSTOR"}        # the id is taken
    own = plugins._entry_points()
    monkeypatch.setattr(plugins, "_entry_points", lambda: [  # the plug-in's read first
        ("plug-in", importlib.metadata.EntryPoint(name, value, plugins.GROUP))
        for name, value in planted.items()] + own)
    found, problems = plugins.discover()
    assert {id_: f.paper for id_, f in found.items()} == {p.id: p for p in registry.papers()}
    why = {where.split(" = ")[0].removeprefix(f"{plugins.GROUP}:"): text
           for where, text in problems.items()}
    assert set(why) == set(planted), problems
    assert why["gone"].startswith("ModuleNotFoundError")
    assert why["label"] == "declares a str, not a verify.Paper"
    assert why["renamed"] == f"declares the paper {builtin.id!r} under the name 'renamed'"
    assert why[builtin.id] == f"the id {builtin.id!r} is declared by {plugins.TOOLKIT}"


def _venv_beside_this_one(folder: Path) -> Path:
    """A bare virtual environment that also sees this interpreter's packages (the toolkit
    among them, pointing at this checkout), and its python. A .pth line adds them, which
    works whether this interpreter is a venv or not (``--system-site-packages`` would
    reach only the base interpreter's)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"], check=True,
                             capture_output=True, text=True).stdout.strip()
    parents = [*site.getsitepackages(),
               *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    Path(purelib, "_theory_verify_parent.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in parents) + "\n")
    return python


@pytest.mark.skipif(importlib.util.find_spec("setuptools") is None
                    or importlib.util.find_spec("pip") is None,
                    reason="installing the example without network needs pip and setuptools "
                           "here (--no-build-isolation)")
def test_an_installed_paper_is_found_without_module(tmp_path):
    source = tmp_path / "src" / "deep_linear"  # a copy: no build output lands in the checkout
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    python = _venv_beside_this_one(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(THEORY_VERIFY_STORE="off", PYTHONDONTWRITEBYTECODE="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps",
                          "--no-build-isolation", "-e", str(source)], env=env,
                         capture_output=True, text=True, timeout=240)
    assert pip.returncode == 0, pip.stderr
    where = tmp_path / "elsewhere"  # neither the example nor the checkout is importable here
    where.mkdir()
    proc = subprocess.run([str(python), "-m", "verify", "check", "arora2018.*", "--json",
                           str(where / "r.json")], cwd=where, env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    (claim,) = json.loads((where / "r.json").read_text())["claims"]
    assert (claim["id"], claim["verdict"]) == ("arora2018.balance", "pass"), claim["reason"]

"""The results store: reuse by key, history, concurrent writers, and a run killed mid-way."""
from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
import time

import pytest

from tests.planted import gauss_off_by_one, make_claim, planted
from verify.cli import main
from verify.store import ResultStore

KILL_CLAIMS = textwrap.dedent('''
    """Two claims: kill.a is quick; kill.b sleeps unless $KILL_FAST is set, and ends its
    process at once under $KILL_DIE."""
    import os
    import time

    from verify.claim import Claim, NegativeControl
    from verify.evidence import Route, Tolerance, compare
    from verify.registry import register


    def check(run):
        if run.claim_id == "kill.b" and os.environ.get("KILL_DIE"):
            os._exit(3)
        if run.claim_id == "kill.b" and not os.environ.get("KILL_FAST"):
            time.sleep(120)
        yield compare(Route.NUMERIC, "2 + 2", stated=run.stated["v"](), measured=4.0,
                      tolerance=Tolerance(0.0, "exact"))


    for name in ("kill.a", "kill.b"):
        register(Claim(id=name, paper="user", kind="lemma", title="toy", source="tests",
                       statement="2+2=4", reading="as stated",
                       parameters={"quick": {}, "full": {}}, stated={"v": lambda: 4.0},
                       check=check, control=NegativeControl("5", {"v": lambda: 5.0})))
''')


def _record(claim_id: str, verdict: str = "pass") -> dict:
    return {"id": claim_id, "fidelity": "quick", "seed": 0, "dtype": "float64",
            "device": "cpu", "parameters": {"n": 1}, "verdict": verdict, "seconds": 0.1,
            "reason": "", "key_figure": None,
            "evidence": [{"route": "numeric", "quantity": "q", "discrepancy": "inf",
                          "tolerance": 0.1, "ok": False}]}


def test_put_latest_history_and_evidence_rows(tmp_path):
    store = ResultStore(tmp_path / "s.sqlite")
    store.put("k1", _record("a.x", "fail"), revision="abc")
    store.put("k1", _record("a.x", "pass"), revision="abd")
    store.put("k2", _record("a.y"), revision=None)
    assert store.latest("k1").verdict == "pass" and store.latest("k3") is None
    assert [r.verdict for r in store.history("a.x")] == ["fail", "pass"]
    assert [r.id for r in store.latest_per_claim()] == ["a.x", "a.y"]
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        assert db.execute("SELECT COUNT(*), MAX(discrepancy) FROM evidence").fetchone() == (
            3, float("inf"))
    assert store.integrity() == "ok"


def test_check_reuses_a_stored_result_until_forced_or_changed(tmp_path, capsys):
    db = str(tmp_path / "s.sqlite")
    out = str(tmp_path / "r.json")
    with planted(make_claim("test.store", stated=gauss_off_by_one)):
        for extra in ([], [], ["--force"], ["--set", "n=3"]):
            assert main(["check", "test.store", "--store", db, "--json", out, *extra]) == 0
        lines = [line for line in capsys.readouterr().out.splitlines()
                 if line.startswith("test.store")]  # each run also ends with its summary
    assert ["(stored" in line for line in lines] == [False, True, False, False]
    assert all(" fail " in line for line in lines)
    assert len(list(ResultStore(db).history("test.store"))) == 3
    # the planted claim is gone: its history stays readable
    assert main(["history", "test.store", "--store", db]) == 0
    assert "3 stored results" in capsys.readouterr().out


def test_another_thread_count_is_another_key_and_is_recorded(tmp_path, capsys):
    """A reduction over more threads sums in another order: a result made with one thread
    count is not reused for another, and the results file says which it ran with."""
    import json

    db, out = str(tmp_path / "s.sqlite"), tmp_path / "r.json"
    with planted(make_claim("test.threads", stated=gauss_off_by_one)):
        for threads in ("1", "1", "2"):
            assert main(["check", "test.threads", "--store", db, "--json", str(out),
                         "--threads", threads]) == 0
            assert json.loads(out.read_text())["run"]["claim_threads"] == int(threads)
        lines = [line for line in capsys.readouterr().out.splitlines()
                 if line.startswith("test.threads")]
    assert ["(stored" in line for line in lines] == [False, True, False]


def test_a_claim_with_other_stated_forms_is_not_reused(tmp_path, capsys):
    db = str(tmp_path / "s.sqlite")
    for stated in (gauss_off_by_one, None):
        claim = make_claim("test.store") if stated is None else make_claim(
            "test.store", stated=stated)
        with planted(claim):
            main(["check", "test.store", "--store", db, "--json", str(tmp_path / "r.json")])
    first, second = [line for line in capsys.readouterr().out.splitlines()
                     if line.startswith("test.store")]
    assert " fail " in first and " pass " in second and "(stored" not in second


def test_a_file_that_is_not_a_database_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "notes.txt"
    bad.write_text("these are my notes, not a database" * 100)
    assert main(["check", "li2.eq2", "--store", str(bad), "--json",
                 str(tmp_path / "r.json")]) == 2
    assert "not a results database" in capsys.readouterr().err
    assert bad.read_text().startswith("these are my notes")


def _writer(path: str, tag: str, n: int) -> None:
    store = ResultStore(path)
    for i in range(n):
        store.put(f"{tag}{i}", _record(f"w.{tag}"), revision=None)


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "s.sqlite")
    ResultStore(path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, tag, 40)) for tag in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    store = ResultStore(path)
    assert store.integrity() == "ok"
    assert [len(list(store.history(f"w.{t}"))) for t in "ab"] == [40, 40]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def _children(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux /proc; none elsewhere)."""
    path = f"/proc/{pid}/task/{pid}/children"
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [int(c) for c in f.read().split()]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone: it only waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_killed_run_keeps_what_it_finished_and_a_rerun_continues(tmp_path):
    (tmp_path / "killclaims.py").write_text(KILL_CLAIMS)
    db = tmp_path / "s.sqlite"
    cmd = [sys.executable, "-m", "verify", "check", "kill.*", "--module", "killclaims",
           "--store", str(db), "--json", str(tmp_path / "r.json")]
    env = {**os.environ, "THEORY_VERIFY_STORE": ""}
    env.pop("KILL_FAST", None)
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if db.exists() and list(ResultStore(db).history("kill.a")):
            break
        time.sleep(0.2)
    time.sleep(0.5)  # kill.b is sleeping now
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    # its workers die with it (no orphan left waiting on its pipe)
    gone = time.monotonic() + 30
    while any(_alive(w) for w in workers) and time.monotonic() < gone:
        time.sleep(0.2)
    assert not [w for w in workers if _alive(w)], f"orphaned workers {workers}"
    store = ResultStore(db)
    assert store.integrity() == "ok"
    assert [r.verdict for r in store.history("kill.a")] == ["pass"]
    assert list(store.history("kill.b")) == []
    rerun = subprocess.run(cmd, cwd=tmp_path, env={**env, "KILL_FAST": "1"},
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    a_line, b_line, summary = rerun.stdout.splitlines()
    assert summary.startswith("2 claims: 2 pass")
    assert a_line.startswith("kill.a") and "(stored" in a_line
    assert b_line.startswith("kill.b") and " pass " in b_line and "(stored" not in b_line
    assert [r.verdict for r in ResultStore(db).history("kill.b")] == ["pass"]


def test_without_a_store_the_results_file_grows_claim_by_claim(tmp_path):
    """--no-store keeps nothing but the results file: it is written as each claim finishes,
    so a run that dies midway keeps the claims it finished (marked in progress)."""
    import json

    (tmp_path / "killclaims.py").write_text(KILL_CLAIMS)
    out = tmp_path / "r.json"
    # this checkout's code in the child, whichever checkout is installed
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "KILL_DIE": "1",
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "verify", "check", "kill.*", "--module",
                           "killclaims", "--no-store", "--jobs", "1", "--json", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3                       # kill.b ended the process
    record = json.loads(out.read_text())
    assert [c["id"] for c in record["claims"]] == ["kill.a"]
    assert record["claims"][0]["verdict"] == "pass"
    assert record["run"]["in_progress"] == "1 of 2 claims finished"


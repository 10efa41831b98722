"""A sweep killed midway (SIGKILL of the whole process, no chance to clean up) resumes where it
stopped: a rerun computes only the points that had not finished, each finished one is read
from the store (issue 28: long paper-size runs resume through the store)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

#: A point function that takes ``x`` and records each call in ``log``; the point ``hang``
#: sleeps so that the test can kill the sweep while it runs.
POINTS = '''
import json, time
from pathlib import Path

def slow_square(point):
    with open(point["log"], "a") as fh:
        fh.write(json.dumps(point["x"]) + "\\n")
    if point["x"] == point["hang"] and not Path(point["log"] + ".resume").exists():
        time.sleep(600)
    return {"y": point["x"] ** 2}
'''


def _done(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as con:
            return con.execute(
                "SELECT COUNT(*) FROM sweep_points WHERE status = 'ok'").fetchone()[0]
    except sqlite3.Error:   # the first transaction may not have created the table yet
        return 0


def test_a_killed_sweep_resumes_without_recomputing_a_finished_point(tmp_path):
    (tmp_path / "slowpoints.py").write_text(POINTS)
    log, db = tmp_path / "calls.log", tmp_path / "s.sqlite"
    points = [{"x": x, "hang": 4, "log": str(log)} for x in range(7)]
    (tmp_path / "points.json").write_text(json.dumps(points))
    cmd = [sys.executable, "-m", "verify", "sweep", "slowpoints:slow_square", "--name", "kill",
           "--points", "points.json", "--batch-size", "1", "--store", str(db),
           "--json", "out.json"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _done(db) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)   # x = 4 is sleeping now
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert _done(db) == 4
    calls_before = [json.loads(line) for line in log.read_text().split()]
    assert calls_before == [0, 1, 2, 3, 4]

    Path(str(log) + ".resume").touch()
    rerun = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    calls = [json.loads(line) for line in log.read_text().split()]
    assert calls[len(calls_before):] == [4, 5, 6]     # only the unfinished points ran again
    results = json.loads((tmp_path / "out.json").read_text())["points"]
    assert [o["result"]["y"] for o in results] == [x * x for x in range(7)]
    assert [o["reused"] for o in results] == [True] * 4 + [False] * 3

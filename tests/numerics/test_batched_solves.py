"""numerics.solves: batched solves give the one-thread numbers with several threads (issue 22).

The MKL race (numerics/solves.py) needs several intra-op threads and a batch of matrices of
order >= ~150; the routes run in a child process under a time limit, so a build on which a
route hangs fails this test instead of hanging the suite.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from numerics import solves

ROOT = Path(__file__).resolve().parents[2]
#: Several threads even on a machine with fewer cores: the race needs threads, not cores.
THREADS = 4
#: Order and batch: above the size where MKL's getrf threads (two of order 151 race, pytorch
#: issue 142815), and a batch of many small matrices.
SHAPES = ((3, 300), (64, 8))
#: Condition number of the test matrices (singular values in [1, KAPPA]).
KAPPA = 10.0

CHILD = f"""
import json, torch
from numerics import solves
from numerics.random import make_generator
from verify import arrays

def orthogonal(batch, n, g):
    return torch.linalg.qr(torch.randn(batch, n, n, generator=g, dtype=torch.float64))[0]

cases = []
for batch, n in {SHAPES!r}:
    g = make_generator(n)
    s = torch.linspace(1.0, {KAPPA!r}, n, dtype=torch.float64)
    Q, P = orthogonal(batch, n, g), orthogonal(batch, n, g)
    general = (Q * s) @ P.mT                  # singular values s: kappa = {KAPPA!r}
    spd = (Q * s) @ Q.mT
    B = torch.randn(batch, n, 3, generator=g, dtype=torch.float64)
    cases.append((general, spd, B))

routes = {{
    "solve": lambda A, S, B: solves.solve(A, B),
    "inv": lambda A, S, B: solves.inv(A),
    "arrays.inv": lambda A, S, B: arrays.inv(A),
    "solve_spd": lambda A, S, B: solves.solve_spd(S, B),
    "inv_spd": lambda A, S, B: solves.inv_spd(S),
}}

def run():
    return {{name: [f(*case) for case in cases] for name, f in routes.items()}}

torch.set_num_threads(1)
reference = run()
torch.set_num_threads({THREADS})
threaded = run()
out = {{name: [float((a - b).abs().max() / b.abs().max()) for a, b in
                zip(threaded[name], reference[name])] for name in routes}}
out["threads after"] = torch.get_num_threads()
print(json.dumps(out))
"""


def test_batched_routes_with_several_threads_give_the_one_thread_numbers():
    try:
        done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the batched solves with {THREADS} threads did not return in 300 s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "MKL ERROR" not in done.stdout + done.stderr, done.stdout[:2000]   # MKL: stdout
    differences = json.loads(done.stdout.splitlines()[-1])
    assert differences.pop("threads after") == THREADS
    # Both results are backward stable: each is within about n u kappa (relative) of the exact
    # solution, so they differ by at most twice that; a race gives O(1) or raises.
    n = max(n for _, n in SHAPES)
    tolerance = 2 * n * torch.finfo(torch.float64).eps * KAPPA
    for route, values in differences.items():
        assert max(values) <= tolerance, (route, values)


def test_a_matrix_that_is_not_positive_definite_is_named():
    A = torch.eye(3, dtype=torch.float64).repeat(2, 1, 1)
    A[1, 2, 2] = -1.0
    with pytest.raises(solves.NotPositiveDefinite,
                       match=r"ridge: 3 x 3 matrix \(batch element 1\) .* order 3"):
        solves.solve_spd(A, torch.ones(2, 3, 1, dtype=torch.float64), name="ridge")


def test_the_cholesky_and_lu_routes_agree_on_a_positive_definite_system():
    g = torch.Generator().manual_seed(0)
    F = torch.randn(5, 7, 4, generator=g, dtype=torch.float64)
    A = F @ F.mT + 0.5 * torch.eye(7, dtype=torch.float64)
    B = torch.randn(5, 7, 2, generator=g, dtype=torch.float64)
    # both routes are backward stable: each within about n u kappa of the solution
    kappa = float(torch.linalg.cond(A).max())
    tolerance = 2 * 7 * torch.finfo(torch.float64).eps * kappa
    x = solves.solve_spd(A, B)
    assert float((x - solves.solve(A, B)).abs().max() / x.abs().max()) <= tolerance
    assert float((solves.inv_spd(A) - solves.inv(A)).abs().max()
                 / solves.inv(A).abs().max()) <= tolerance

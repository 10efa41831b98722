r"""Linear solves that give the same numbers with any number of CPU threads.

* :func:`solve_spd`, :func:`inv_spd`: symmetric (Hermitian) positive definite systems, by
  Cholesky; a matrix that is not positive definite raises :class:`NotPositiveDefinite`
  naming it, the batch element and the failing leading minor;
* :func:`solve`, :func:`inv`: any invertible square system, by LU with partial pivoting
  (``torch.linalg.solve`` / ``inv``), run where the MKL race below cannot occur.

The race: on the CPU builds of torch with MKL (measured on torch 2.13.0+cpu, oneMKL 2024.2;
upstream pytorch issues 141358 and 142815), a *batched* LU factorisation with more than one
intra-op thread calls MKL's ``getrf`` from several threads at once. Two 300 x 300 float64
systems after ``torch.set_num_threads(2)`` print ``Intel oneMKL ERROR: Parameter 6 was incorrect
on entry to DLASWP`` and then ``solve``/``inv`` raise ("Pivots given to lu_solve must all be
greater or equal to 1"), ``lu_factor`` returns pivots of 0, and ``slogdet`` returns a wrong sign
and a log-determinant off by 12 without a word. One matrix at a time, or one thread, is
unaffected, and so are the batched Cholesky routines (``cholesky``, ``cholesky_solve``,
``cholesky_inverse``: they agree with the one-thread results to rounding). So a batched LU on
the CPU runs here with one intra-op thread, which was faster than a loop over the batch (whose
unbatched ``getrf`` calls each start MKL's own threads) in every measurement: five solves of
4 x 300 x 300 on 2 loaded cores took 0.08-0.33 s against 0.29-3.8 s.

>>> import torch
>>> A = torch.tensor([[4.0, 2.0], [2.0, 3.0]], dtype=torch.float64)
>>> solve_spd(A, torch.tensor([[2.0], [1.0]], dtype=torch.float64)).flatten().tolist()
[0.5, 0.0]
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


class NotPositiveDefinite(ValueError):
    """A matrix handed to a Cholesky route is not positive definite (to working precision)."""


def _lu_races(A: torch.Tensor) -> bool:
    """Whether ``torch.linalg`` would factor several matrices of ``A`` at once on MKL threads."""
    return (A.device.type == "cpu" and A.ndim > 2 and A.shape[:-2].numel() > 1
            and torch.get_num_threads() > 1)


@contextlib.contextmanager
def _one_thread(active: bool) -> Iterator[None]:
    if not active:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def solve(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """``X`` with ``A X = B`` for invertible square ``A`` ``(..., n, n)`` (LU with partial
    pivoting); ``B`` as for ``torch.linalg.solve``."""
    with _one_thread(_lu_races(A)):
        return torch.linalg.solve(A, B)


def inv(A: torch.Tensor) -> torch.Tensor:
    """The inverse of invertible square ``A`` ``(..., n, n)`` (LU with partial pivoting)."""
    with _one_thread(_lu_races(A)):
        return torch.linalg.inv(A)


def cholesky(A: torch.Tensor, *, name: str = "A") -> torch.Tensor:
    r"""The lower Cholesky factor :math:`L` of :math:`A = LL^H` ``(..., n, n)`` (its lower
    triangle is read). Raises :class:`NotPositiveDefinite` naming ``name`` when a matrix of the
    batch is not positive definite to working precision."""
    L, info = torch.linalg.cholesky_ex(A)
    if bool((info > 0).any()):
        index = tuple(torch.nonzero(info > 0)[0].tolist())
        where = f" (batch element {', '.join(map(str, index))})" if index else ""
        order = int(info[index])
        raise NotPositiveDefinite(
            f"{name}: {A.shape[-1]} x {A.shape[-1]} matrix{where} is not positive definite "
            f"(its leading minor of order {order} is not positive)")
    return L


def solve_spd(A: torch.Tensor, B: torch.Tensor, *, name: str = "A") -> torch.Tensor:
    """``X`` with ``A X = B`` for symmetric positive definite ``A`` ``(..., n, n)`` and
    ``B`` ``(..., n, k)``, by Cholesky."""
    return torch.cholesky_solve(B, cholesky(A, name=name))


def inv_spd(A: torch.Tensor, *, name: str = "A") -> torch.Tensor:
    """The inverse of symmetric positive definite ``A`` ``(..., n, n)``, by Cholesky."""
    return torch.cholesky_inverse(cholesky(A, name=name))

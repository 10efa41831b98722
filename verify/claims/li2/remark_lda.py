r"""li2.remark-lda: the remark that a linear :math:`\sigma` reduces :math:`\mathcal E` to LDA:
:math:`\mathcal E(\mathbf w)=\tfrac12\|\tilde Y^\top X\mathbf w\|^2` has only a global maximum,
the top eigenvector of :math:`X^\top\tilde Y\tilde Y^\top X`; with full group data
:math:`\tilde Y^\top X=0`, so LDA finds nothing.

Routes: the paper's statements (stated: :math:`\tilde Y^\top X=0` on full data, maximiser in
the top eigenspace, maximum :math:`\lambda_{\max}/2`); :math:`\tilde Y^\top X` and
:math:`\mathcal E` built exactly by sympy from the task's definition (inputs
:math:`[\mathbf e_{h_1};\mathbf e_{h_2}]`, label :math:`\mathbf e_{h_1h_2}`,
:math:`\tilde Y=P_1^\perp Y`) and the float64 eigendecomposition of
:math:`X^\top\tilde Y\tilde Y^\top X` on subsampled data (derived); torch float64
:math:`\tilde Y^\top X` and projected gradient ascent on :math:`\mathcal E` with linear
:math:`\sigma` from random starts (measured).
"""
from __future__ import annotations

from collections.abc import Iterator

import sympy as sp
import torch

from numerics.activations import activation
from numerics.li2.group_task import GroupTask, dense_inputs, group_energy, group_task
from numerics.li2.landscape import ascend_sphere
from numerics.li2.two_layer import center
from theory.groups.finite_group import FiniteGroup
from theory.li2.group_energy import exact_full_cross
from verify import (
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    NegativeControl,
    Route,
    Run,
    Tolerance,
    compare,
    register,
    roundoff,
    symbolic_identity,
    unit_roundoff,
)
from verify.claims.li2 import PAPER
from verify.claims.li2._groups import ONE_SMALL_GROUP, build_group

# --- the paper's statements -------------------------------------------------------------------

def stated_full_cross(M: int) -> sp.Matrix:
    r"""Remark: on full group data the class means of :math:`\mathbf x` coincide, so
    :math:`\tilde Y^\top X=0` (:math:`M\times2M`)."""
    return sp.zeros(M, 2 * M)


def uncentred_cross(M: int) -> sp.Matrix:
    r"""Planted error: the labels not centred, :math:`Y^\top X=\mathbf 1\mathbf 1^\top\ne0`."""
    return sp.ones(M, 2 * M)


def stated_top(values: torch.Tensor) -> torch.Tensor:
    r"""Remark: the maximiser is the eigenvector of the largest eigenvalue of
    :math:`X^\top\tilde Y\tilde Y^\top X` (``values`` ascending, as ``eigh`` returns them)."""
    return values[..., -1]


def bottom_eigenvalue(values: torch.Tensor) -> torch.Tensor:
    """Planted error: the eigenvector of the smallest eigenvalue."""
    return values[..., 0]


# --- derived: exact from the definition -------------------------------------------------------

def _full(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    stated = run.stated["full_cross"](G.order)
    M, n = G.order, G.order**2
    if M <= run.params["exact_max_order"]:
        cross, energy, d_ = exact_full_cross(G)
        run.derivation(d_)
        w = sp.Matrix(sp.symbols(f"w0:{2 * M}", real=True))
        yield symbolic_identity(
            f"{name}: Yt^T X on the full task (exact)", stated=stated, derived=cross,
            parameters={"group": name, "M": M, "abelian": G.is_abelian},
            note="derived: X, Y built from the pairs (h1, h2) -> h1 h2, Yt = P_1^perp Y")
        yield symbolic_identity(
            f"{name}: E(w) = 1/2 |Yt^T X w|^2 on the full task, as a polynomial in w (exact)",
            stated=sp.expand((w.T * stated.T * stated * w)[0, 0] / 2),
            derived=energy, parameters={"group": name},
            note="LDA finds nothing: E vanishes identically")
    task = group_task(G.table, device=run.device)
    X, Y = dense_inputs(task, run.dtype)
    measured = center(Y).T @ X
    # Each entry is a length-n sum of 0/1 terms minus (n_m/n) times another: 2n + 2
    # roundings of quantities at most n (Higham ch. 3).
    tol = roundoff(run.dtype, 2 * n + 2, f"sums of n={n} entries of size <= 1")
    yield compare(
        Route.NUMERIC, f"{name}: Yt^T X on the full task (float)",
        stated=torch.tensor([[float(x) for x in stated.row(i)] for i in range(M)],
                            dtype=run.dtype),
        measured=measured.cpu(), metric="absolute",
        tolerance=Tolerance(tol.value * n, tol.why + ", times the entry scale n"),
        parameters={"group": name, "n": n})
    w = torch.randn(run.params["starts"], 2 * M, generator=run.generator(f"full:{name}"),
                    dtype=torch.float64).to(run.device, run.dtype)
    w = w / w.norm(dim=-1, keepdim=True)
    e = group_energy(w, task, activation("linear"))
    # q = Yt^T X w has entries of size <= 2 |w|_inf n computed with 2n + 2 roundings, so
    # |q_m| <= (2n + 2) u 2n and E = |q|^2/2 <= M ((2n + 2) u 2n)^2 / 2.
    u = unit_roundoff(run.dtype)
    yield compare(
        Route.NUMERIC, f"{name}: E at random unit w on the full task, linear sigma",
        stated=[0.0] * len(e), measured=e.cpu(), metric="absolute",
        tolerance=Tolerance(M * ((2 * n + 2) * u * 2 * n) ** 2 / 2,
                            "M ((2n+2) u 2n)^2 / 2: rounding of q = Yt^T X w"),
        parameters={"group": name, "starts": len(e)})


# --- subsampled data --------------------------------------------------------------------------

def lda_matrix(task: GroupTask, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    r""":math:`\tilde Y^\top X` and :math:`S=X^\top\tilde Y\tilde Y^\top X`, so that
    :math:`\mathcal E=\tfrac12\mathbf w^\top S\mathbf w` for linear :math:`\sigma`."""
    X, Y = dense_inputs(task, dtype)
    cross = center(Y).T @ X
    return cross, cross.T @ cross


def eigenspace_fraction(w: torch.Tensor, values: torch.Tensor, vectors: torch.Tensor,
                        target: torch.Tensor, rtol: float) -> tuple[torch.Tensor, int, float]:
    r"""Fraction :math:`\|\Pi\mathbf w\|^2/\|\mathbf w\|^2` of each row of ``w`` in the
    eigenspace of the eigenvalues within ``rtol`` :math:`\lambda_{\max}` of ``target``; its
    dimension; and the gap :math:`\delta` from the eigenspace to the nearest other eigenvalue
    (``inf`` if none)."""
    scale = values.abs().max()
    inside = (values - target).abs() <= rtol * scale
    basis = vectors[:, inside]
    fraction = (w @ basis).square().sum(-1) / w.square().sum(-1)
    outside = values[~inside]
    gap = float((outside - target).abs().min()) if len(outside) else float("inf")
    return fraction, int(inside.sum()), gap


def _subsampled(run: Run, G: FiniteGroup, name: str) -> Iterator[Evidence]:
    p = run.params
    M = G.order
    u = unit_roundoff(run.dtype)
    norms, rows = {}, []
    stated_fraction, measured_fraction, stated_energy, measured_energy = [], [], [], []
    frac_tol = energy_tol = 0.0
    for ratio in p["ratios"]:
        task = group_task(G.table, ratio=ratio, generator=run.generator(f"{name}:{ratio}"),
                          device=run.device)
        cross, S = lda_matrix(task, run.dtype)
        norms[str(ratio)] = float(cross.norm())
        if ratio == 1:
            continue
        # A subsample of one class (Yt = 0), or made of whole classes (each class's M pairs
        # hit every h1 and every h2 once: the full data's class means), has Yt^T X = 0 up to
        # its rounding, (2n + 2) u times the entry scale n (as on the full task): E = 0 and
        # every w is a maximiser, nothing to ascend.
        if float(cross.abs().max()) <= (2 * task.n + 2) * u * task.n:
            rows.append({"p": ratio, "n": task.n, "Yt^T X": "0 to rounding: E = 0"})
            continue
        values, vectors = torch.linalg.eigh(S)
        lam_max = float(values[-1])
        target = run.stated["maximiser"](values)
        w0 = torch.randn(p["starts"], 2 * M, generator=run.generator(f"w0:{name}:{ratio}"),
                         dtype=torch.float64).to(run.device, run.dtype)
        # lr = 1/lambda_max: the step is then the power iteration on S near the maximum
        # (w + lr (S w - rho w) -> S w / lambda_max as rho -> lambda_max), stable since
        # lr |lambda| <= 1 < 2 for every tangent Hessian eigenvalue; gtol: 1e3 u lambda_max
        # above the rounding floor of S w (~ 2M u lambda_max).
        res = ascend_sphere(w0, task, activation("linear"), lr=1 / lam_max,
                            max_steps=p["max_steps"], gtol=1e3 * u * lam_max)
        run.assume(f"{name}, p={ratio}: ascent converged", bool(res.converged.all()),
                   "every start reached Riemannian gradient norm <= 1e3 u lambda_max",
                   f"{int(res.converged.sum())} of {len(res.converged)} in {res.steps} steps")
        # Eigenvalues within sqrt(u) lambda_max of the target count as one (repeated)
        # eigenvalue: eigh resolves them to ~ 2M u lambda_max.
        fraction, dim, gap = eigenspace_fraction(res.w, values, vectors, target, u**0.5)
        g = float(res.grad_norm.max())
        # Off-eigenspace power at Riemannian gradient norm g: g^2 >= (1 - f)(delta/2)^2 once
        # rho is within delta/2 of lambda_top, so 1 - f <= 4 (g/delta)^2; eigh's vectors are
        # accurate to ~ 2M u lambda_max/delta (Davis-Kahan), counted twice (|.|^2 fraction).
        frac_tol = max(frac_tol, 4 * (g / gap) ** 2 + 4 * 2 * M * u * lam_max / gap)
        # E* - E = (lambda_top - rho)/2 <= (1 - f) lambda_max / 2, relative <= 1 - f; plus
        # E's own rounding (2n + 2) u relative (Higham ch. 3).
        energy_tol = max(energy_tol, 4 * (g / gap) ** 2
                         + 4 * 2 * M * u * lam_max / gap + (2 * task.n + 2) * u)
        stated_fraction += [1.0] * len(fraction)
        measured_fraction += fraction.cpu().tolist()
        stated_energy += [float(target) / 2] * len(fraction)
        measured_energy += res.energy.cpu().tolist()
        rows.append({"p": ratio, "n": task.n, "lambda (top 3)": values[-3:].flip(0).tolist(),
                     "top eigenspace dimension": dim, "gap": gap, "steps": res.steps,
                     "largest grad norm": g,
                     "min fraction in stated eigenspace": float(fraction.min())})
    run.figure(f"{name}: |Yt^T X|_F over the ratio p of pairs kept", norms)
    run.figure(f"{name}: ascent on E with linear sigma, subsampled data", rows)
    if not stated_fraction:
        return
    yield compare(
        Route.NUMERIC, f"{name}: fraction of the ascent end point in the stated eigenspace",
        stated=stated_fraction, measured=measured_fraction, metric="absolute",
        tolerance=Tolerance(frac_tol, "4 (g/delta)^2 at gradient norm g, eigen-gap delta, "
                                      "plus eigh's 8 M u lambda_max/delta"),
        parameters={"group": name, "ratios": [r["p"] for r in rows], "starts": p["starts"]},
        note="every start: only a global maximum (a Rayleigh quotient on the sphere)")
    yield compare(
        Route.NUMERIC, f"{name}: max E = lambda/2 of the stated eigenvalue vs ascent",
        stated=stated_energy, measured=measured_energy, tolerance=Tolerance(
            energy_tol, "convergence 4 (g/delta)^2 + eigh 8 M u lambda_max/delta + "
                        "rounding (2n+2) u"),
        parameters={"group": name, "ratios": [r["p"] for r in rows]})


def check(run: Run) -> Iterator[Evidence]:
    for name in run.params["full_groups"]:
        yield from _full(run, build_group(name), name)
    for name in run.params["subsampled_groups"]:
        yield from _subsampled(run, build_group(name), name)


CLAIM = register(Claim(
    id="li2.remark-lda",
    paper=PAPER,
    kind="remark",
    title="Linear sigma: E is LDA (top eigenvector of X^T Yt Yt^T X); zero on full group data",
    source="Remark (linear sigma -> LDA), §4",
    statement=r"\sigma(x)=x:\ \mathcal E(\mathbf w)=\tfrac12\|\tilde Y^\top X\mathbf w\|^2"
              r"\text{ has only a global maximum, the top eigenvector of }"
              r"X^\top\tilde Y\tilde Y^\top X;\ \text{full group data: }\tilde Y^\top X=0",
    reading=r"Group task: inputs [\mathbf e_{h_1};\mathbf e_{h_2}], label \mathbf e_{h_1h_2}, "
            r"\tilde Y=P_1^\perp Y centred over the samples kept, \|\mathbf w\|=1. Full data: "
            r"all M^2 pairs (exact for small groups, abelian and not; float64 for all). "
            r"Subsampled: round(pM^2) pairs drawn without replacement, p<1. 'Top "
            r"eigenvector' is read as the top eigenspace when \lambda_{\max} is repeated "
            r"(within \sqrt u\,\lambda_{\max}); the maximum value is \lambda_{\max}/2. 'Only "
            r"a global maximum' is checked by every random start ending in that eigenspace.",
    parameters={
        "quick": {"full_groups": ("Z3", "Z4", "Z2xZ2", "S3", "Z7", "D4"),
                  "subsampled_groups": ("Z7", "S3"), "ratios": (0.3, 0.5, 0.7, 0.9, 1.0),
                  "starts": 8, "max_steps": 20000, "exact_max_order": 6},
        "full": {"full_groups": ("Z3", "Z4", "Z2xZ2", "S3", "Z7", "D4", "Q8", "A4", "Z23",
                                 "S4"),
                 "subsampled_groups": ("Z7", "Z11", "S3", "D4", "A4"),
                 "ratios": (0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.95, 1.0), "starts": 32,
                 "max_steps": 50000, "exact_max_order": 8},
    },
    stated={"full_cross": stated_full_cross, "maximiser": stated_top},
    check=check,
    control=NegativeControl("uncentred labels (Y^T X = 11^T on full data) and the bottom "
                            "eigenvector as the maximiser",
                            {"full_cross": uncentred_cross, "maximiser": bottom_eigenvalue}),
    assumptions=(
        Assumption("ratios in (0, 1]", "subsampling ratios p must lie in (0, 1]",
                   lambda p: all(0 < r <= 1 for r in p["ratios"])),
    ),
    # The remark assumes nothing beyond linear sigma (the claim itself) and p in (0, 1] (the
    # task's domain), so the space stays inside: groups of every irrep type, training ratios
    # from 0.4 (round(p M^2) > M keeps two classes for M >= 3) to full data.
    space={"full_groups": ONE_SMALL_GROUP, "subsampled_groups": ONE_SMALL_GROUP,
           "ratios": Choice(((0.4,), (0.5, 1.0), (0.7,), (0.9,), (0.4, 0.6, 0.8, 0.95))),
           "seed": SEED},
))

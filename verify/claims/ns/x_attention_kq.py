r"""ns.x.attention-kq: reviewer question 12, the key-query product :math:`W = W_QW_K^\top` of
an attention layer as a reparameterisation (verify/claims/ns/SOURCES.md §4.18, §7, §5.3).

Routes. Stated (the claim's reading of what Never Saddle's theory predicts for it): the balance
:math:`Q^\top Q - K^\top K` (:math:`Q = W_Q`, :math:`K = W_K`) is conserved by gradient flow;
the origin is a saddle whose Hessian has the eigenvalues :math:`\pm\sigma_j(\nabla f(0))`,
:math:`r` times each; sign descent conserves the paper's balance of power :math:`q = 1`,
:math:`|u_c| - |v_c|`, where the factors are diagonal; a general product is not a diagonal
(commuting) reparameterisation. Derived (:mod:`theory.ns.attention_kq`): the flow by the chain
rule of an undefined :math:`f`, the stated balance's rate along it, one GD step's exact change,
the Hessian's characteristic polynomial at 0, the Lie brackets of the entry fields, the power
from :func:`theory.ns.reparam_balance.derive_balance_exponent`. Measured
(:mod:`numerics.ns.attention_kq`, float64): softmax attention trained on a planted bilinear
form, GD and sign descent on step-halving ladders, the autograd Hessian at 0, escape from
:math:`Q, K` of norm :math:`a` (seeds, 95% t-intervals).
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import sympy as sp
import torch
from scipy import stats

from numerics.integrators import integrate
from numerics.ns.attention_kq import (
    AttentionTasks,
    KeyQueryFlow,
    autograd_saddle,
    column_balance,
    initial_factors,
    make_tasks,
    product,
)
from theory.ns.attention_kq import (
    ETA,
    LAM,
    derive_brackets,
    derive_gd_drift,
    derive_gram_rates,
    derive_parameter_flow,
    derive_saddle,
    derive_sign_rates,
)
from theory.ns.reparam_balance import Q as Q_EXP
from theory.ns.reparam_balance import derive_balance_exponent
from verify import (
    LEVEL,
    SEED,
    Assumption,
    Choice,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Reading,
    Route,
    Run,
    Tolerance,
    at_least,
    compare,
    ladder,
    ladder_compare,
    ladder_tolerance,
    level_errors,
    order_evidence,
    register,
    roundoff_floors,
    symbolic_identity,
    unit_roundoff,
)
from verify.arrays import transpose
from verify.claims.ns import PAPER

#: An exact gradient with exact singular values (3, 1) for the symbolic spectrum item.
G_EXACT = sp.Matrix([[2, 1], [1, 2]])
#: A point where the sign flow moves both balances (found by hand: d = 2, r = 1).
WITNESS = (sp.Matrix([[1], [1]]), sp.Matrix([[1], [-1]]), sp.Matrix([[1, 0], [1, 0]]))


def stated_balance(Q, K):
    r"""The balance :math:`Q^\top Q - K^\top K` (``r x r``) that gradient flow conserves."""
    return transpose(Q) @ Q - transpose(K) @ K


def swapped_balance(Q, K):
    r"""Planted error: :math:`QQ^\top - KK^\top` (``d x d``), the transposes swapped."""
    return Q @ transpose(Q) - K @ transpose(K)


def stated_spectrum(sigma, r):
    r"""Hessian eigenvalues at :math:`Q = K = 0`: :math:`\pm\sigma_j` of :math:`\nabla f(0)`,
    ``r`` times each (a list; ``sigma`` a sequence)."""
    return [s * sign for s in sigma for sign in (-1, 1) for _ in range(r)]


def stated_sign_power(q):
    r"""The power of Never Saddle's balance :math:`|u|^q - |v|^q` (the toolkit's reading of
    Lemma 4.4, ``ns.lemma4.4``), used for sign descent (:math:`q = 1`) on diagonal factors."""
    return q


def stated_noncommuting(d):
    r"""The reading's "a general product is not diagonal": exactly the pairs of entries of
    :math:`W` that share a row or a column have non-commuting fields, :math:`d^2(d-1)`."""
    return d**2 * (d - 1)


def _t_interval(values: np.ndarray) -> list[float]:
    """The 95% Student-t interval of the mean over seeds."""
    half = stats.t.ppf(0.5 + LEVEL / 2, df=values.size - 1) * values.std(ddof=1) \
        / math.sqrt(values.size)
    return [float(values.mean() - half), float(values.mean() + half)]


# --- symbolic ---------------------------------------------------------------------------------

def _symbolic(run: Run) -> Iterator[Evidence]:
    d = run.params["symbolic_d"]
    balance = run.stated["balance"]
    flow = run.derivation(derive_parameter_flow(d, d)).result
    eps = sp.Symbol("epsilon")
    along = balance(flow.Q + eps * flow.Q_dot, flow.K + eps * flow.K_dot)
    rate = sp.diff(along, eps).subs(eps, 0).expand()
    yield symbolic_identity(f"d/dt of the stated balance along gradient flow of f(Q K^T), any f, "
                            f"d = r = {d}", stated=rate,
                            derived=run.derivation(derive_gram_rates(d, d)).result)
    drift = run.derivation(derive_gd_drift(d, d))
    step = (balance(flow.Q + ETA * flow.Q_dot, flow.K + ETA * flow.K_dot)
            - balance(flow.Q, flow.K)).expand()
    yield symbolic_identity("one GD step of size eta: change of the stated balance (derived: "
                            "eta^2 (K^T G^T G K - Q^T G G^T Q), second order)",
                            stated=step, derived=drift.result)
    saddle = run.derivation(derive_saddle(d, run.params["symbolic_r"])).result
    yield symbolic_identity("gradient of f(Q K^T) at Q = K = 0", stated=sp.zeros(*saddle.gradient
                                                                                 .shape),
                            derived=saddle.gradient)
    G = saddle.hessian.free_symbols
    at = {s: G_EXACT[int(s.name[1]) - 1, int(s.name[2]) - 1] for s in G}
    sigma = [sp.Integer(3), sp.Integer(1)]
    stated_poly = sp.prod([LAM - e for e in run.stated["spectrum"](sigma,
                                                                   run.params["symbolic_r"])])
    yield symbolic_identity(f"characteristic polynomial of the Hessian at 0, grad f(0) = "
                            f"[[2, 1], [1, 2]] (singular values 3, 1), r = "
                            f"{run.params['symbolic_r']}",
                            stated=sp.expand(stated_poly),
                            derived=sp.expand(saddle.charpoly.subs(at)))
    run.figure("Hessian at 0, any grad f(0) = G: tr H and tr H^2 (= 2 r ||G||_F^2 > 0 for "
               "G != 0 with a symmetric spectrum: indefinite)",
               {"tr H": str(saddle.trace), "tr H^2": str(saddle.trace_square)})
    r_sign = run.derivation(derive_balance_exponent(2)).result.r
    yield symbolic_identity("conserved power of |u_c|^r - |v_c|^r on diagonal factors "
                            "(Never Saddle's x = u o v, g = G_cc), at q = 1 (sign flow)",
                            stated=sp.sympify(run.stated["sign_power"](sp.Integer(1))),
                            derived=r_sign.subs(Q_EXP, 1))
    diagonal = run.derivation(derive_brackets(d + 1, d + 1, diagonal=True)).result
    yield symbolic_identity(f"Lie brackets of the entry fields, diagonal factors (d = {d + 1}): "
                            f"non-commuting pairs (0: commuting, a mirror flow; SOURCES §5.3)",
                            stated=sp.Integer(0), derived=sp.Integer(len(diagonal.noncommuting)))
    for dd, r in ((d, d), (d + 1, 1)):
        full = run.derivation(derive_brackets(dd, r)).result
        yield symbolic_identity(f"Lie brackets of the entry fields of W = Q K^T, d = {dd}, "
                                f"r = {r}: non-commuting pairs (of {len(full.brackets)})",
                                stated=sp.sympify(run.stated["noncommuting"](dd)),
                                derived=sp.Integer(len(full.noncommuting)))
    witness = run.derivation(derive_sign_rates(*WITNESS)).result
    run.figure("sign flow at Q = (1, 1)^T, K = (1, -1)^T, grad f = [[1, 0], [1, 0]]: rates of "
               "Q^T Q - K^T K and of ||q||_1 - ||k||_1 (nonzero: neither is conserved)",
               {"balance": str(witness.balance), "column l1": str(witness.column_l1)})


# --- simulations ------------------------------------------------------------------------------

def _seeds(run: Run) -> list[int]:
    """One task and one start per seed, drawn from the run's seed."""
    base = run.seed_for("attention")
    return [base + s for s in range(run.params["seeds"])]


def _tasks(run: Run) -> AttentionTasks:
    return run.memo("tasks", lambda: make_tasks(_seeds(run), **run.params["task"],
                                                dtype=run.dtype))


def _ladder(run: Run, name: str, q: float, *, diagonal: bool = False) -> list[torch.Tensor]:
    r"""Euler (GD for q = 2, sign descent for q = 1) from :math:`\|Q\| = \|K\| =`
    ``start_scale`` to time ``T`` at ``steps * 2^k`` steps; the factor records per level."""
    p = run.params[name]
    d = run.params["task"]["d"]
    r = d if diagonal else run.params["r"]

    def simulate() -> list[torch.Tensor]:
        tasks = _tasks(run)
        y0 = initial_factors(_seeds(run), d=d, r=r,
                             scale=p["start_scale"], diagonal=diagonal,
                             dtype=run.dtype).to(run.device)
        flow = KeyQueryFlow(tasks, q, diagonal=diagonal)
        return ladder(lambda n, every: integrate(flow, y0, dt=p["T"] / n, steps=n,
                                                 method="euler", record_every=every).values,
                      p["steps"], p["levels"])

    # the stated forms do not enter the runs: the control and the readings reuse them
    return run.memo(f"{name} ladder", simulate, key=diagonal)


def _trained(run: Run, name: str, values: torch.Tensor) -> None:
    tasks = _tasks(run)
    ratio = tasks.loss(product(values[-1])) / tasks.loss(product(values[0]))
    run.ran(f"{name}: the loss fell on every seed", bool((ratio < 1).all()),
            f"final / initial loss per seed: {[round(float(x), 3) for x in ratio]}")


def _gd_balance(run: Run) -> Iterator[Evidence]:
    p = run.params["gd"]
    values = _ladder(run, "gd", 2.0)
    _trained(run, "GD ladder", values[-1])
    Bs = [run.stated["balance"](v[..., 0, :, :], v[..., 1, :, :]) for v in values]
    finest = p["steps"] * 2 ** (p["levels"] - 1)
    tol = ladder_tolerance(Bs, dtype=run.dtype, steps=finest, scale=float(Bs[-1].abs().max()),
                           what="Euler (GD) ladder of the balance")
    params = {"lr": [p["T"] / (p["steps"] * 2**k) for k in range(p["levels"])], "T": p["T"],
              "seeds": run.params["seeds"], "d": run.params["task"]["d"], "r": run.params["r"]}
    yield ladder_compare("GD: the balance along training vs its value at t = 0 (finest lr)",
                         stated=Bs[-1][:1].expand_as(Bs[-1]), measured=Bs[-1], tolerance=tol,
                         parameters=params)
    errors = level_errors(Bs, lambda B: B[:1], (0, 2, 3))
    floors = roundoff_floors(run.dtype, p["steps"], p["levels"], float(Bs[-1].abs().max()))
    yield order_evidence("GD: order in lr of the balance's drift over [0, T] (1: GD is Euler on "
                         "a flow that conserves it)", errors, nominal_order=1, floors=floors,
                         parameters=params)


def _sign_drift(run: Run) -> Iterator[Evidence]:
    p = run.params["sign"]
    values = _ladder(run, "sign", 1.0)
    _trained(run, "sign-descent ladder", values[-1])
    finest = p["steps"] * 2 ** (p["levels"] - 1)
    power = float(run.stated["sign_power"](1.0))
    quantities = {
        "the balance Q^T Q - K^T K (Frobenius)":
            [run.stated["balance"](v[..., 0, :, :], v[..., 1, :, :]) for v in values],
        f"the column balance ||q_c||_{power:g}^{power:g} - ||k_c||_{power:g}^{power:g} "
        f"(the paper's sign-descent balance carried to the product)":
            [column_balance(v, power) for v in values]}
    drifts = {}
    for what, Bs in quantities.items():
        tol = ladder_tolerance(Bs, dtype=run.dtype, steps=finest,
                               scale=float(Bs[-1].abs().max()),
                               what=f"Euler (sign descent) ladder of {what}")
        moved = (Bs[-1][-1] - Bs[-1][0]).flatten(1).norm(dim=1)
        drifts[what] = {"per seed": moved.tolist(), "95% interval": _t_interval(moved.numpy())}
        yield at_least(Route.NUMERIC, f"sign descent on the full product moves {what}: "
                       f"|B(T) - B(0)| at the finest lr, smallest over seeds, against the step "
                       f"ladder's error", measured=float(moved.min()), bound=tol.value,
                       tolerance=Tolerance(0.0, "a drift within the ladder's error is not "
                                                "resolved; the bound is that error: " + tol.why),
                       parameters={"T": p["T"], "lr": p["T"] / finest, **drifts[what]})
    run.figure("sign descent, full product: drift |B(T) - B(0)| per seed and its 95% interval",
               drifts)


def _sign_diagonal(run: Run) -> Iterator[Evidence]:
    """The paper's balance under sign descent, step by step, on diagonal factors (printed
    reading) or on the full product (reading B): exact on steps without a zero crossing."""
    scope = run.params["sign_balance_scope"]
    values = _ladder(run, "sign", 1.0, diagonal=scope == "diagonal")[-1]
    power = float(run.stated["sign_power"](1.0))
    C = column_balance(values, power)
    if scope == "diagonal":
        flips = (torch.sign(values[1:]) != torch.sign(values[:-1])).flatten(2).any(-1)
        quiet = ~flips[..., None].expand(-1, -1, C.shape[-1])
    else:
        quiet = torch.ones_like(C[1:], dtype=torch.bool)
    residual = (C[1:] - C[:-1])[quiet].abs()
    scale = float(values.abs().max())
    yield compare(Route.NUMERIC, f"sign descent ({scope} factors): per-step change of the "
                  f"balance sum_a |Q_ac|^r - sum_a |K_ac|^r, r = {power:g}, on steps where no "
                  f"factor entry changes sign", derived=torch.zeros(()),
                  measured=residual.max() if residual.numel() else torch.zeros(()),
                  metric="absolute",
                  tolerance=Tolerance(8 * unit_roundoff(run.dtype) * scale * values.shape[-2],
                                      "one rounding of each |entry| per step, summed over a "
                                      "column of d entries: 8 u d max|entry|"),
                  parameters={"steps counted": int(quiet.sum()), "lr": run.params["sign"]["T"]
                              / (run.params["sign"]["steps"] * 2 ** (run.params["sign"]["levels"]
                                                                     - 1))})


def _saddle(run: Run) -> Iterator[Evidence]:
    tasks = _tasks(run)
    r = run.params["r"]
    G, spectra = run.memo("autograd saddle", lambda: autograd_saddle(tasks, r))
    sigma = torch.linalg.svdvals(G)
    stated = torch.stack([torch.sort(torch.stack(run.stated["spectrum"](s, r)))[0]
                          for s in sigma])
    size, (N, n) = spectra.shape[-1], tasks.X.shape[1:3]
    # Weyl: |d lambda| <= ||dH||_2 <= size max|dH_ij|; an entry is a sum of N n^2 products of
    # order max sigma (autograd's and svdvals' roundoff alike), each rounded a few times.
    value = 8 * size * N * n * n * unit_roundoff(run.dtype) * float(sigma.max())
    yield compare(Route.NUMERIC, f"Hessian eigenvalues of f(Q K^T) at Q = K = 0 (autograd) vs "
                  f"+-sigma_j(grad f(0)) x r, r = {r}", stated=stated, measured=spectra,
                  metric="absolute",
                  tolerance=Tolerance(value, "Weyl (symmetric eigenvalues move by at most "
                                             "||dH||_2) with entrywise roundoff: 8 (2dr) N n^2 "
                                             "u max sigma"),
                  parameters={"sigma": sigma.tolist(), "seeds": run.params["seeds"]})
    run.figure("smallest Hessian eigenvalue at 0 per seed (negative: a strict saddle)",
               spectra[:, 0].tolist())


def _escape(run: Run) -> Iterator[Evidence]:
    p = run.params["escape"]
    seeds = _seeds(run)
    d, r = run.params["task"]["d"], run.params["r"]

    def simulate() -> dict[str, torch.Tensor]:
        tasks = _tasks(run).tiled(len(p["scales"]))
        y0 = torch.cat([initial_factors(seeds, d=d, r=r, scale=a, dtype=run.dtype)
                        for a in p["scales"]]).to(run.device)
        out = {}
        for name, q in (("gd", 2.0), ("sign", 1.0)):
            values = integrate(KeyQueryFlow(tasks, q), y0, dt=p[f"{name}_lr"],
                               steps=p["budget"], method="euler").values
            out[name] = tasks.loss(product(values))
        return out

    losses = run.memo("escape", simulate)
    table, fractions = {}, []
    for name, L in losses.items():
        below = L <= p["fraction"] * L[:1]
        escaped = below.any(0)
        first = torch.where(escaped, below.float().argmax(0).to(L.dtype),
                            torch.full_like(L[0], math.nan)) * p[f"{name}_lr"]
        for k, a in enumerate(p["scales"]):
            t = first[k * len(seeds):(k + 1) * len(seeds)].numpy()
            table[f"{name}, a={a:g}"] = {"escape times": t.tolist(),
                                         "95% interval": _t_interval(t)}
        fractions.append(float(escaped.double().mean()))
    run.ran("escape runs stayed finite", bool(all(torch.isfinite(L).all()
                                                  for L in losses.values())))
    run.figure(f"escape time t = steps x lr to {p['fraction']} of the initial loss, per seed",
               table)
    yield at_least(Route.NUMERIC, f"GD and sign descent escape the saddle from every start "
                   f"||Q|| = ||K|| = a in {p['scales']}: smallest fraction of seeds whose loss "
                   f"reaches {p['fraction']} of its initial value within {p['budget']} steps",
                   measured=min(fractions), bound=1.0,
                   tolerance=Tolerance(0.0, "a count: every seed must escape"),
                   parameters={"gd lr": p["gd_lr"], "sign lr": p["sign_lr"], **table})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    yield from _gd_balance(run)
    yield from _sign_drift(run)
    yield from _sign_diagonal(run)
    yield from _saddle(run)
    yield from _escape(run)


QUICK: dict[str, Any] = {
    "symbolic_d": 2, "symbolic_r": 2, "seeds": 5, "r": 2, "sign_balance_scope": "diagonal",
    "task": {"N": 8, "n": 6, "d": 4, "singular": [4.0, 3.0]},
    "gd": {"start_scale": 1.0, "T": 8.0, "steps": 40, "levels": 3},
    "sign": {"start_scale": 1.0, "T": 0.5, "steps": 25, "levels": 3},
    "escape": {"scales": [1e-2, 1e-4], "gd_lr": 0.5, "sign_lr": 0.02, "budget": 200,
               "fraction": 0.5},
}

CLAIM = register(Claim(
    id="ns.x.attention-kq",
    paper=PAPER,
    kind="proposition",
    title="The key-query product W_Q W_K^T as a reparameterisation: balance, saddle, mirror form",
    source="reviewer question 12 (reviews 3, 4); SOURCES §4.18, §7, §5.3",
    statement=r"\text{(reviews 3, 4) How relevant is the diagonal model }x=\prod_iw_i\text{ to "
              r"attention, whose logits }x_i^\top W_QW_K^\top x_j\text{ multiply two matrices?}",
    reading=r"Never Saddle's theory carried to F(Q,K)=f(QK^\top), Q=W_Q, K=W_K\in\mathbb R^{d"
            r"\times r}: (i) gradient flow conserves Q^\top Q-K^\top K (r\times r) for every f; "
            r"GD (Euler) moves it by \eta^2(K^\top G^\top GK-Q^\top GG^\top Q) per step, so its "
            r"drift over [0,T] is O(\eta); (ii) Q=K=0 is a critical point with Hessian "
            r"eigenvalues \pm\sigma_j(\nabla f(0)), r times each: a strict saddle whenever "
            r"\nabla f(0)\ne0; (iii) the steepest-mirror form (Thm. 4.6) needs a diagonal "
            r"reparameterisation: it applies to Q=\mathrm{diag}(u), K=\mathrm{diag}(v) "
            r"(x=u\odot v, g=\mathrm{diag}\,\nabla f), where sign descent keeps the paper's "
            r"balance |u_c|-|v_c| (power q=1) exactly between zero crossings; a general product "
            r"is not a diagonal reparameterisation: the fields \nabla W_{ab} of two entries "
            r"sharing a row or a column do not commute (d^2(d-1) pairs), so by Li et al. 2022 GF "
            r"is not a mirror flow in W for all starts, and under sign descent neither "
            r"Q^\top Q-K^\top K nor \|q_c\|_1-\|k_c\|_1 is conserved. Measured on softmax "
            r"attention over N sequences of n tokens x\sim N(0,I_d/d), target pattern "
            r"\mathrm{softmax}(x_i^\top W^\star x_j), W^\star=d\,U\mathrm{diag}(4,3)V^\top, loss "
            r"the mean KL; float64, full batch, 5 seeds.",
    parameters={"quick": QUICK,
                "full": {**QUICK, "seeds": 10, "symbolic_d": 2, "symbolic_r": 3,
                         "task": {"N": 32, "n": 8, "d": 8, "singular": [4.0, 3.0, 2.0]},
                         "r": 4,
                         "gd": {**QUICK["gd"], "levels": 4},
                         "sign": {**QUICK["sign"], "levels": 4},
                         # A strict saddle is left in a time that grows like ln(1/a): at
                         # full, GD took t = 68-92 from a = 1e-2 and 112-143 from 1e-4 (10
                         # seeds) and 156-201 from 1e-6, where 400 steps (t = 200) cut the
                         # slowest seed off. 1200 steps leave 3x the longest.
                         "escape": {**QUICK["escape"], "scales": [1e-2, 1e-4, 1e-6],
                                    "budget": 1200}}},
    stated={"balance": stated_balance, "spectrum": stated_spectrum,
            "sign_power": stated_sign_power, "noncommuting": stated_noncommuting},
    check=check,
    control=NegativeControl("transposes swapped: Q Q^T - K K^T", {"balance": swapped_balance}),
    equivalent_mutants={"spectrum:sign": "the stated spectrum is symmetric (+-sigma_j): a sign "
                                         "flip permutes it, and it is compared sorted"},
    readings=(Reading("B (the diagonal model taken literally for the full product)",
                      r"sign descent on the full W_QW_K^\top keeps the paper's balance "
                      r"\|q_c\|_1-\|k_c\|_1 step by step, as it does for u\odot v",
                      parameters={"sign_balance_scope": "full"}, compares_only=True),),
    assumptions=(Assumption("head size", "r <= d: a key-query head no wider than the model",
                            lambda p: p["r"] <= p["task"]["d"]),
                 Assumption("seeds", "at least 3 seeds, so a t-interval exists",
                            lambda p: p["seeds"] >= 3)),
    space={"r": IntRange(1, 4), "seeds": IntRange(3, 6),
           "task.d": Choice((4, 5)),
           "gd.T": LogUniform(2.0, 8.0),
           "sign.T": LogUniform(0.2, 0.5),
           "escape.gd_lr": LogUniform(0.2, 0.5),
           "seed": SEED},
))

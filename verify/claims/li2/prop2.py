r"""li2.prop2 (alias li2.eq55): Proposition 2 and Eq. 55, the small-time expansion of
:math:`G_{\tilde F}` under (A1)-(A2), :math:`G_{\tilde F}(t) = \tilde YV_0^\top +
t\tilde Y\tilde Y^\top\tilde F + O(t\alpha + t^2)` (Eq. 55: :math:`+\,tR_1(V_0) + O(t^2)`).

Routes: App. C's setup (Eqs. 47-52: the flow field :math:`-AV + \tilde F^\top\tilde Y` and
:math:`G_{\tilde F} = EV^\top`) against sympy's derivatives of :math:`J`; the exact series of
:math:`G_{\tilde F}(t)` in :math:`t` and :math:`\alpha` (sympy, Picard iteration of the flow,
:math:`\eta` symbolic) against the stated terms, order by order (derived vs stated); the
remainder's error trends (RK4 flow, autograd :math:`G_F`) in :math:`t \to 0` at
:math:`\alpha \ll t^2` and at fixed :math:`\alpha`, and in :math:`\alpha \to 0` at fixed
:math:`t`, for :math:`\eta = 0` and :math:`\eta > 0` (measured).

Finding: the :math:`t^0` term of the exact series is :math:`\tilde YV_0^\top -
\tilde FV_0V_0^\top`; the :math:`O(\alpha^2)` part :math:`-\tilde FV_0V_0^\top` (which Eq. 68
keeps at :math:`\beta = 1`) is missing from Prop. 2 and Eq. 55 and is not
:math:`O(t\alpha + t^2)`: at fixed :math:`\alpha` the remainder does not vanish as
:math:`t \to 0`. Smallest case: n = 2, K = 1, M = 2 (any :math:`\tilde F \ne 0`,
:math:`V_0 \ne 0`).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import sympy as sp

from numerics.li2.two_layer import center
from theory.matrices import centering_matrix
from theory.li2.stage1_expansion import coefficients
from verify import (
    SEED,
    Assumption,
    Claim,
    Evidence,
    IntRange,
    LogUniform,
    NegativeControl,
    Run,
    register,
    symbolic_identity,
)
from verify.arrays import eye, transpose
from verify.claims.li2 import PAPER
from verify.claims.li2._stage1 import (
    grid,
    mean_time_unit,
    record_data_assumptions,
    remainder_trend,
    series_derivation,
    small_time_problems,
)


def stated_small_time(Ft, Yt, V0, t):
    r"""Prop. 2 / Eq. 55's terms through :math:`t^1` at :math:`V_0 = 0` order:
    :math:`\tilde YV_0^\top + t\tilde Y\tilde Y^\top\tilde F` (sympy or torch)."""
    return Yt @ transpose(V0) + t * (Yt @ transpose(Yt) @ Ft)


def stated_remainder(t, alpha):
    r"""Prop. 2's remainder scale :math:`t\alpha + t^2` (constants 1)."""
    return t * alpha + t**2


def stated_field(Ft, Yt, V, eta):
    r"""App. C, Eqs. 47-52: :math:`\dot V = -AV + B`, :math:`A = \tilde F^\top\tilde F +
    \eta I`, :math:`B = \tilde F^\top\tilde Y`."""
    K = Ft.shape[-1]
    return -(transpose(Ft) @ Ft + eta * eye(K, Ft)) @ V + transpose(Ft) @ Yt


def stated_G(Ft, Yt, V):
    r"""App. C: :math:`G_{\tilde F} = EV^\top`, :math:`E = \tilde Y - \tilde FV`."""
    return (Yt - Ft @ V) @ transpose(V)


def flipped_small_time(Ft, Yt, V0, t):
    """Planted error: the t-linear term with its sign flipped."""
    return Yt @ transpose(V0) - t * (Yt @ transpose(Yt) @ Ft)


def eq68_small_time(Ft, Yt, V0, t):
    r"""Eq. 68 at :math:`\beta = 1`: the :math:`t^0` term :math:`\tilde YV_0^\top -
    \tilde FV_0V_0^\top` in full, plus :math:`t\tilde Y\tilde Y^\top\tilde F` (the rest of its
    :math:`t^1` term is :math:`O(t\alpha)`). Not the paper's Prop. 2: the corrected form the
    tests and a figure compare against."""
    return stated_small_time(Ft, Yt, V0, t) - Ft @ V0 @ transpose(V0)


def _setup(run: Run) -> Iterator[Evidence]:
    """App. C's field and G_Ft (the forms ``field`` and ``G``); attaches the series."""
    s = run.params["symbolic_size"]
    series = run.derivation(series_derivation(run, s)).result
    params = {**s, "eta": "symbolic (any eta >= 0)"}
    Ft, Yt, Vs = series.Ft, series.Yt, series.Vs
    yield symbolic_identity("App. C setup (Eqs. 47-52): -dJ/dV = -A V + Ft^T Yt",
                            stated=run.stated["field"](Ft, Yt, Vs, series.eta),
                            derived=series.field, parameters=params)
    yield symbolic_identity("App. C setup: -dJ/dFt = E V^T, E = Yt - Ft V",
                            stated=run.stated["G"](Ft, Yt, Vs), derived=series.G_of_V,
                            parameters=params)


def _symbolic(run: Run) -> Iterator[Evidence]:
    # The negative control swaps only the small-time form: its run replays the setup items
    # (run.memo_route).
    s = run.params["symbolic_size"]
    yield from run.memo_route("setup", ("field", "G"), lambda: _setup(run))
    series = series_derivation(run, s).result
    t, alpha = series.t, series.alpha
    stated = coefficients(run.stated["small_time"](series.Ft, series.Yt, alpha * series.U, t),
                          t, alpha)
    derived = series.coefficients()
    zero = 0 * series.G

    def t0_part(table):
        return sum((alpha**b * c for (a, b), c in table.items() if a == 0), zero)

    params = {**s, "eta": "symbolic (any eta >= 0)"}
    yield symbolic_identity("t^1 alpha^0 coefficient of G_Ft(t) (Yt Yt^T Ft)",
                            stated=stated.get((1, 0), zero), derived=derived.get((1, 0), zero),
                            parameters=params)
    yield symbolic_identity(
        "t^0 part of G_Ft(t), every power of alpha (stated: Yt V0^T)",
        stated=t0_part(stated), derived=t0_part(derived), parameters=params,
        note="a t^0 term beyond the stated one is not O(t alpha + t^2)")


def _smallest_case(run: Run) -> None:
    """The t^0 alpha^2 coefficient at the smallest centred instance (n=2, K=1, M=2)."""
    size = {"n": 2, "K": 1, "M": 2}
    series = series_derivation(run, size).result
    P = centering_matrix(2)
    instance = {**dict(zip(series.Ft, P * sp.Matrix([0, 1]))),
                **dict(zip(series.Yt, P * sp.eye(2))), **dict(zip(series.U, [1, 0]))}
    missing = series.coefficients()[(0, 2)].xreplace(instance)
    run.figure("smallest failing configuration: n=2, K=1, M=2, F=(0,1), labels (0,1), "
               "V0 = alpha (1, 0): t^0 alpha^2 coefficient -Ft U U^T (absent from Prop. 2)",
               [str(x) for x in missing])


def _trends(run: Run) -> Iterator[Evidence]:
    p = {**run.params["small_time"], "seeds": run.params["seeds"]}
    # (A2) needs K >= M - 1; below it (a stress setting) the features are Gaussian, and the
    # measured (A2) below records the run as outside the assumptions.
    F, Y, U = small_time_problems(run, p, "prop2", realisable=p["K"] >= p["M"] - 1)
    problem = ("prop2", F, Y, U)
    record_data_assumptions(run, center(F), center(Y), "Prop. 2 problems", realisable=True)
    stated, scale = run.stated["small_time"], run.stated["remainder"]
    taus, alphas, steps = grid(p["taus"]), grid(p["alphas"]), p["steps"]
    common = {"n": p["n"], "K": p["K"], "M": p["M"]}

    def remainder(G, Ft, Yt, V0, t):
        return G - stated(Ft, Yt, V0, t)

    for eta in p["etas"]:
        unit = mean_time_unit(F, eta)
        for alpha, label in ((p["alpha_tiny"], "alpha << t^2"), (p["alpha_fixed"],
                                                                  "alpha fixed")):
            yield from remainder_trend(
                run, f"Prop. 2 remainder as t -> 0 ({label}, eta={eta:g})", remainder, problem,
                eta, taus=taus, alphas=np.full_like(taus, alpha), sizes=taus, steps=steps,
                scale=lambda tau, a=alpha, unit=unit: scale(tau * unit, a),
                parameters={**common, "eta": eta, "alpha": alpha, "grid": "tau = lambda_max t"})
        unit_t = p["tau_tiny"] * unit
        yield from remainder_trend(
            run, f"Prop. 2 remainder as alpha -> 0 (t fixed, eta={eta:g})", remainder, problem,
            eta, taus=np.full_like(alphas, p["tau_tiny"]), alphas=alphas, sizes=alphas,
            steps=steps, scale=lambda a, unit_t=unit_t: scale(unit_t, a),
            parameters={**common, "eta": eta, "tau": p["tau_tiny"], "grid": "alpha"})
    # Informative: the same t-trend at fixed alpha once Eq. 68's t^0 term is kept.
    eta, alpha = p["etas"][-1], p["alpha_fixed"]
    unit = mean_time_unit(F, eta)
    corrected = remainder_trend(
        run, f"Eq. 68 (beta=1) remainder as t -> 0 (alpha fixed, eta={eta:g}) [figure]",
        lambda G, Ft, Yt, V0, t: G - eq68_small_time(Ft, Yt, V0, t), problem, eta, taus=taus,
        alphas=np.full_like(taus, alpha), sizes=taus, steps=steps,
        scale=lambda tau: scale(tau * unit, alpha), parameters={**common, "eta": eta})
    run.figure("fixed-alpha t-trend with Eq. 68's t^0 term kept: ok per item",
               {e.quantity: e.ok for e in corrected})


def check(run: Run) -> Iterator[Evidence]:
    yield from _symbolic(run)
    _smallest_case(run)
    yield from _trends(run)


_GRID = {"taus": [1e-2, 1e-5, 7], "alphas": [1e-1, 1e-4, 7], "alpha_tiny": 1e-15,
         "alpha_fixed": 1e-2, "tau_tiny": 1e-8, "steps": 4, "etas": [0.0, 0.1]}

CLAIM = register(Claim(
    id="li2.prop2",
    aliases=("li2.eq55",),
    paper=PAPER,
    kind="proposition",
    title="Small-time leading term of G: Yt V0^T + t Yt Yt^T Ft + O(t alpha + t^2)",
    source="Prop. 2 and Eq. 55, App. C.1; App. C setup (A1)-(A4), Eqs. 47-52 (li2.secC-setup)",
    statement=r"\text{(A1), (A2)}:\ G_{\tilde F}(t)=\tilde YV_0^\top+t\tilde Y\tilde Y^\top"
              r"\tilde F+O(t\alpha+t^2)\ (\eta\ge0);\quad \text{Eq. 55: }G_{\tilde F}(t)="
              r"\tilde YV_0^\top+t\tilde Y\tilde Y^\top\tilde F+tR_1(V_0)+O(t^2)",
    reading=r"\dot V=-AV+\tilde F^\top\tilde Y, A=\tilde F^\top\tilde F+\eta I (Eqs. 47-52), "
            r"E=\tilde Y-\tilde FV, G_{\tilde F}=EV^\top=-\partial J/\partial\tilde F; "
            r"V_0=\alpha U with U_{ij}\sim\mathcal N(0,1) (A3). The statement is read as an "
            r"expansion in (t,\alpha)\to0: every term of the exact series that is not "
            r"O(t\alpha+t^2) must be among the stated ones, i.e. the t^0 terms (all powers of "
            r"\alpha) and the t^1\alpha^0 term; R_1(V_0) (not defined in SOURCES) is "
            r"read as the t^1 terms that vanish at V_0=0. Trends: the remainder "
            r"G-\tilde YV_0^\top-t\tilde Y\tilde Y^\top\tilde F in t at \alpha\ll t^2 and at "
            r"fixed \alpha, and in \alpha at fixed t; t=\tau/\lambda_{\max}. Problems satisfy "
            r"(A1) and (A2) by construction (the first M-1 features are YC).",
    parameters={
        "quick": {"symbolic_size": {"n": 3, "K": 2, "M": 2}, "seeds": 6,
                  "small_time": {"n": 24, "K": 6, "M": 3, **_GRID}},
        "full": {"symbolic_size": {"n": 3, "K": 2, "M": 2}, "seeds": 8,
                 "small_time": {"n": 256, "K": 64, "M": 8, **_GRID,
                                "taus": [1e-2, 1e-6, 9], "alphas": [1e-1, 1e-5, 9]}},
    },
    stated={"small_time": stated_small_time, "remainder": stated_remainder,
            "field": stated_field, "G": stated_G},
    # as li2.sec3.2-zero-init declares for its remainders
    equivalent_mutants={
        f"remainder:{op}": "the remainder's scale enters an order check (the log-log slope of "
                           "the remainder against it), which a constant factor leaves as is"
        for op in ("scale", "nudge")},
    check=check,
    control=NegativeControl("the t-linear term with its sign flipped",
                            {"small_time": flipped_small_time}),
    assumptions=(
        Assumption("0 < alpha << 1", "small initialisation (A3): every alpha in (0, 0.1]",
                   lambda p: all(0 < a <= 0.1 for a in (
                       *grid(p["small_time"]["alphas"]), p["small_time"]["alpha_tiny"],
                       p["small_time"]["alpha_fixed"]))),
        Assumption("M - 1 <= K <= n - 1", "(A1) and (A2) can hold together",
                   lambda p: p["small_time"]["M"] - 1 <= p["small_time"]["K"]
                   <= p["small_time"]["n"] - 1),
    ),
    # Sizes (outside (A1)-(A2) where K < M - 1 or K >= n) and the fixed alpha of the
    # t-trend (above 0.1 outside (A3)).
    space={"small_time.n": IntRange(4, 32), "small_time.K": IntRange(1, 12),
           "small_time.M": IntRange(2, 8), "small_time.alpha_fixed": LogUniform(1e-3, 0.5),
           "seed": SEED},
))

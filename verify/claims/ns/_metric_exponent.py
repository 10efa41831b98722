r"""The metric exponent :math:`m = q(L-1)/L` of :math:`R_{L_p,L}` as the summaries state it
(:func:`stated_metric_exponent`): the stated form ``ns.thm4.6`` (Theorem 4.6, submitted
numbering), ``ns.cor4.12`` (Corollary 4.12) and ``ns.fig2-metric`` (Fig. 2) all check.
"""
from __future__ import annotations


def stated_metric_exponent(q, L):
    r"""Metric exponent :math:`m = q(L-1)/L` (the summaries; the one summary formula that
    verify/claims/ns/SOURCES.md §4.10 reproduces): the power of :math:`|x|` in the inverse metric
    at zero balance."""
    return q * (L - 1) / L

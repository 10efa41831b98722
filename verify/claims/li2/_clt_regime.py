"""The CLT regime of a Monte Carlo frequency compared in standard errors: :data:`MIN_COUNT`, the
smallest expected count :math:`Np(1-p)` at which the normal approximation is trusted.

Used by ``li2.lemma7`` (Lemma 7) and ``li2.thm8`` (Thm. 8).
"""
from __future__ import annotations

#: Smallest expected count N p (1 - p) of a compared frequency: binomial skewness
#: (1 - 2p)/sqrt(N p (1 - p)) <= 0.1 keeps the normal approximation of the standardised
#: error sound at the Bonferroni z used here.
MIN_COUNT = 100.0

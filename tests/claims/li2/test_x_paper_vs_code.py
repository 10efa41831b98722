"""li2.x.paper-vs-code: the quick run (every objective shows Fig. 3's outcome; the figures the
reader needs are there) and what its items are made of."""
import pytest

from verify.registry import get
from verify.runner import run_claim
from verify.verdict import Verdict


@pytest.fixture(scope="module")
def quick():
    return run_claim(get("li2.x.paper-vs-code"))


def test_every_objective_shows_fig3s_outcome_and_the_control_is_rejected(quick):
    assert quick.verdict is Verdict.PASS, quick.reason
    assert len(quick.evidence) == 5  # three objectives with decay, two without
    assert quick.control is not None and quick.control.rejected


def test_the_reported_figures_are_the_ones_a_reader_compares(quick):
    times = quick.figures["grokking times with weight decay (epochs to test accuracy 0.99, "
                          "per seed)"]
    ratio = times["paper (sample centring, trained V) / code"]
    assert ratio["95% interval"][0] <= ratio["t_0.99 ratio (geometric mean)"] \
        <= ratio["95% interval"][1]
    top = quick.figures["the trained top layer against the fixed points (per seed, at the end)"]
    code = top["code (class centring, trained V)"]
    # the bound is a bound: the distance to the run's own fixed point stays within it
    assert all(d <= b for d, b in zip(code["to_code"], code["bound"]))

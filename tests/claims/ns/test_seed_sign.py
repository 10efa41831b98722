"""verify/claims/ns/_seed_sign.py: a paired per-seed difference's sign, decided by its
t-interval (ns.x.fine-tuning, ns.x.reparam-adamw)."""
import numpy as np
import pytest

from verify.claims.ns._seed_sign import sign_evidence


@pytest.mark.parametrize(("values", "stated", "ok"), [
    (np.array([1.0, 2.0, 1.5]), 1.0, True),
    (np.array([1.0, 2.0, 1.5]), -1.0, False),
    (np.array([-1.0, 2.0, 0.1]), 1.0, None),
])
def test_the_sign_is_read_off_the_interval(values, stated, ok):
    assert sign_evidence("q", values, stated=stated, parameters={}).ok is ok


def test_an_interval_containing_zero_is_undecided_and_one_beyond_it_decides():
    undecided = sign_evidence("x", np.array([0.1, -0.1, 0.05]), stated=1.0, parameters={})
    assert undecided.ok is None
    wrong = sign_evidence("x", np.array([-0.3, -0.31, -0.29]), stated=1.0, parameters={})
    assert wrong.ok is False and wrong.discrepancy > 0.25
    split = sign_evidence("x", np.array([0.3, 0.31, 0.29]), stated=-1.0, derived=1.0,
                          parameters={})
    assert split.ok is False   # the stated route fails though the derived one holds

"""numerics.li2.subsampled_energy with an activation in place of x^2 (the Thm. 4 probe of
li2.x.activations)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.activations import activation
from numerics.li2.group_task import group_energy, group_task
from numerics.li2.subsampled_energy import pair_activations, pairs_by_target, subsampled_energy
from numerics.random import make_generator
from theory.groups import cyclic, dihedral


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), name=st.sampled_from(["x2", "relu", "silu"]),
       G=st.sampled_from([cyclic(5), dihedral(3)]))
def test_full_mask_gives_the_group_energy(seed, name, G):
    M = G.order
    w = torch.randn(3, 2 * M, generator=make_generator(seed), dtype=torch.float64)
    full = subsampled_energy(w, pairs_by_target(G.table), torch.ones(M, M, dtype=torch.float64),
                             act=activation(name))
    torch.testing.assert_close(full, group_energy(w, group_task(G.table), activation(name)),
                               rtol=1e-12, atol=0)


def test_x2_as_an_activation_equals_the_default_and_square_terms_needs_x2():
    right = pairs_by_target(cyclic(4).table)
    w = torch.randn(2, 8, generator=make_generator(0), dtype=torch.float64)
    torch.testing.assert_close(pair_activations(w, right, act=activation("x2")),
                               pair_activations(w, right))
    with pytest.raises(ValueError, match="square_terms"):
        pair_activations(w, right, square_terms=False, act=activation("relu"))

"""Every paper claim has a parameter space over its own parameters (issue 22): ``stress``
varies more than the seed, each dimension names a parameter (dotted: a key of a nested one),
and each dimension's values pass the same validation as ``--set``."""
from verify.registry import builtin_claims
from verify.runner import validate_overrides
from verify.sampling import Choice


def test_every_claim_varies_its_own_parameters():
    thin = [c.id for c in builtin_claims() if not set(c.space) - {"seed"}]
    assert not thin, f"claims whose stress space is the seed alone: {thin}"


def test_every_dimension_is_a_valid_override_at_its_ends():
    for claim in builtin_claims():
        for name, dim in claim.space.items():
            if name == "seed":
                continue
            ends = dim.options if isinstance(dim, Choice) else (dim.lo, dim.hi)
            for value in ends:
                validate_overrides(claim, {name: value})

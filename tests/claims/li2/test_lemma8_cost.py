"""li2.lemma8 at full fidelity in CPU minutes (issue 19): trials that have reached their vertex
stop being stepped (numerics.integrators.integrate_settling), and the pairwise increments of
log(alpha_i/alpha_k) are taken a slice of records at a time, with the same numbers."""
import torch

from numerics.integrators import integrate, integrate_settling
from numerics.li2.muon_dynamics import gradient_field, initial_nodes
from numerics.random import make_generator
from verify.claims.li2 import lemma8

MU = torch.tensor([1.0, 0.9, 0.6, 0.3], dtype=torch.float64)


def _counting(field):
    rows = []

    def counted(t, y):
        rows.append(y.shape[0])
        return field(t, y)

    return counted, rows


def test_settled_trials_stop_and_the_readable_records_are_unchanged():
    alpha = initial_nodes(64, MU, 2.0, make_generator(3))
    floor = lemma8._floor(torch.float64)
    full_field, full_rows = _counting(gradient_field(MU))
    lazy_field, lazy_rows = _counting(gradient_field(MU))
    # t = 600: every trial's losers pass below sqrt(tiny) (rate ~ mu of the winner >= 0.3)
    kwargs = {"dt": 0.25, "steps": 2400, "record_every": 48}
    plain = integrate(full_field, alpha, **kwargs)
    lazy = integrate_settling(lazy_field, alpha, settled=lambda y: (y >= floor).sum(-1) <= 1,
                              **kwargs)
    readable = plain.values >= floor
    assert torch.equal(readable, lazy.values >= floor)
    assert torch.equal(plain.values[readable], lazy.values[readable])
    assert torch.equal(plain.final.argmax(-1), lazy.final.argmax(-1))
    assert sum(lazy_rows) < 0.75 * sum(full_rows)


def test_sliced_increments_equal_the_whole_array():
    values = initial_nodes(5, MU, 2.0, make_generator(4))[None] ** torch.arange(
        1, 2 * lemma8.SLICE + 4, dtype=torch.float64)[:, None, None]
    logs, ok = lemma8._coordinate_logs(values)
    whole = logs[..., :, None] - logs[..., None, :]
    sliced = torch.cat([d for d, _ in lemma8._pair_increments(logs, ok)])
    assert torch.equal(sliced, whole.diff(dim=0))

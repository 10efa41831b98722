"""verify.check_pool: workers started either way give the records a serial run gives."""
from __future__ import annotations

import sys

import pytest
import torch

from verify import registry
from verify.check_pool import ClaimTask, run_claims_in_pool
from verify.diagnosis import diagnosed
from verify.runner import run_claim

registry.load_builtin_claims()
CLAIMS = ("li2.lemma11", "li2.lemma4")


def _pooled(start_method: str) -> list[dict]:
    tasks = [ClaimTask(c, {}) for c in CLAIMS]
    records = [None] * len(tasks)
    for i, record in run_claims_in_pool(tasks, jobs=2, fidelity="quick",
                                        device=torch.device("cpu"), dtype=torch.float64, seed=3,
                                        threads=1, start_method=start_method):
        records[i] = record
    return records


@pytest.mark.parametrize("start_method", ["spawn", "fork"] if sys.platform == "linux"
                         else ["spawn"])
def test_pooled_records_equal_the_serial_ones(start_method):
    serial = [diagnosed(run_claim(registry.get(c), fidelity="quick", seed=3).as_record())
              for c in CLAIMS]
    pooled = _pooled(start_method)
    for a, b in zip(serial, pooled):
        assert a["id"] == b["id"] and a["verdict"] == b["verdict"]
        assert a["evidence"] == b["evidence"]


def test_an_unknown_start_method_is_refused_by_name():
    with pytest.raises(ValueError, match="start_method"):
        next(run_claims_in_pool([ClaimTask("li2.lemma11", {})], jobs=1, fidelity="quick",
                                device=torch.device("cpu"), dtype=torch.float64, seed=0,
                                start_method="threads"))

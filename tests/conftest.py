import os

import pytest
import torch

from verify.profiles import register_profiles
from verify.registry import load_builtin_claims

register_profiles()
# `check` stores results in ./theory-verify.sqlite by default; the suite must not leave one in
# the checkout, nor reuse results across tests. Tests of the store name theirs.
os.environ["THEORY_VERIFY_STORE"] = "off"
LOAD_FAILURES = load_builtin_claims()
# The suite's tensors are small: with several intra-op threads on a busy 2-core machine each op
# waits at an OpenMP barrier (measured 30-70x slower), and nothing here gains from threads.
torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA; torch finds no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

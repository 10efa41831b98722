import pytest

from verify.profiles import register_profiles
from verify.registry import load_builtin_claims

register_profiles()
load_builtin_claims()


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA; torch finds no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

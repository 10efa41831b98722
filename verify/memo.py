"""One process-wide memo for simulations that the stated forms do not enter, so a claim's negative
control (same parameters, seed, dtype, device) reuses its check's simulation."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_CACHE: OrderedDict[str, Any] = OrderedDict()


def cached(key: str, compute: Callable[[], T], *, size: int = 64) -> T:
    """Memoise a simulation that the stated forms do not enter, so the negative control's run
    (same parameters, seed, dtype, device) reuses it instead of recomputing it.

    One cache per process, least recently used entries dropped beyond ``size``: it must hold
    every entry a claim makes before its control asks for the first one again (some claims make
    a few dozen), so the default is 64."""
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = compute()
    _CACHE[key] = value
    while len(_CACHE) > size:
        _CACHE.popitem(last=False)
    return value

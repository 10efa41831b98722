"""The one process-wide store behind :meth:`verify.run.Run.memo` and
:meth:`verify.run.Run.memo_route`: results that the stated forms do not enter, so a claim's
negative control (same claim, parameters, seed, dtype, device) reuses its check's results.

Claims do not call it: :class:`~verify.run.Run` builds the key (see :meth:`Run.memo`)."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

#: Entries kept, least recently used dropped first. The store must hold every entry a claim
#: makes before its control asks for the first one again (some claims make a few dozen values
#: and a dozen routes); it replaces two stores of 64 entries (values and routes) and the
#: claim modules' own ``lru_cache``\ s of run-dependent results.
SIZE = 128

_STORE: OrderedDict[Hashable, Any] = OrderedDict()


def cached(key: Hashable, compute: Callable[[], T], *, size: int = SIZE) -> T:
    """``compute()`` memoised under ``key`` in the process-wide store (the low-level primitive
    under :meth:`Run.memo`; a claim calls ``run.memo``, whose key the run builds)."""
    if key in _STORE:
        _STORE.move_to_end(key)
        return _STORE[key]
    value = compute()
    _STORE[key] = value
    while len(_STORE) > size:
        _STORE.popitem(last=False)
    return value

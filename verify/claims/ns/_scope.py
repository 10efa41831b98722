r"""The Never Saddle setting as parameter assumptions, read wherever a claim's parameters name
the flow exponent q or the depth L (top level, or a key of a nested route's dict), so that
``stress`` maps each claim inside and outside it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verify import Assumption


def gathered(params: Mapping[str, Any], *paths: str) -> list[Any]:
    """Every value at the dotted ``paths`` (``"grid.q"``), sequences flattened.

    >>> gathered({"L": [2, 3], "grid": {"L": 5}}, "L", "grid.L")
    [2, 3, 5]
    """
    out: list[Any] = []
    for path in paths:
        node: Any = params
        for key in path.split("."):
            node = node[key]
        out.extend(node if isinstance(node, (list, tuple)) else [node])
    return out


def exponent_scope(*paths: str, above_one: bool = False) -> Assumption:
    """q in [1, 2] (or (1, 2] with ``above_one``: the field is continuous, SOURCES §3)."""
    low = "(1" if above_one else "[1"

    def holds(p: Mapping[str, Any]) -> bool:
        return all((1 < float(q) if above_one else 1 <= float(q)) and float(q) <= 2
                   for q in gathered(p, *paths))

    return Assumption("exponent", f"q in {low}, 2]: the steepest flows between SignGF and GF "
                                  f"(SOURCES §3)", holds)


def depth_scope(*paths: str) -> Assumption:
    """L >= 2: x a product of at least two factors (SOURCES §3, deep diagonal)."""
    return Assumption("depth", "L >= 2: x = w_1 * ... * w_L is a product of at least two "
                               "factors (SOURCES §3)",
                      lambda p: all(int(L) >= 2 for L in gathered(p, *paths)))

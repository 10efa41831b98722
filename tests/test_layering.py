"""The layers stay apart: theory/ is sympy only, numerics/ never sees sympy, only verify/ joins them."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "theory": {"torch", "numpy", "scipy", "numerics", "verify"},
    "numerics": {"sympy", "theory", "verify"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer):
    offenders = {str(p.relative_to(ROOT)): sorted(_imports(p) & FORBIDDEN[layer])
                 for p in (ROOT / layer).rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}

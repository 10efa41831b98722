"""No batched LU on the CPU with more than one thread (issue 30): torch's LU-based routines
race inside MKL when they factor a batch on several intra-op threads (numerics/solves.py says
how: wrong pivots, a wrong log-determinant without a word). They are called through
numerics.solves, which runs them where the race cannot occur; a direct call elsewhere must
be on one matrix and listed here with the reason."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LU_ROUTINES = {"solve", "solve_ex", "inv", "inv_ex", "lu", "lu_factor", "lu_factor_ex",
               "lu_solve", "det", "slogdet", "inverse", "logdet", "matrix_power"}
#: Direct calls that factor one matrix, never a batch (file, routine): why it is safe.
ONE_MATRIX = {
    ("numerics/li2/group_task.py", "inv"): "the r x r eigenvector matrix of one class algebra",
}


def _torch_lu_calls(path: Path) -> set[str]:
    """The LU routines ``path`` calls as torch.linalg.X or torch.X (NumPy's LAPACK has no
    such race: it factors one matrix per call)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in LU_ROUTINES:
            owner = ast.unparse(node.func.value)
            if owner in ("torch.linalg", "torch"):
                found.add(node.func.attr)
    return found


def test_lu_routines_are_called_through_numerics_solves():
    offenders = {}
    for layer in ("numerics", "verify", "theory"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel == "numerics/solves.py":
                continue
            bad = sorted(r for r in _torch_lu_calls(path) if (rel, r) not in ONE_MATRIX)
            if bad:
                offenders[rel] = bad
    assert offenders == {}


def test_the_scan_finds_a_planted_call(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import torch\nx = torch.linalg.solve(A, b)\ny = torch.det(A)\n"
                       "z = np.linalg.solve(A, b)\n")
    assert _torch_lu_calls(planted) == {"solve", "det"}

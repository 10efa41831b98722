"""docs/patterns.md runs: its Monte Carlo claim, equivalent-mutant declarations and rates in
log t are doctests (issue 31 item 9)."""
import doctest
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "patterns.md"


def test_the_patterns_page_runs():
    failed, attempted = doctest.testfile(str(DOC), module_relative=False,
                                         optionflags=doctest.ELLIPSIS)
    assert attempted >= 20 and failed == 0

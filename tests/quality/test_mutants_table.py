"""docs/mutants.md: the per-claim table of mutation outcomes names every claim, its generated
rows add up, and (slow tier) two cheap rows regenerate to the same counts."""
from pathlib import Path

import pytest

from verify import registry
from verify.mutant_table import COUNTS, NOT_GENERATED, ROW, builtin_claim_ids, rows
from verify.mutate import mutate

DOC = Path(__file__).resolve().parents[2] / "docs" / "mutants.md"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_the_table_names_every_claim_once():
    listed = [m["claim"] for line in DOC.read_text(encoding="utf-8").splitlines()
              if (m := ROW.match(line.strip()))]
    assert sorted(listed) == builtin_claim_ids()


def test_each_generated_row_adds_up():
    for claim, line in rows(DOC.read_text(encoding="utf-8")).items():
        _, baseline, total, *counts, _seconds = _cells(line)
        assert baseline != NOT_GENERATED and len(counts) == len(COUNTS), line
        assert int(total) == sum(int(c) for c in counts), line


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", ["li2.eq2", "li2.lemma10"])
def test_a_generated_row_regenerates(claim_id):
    """The row is what ``mutate --table`` writes now (seconds aside)."""
    line = rows(DOC.read_text(encoding="utf-8"))[claim_id]
    report = mutate(registry.get(claim_id))
    counts = [report.baseline, str(len(report.outcomes))] + [str(report.count(s))
                                                             for s in COUNTS]
    assert _cells(line)[1:-1] == counts

"""Claims of Li2 (Tian, arXiv 2509.21519, v5 numbering). Sources: verify/claims/li2/SOURCES.md."""
from pathlib import Path

from verify import Paper

LI2 = Paper(id="li2", title="Li2 (Tian, arXiv 2509.21519 v5)", claims=__name__,
            sources=Path(__file__).with_name("SOURCES.md"))
#: What each claim gives as its ``paper``.
PAPER = LI2.title

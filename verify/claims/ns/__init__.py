"""Claims of Never Saddle (Jacobs, Zhou, Burkholz, arXiv 2603.02064, submitted numbering).
Sources: verify/claims/ns/SOURCES.md. The full text was not available: every claim's
``reading`` states the toolkit's precise version of the public description."""
from pathlib import Path

from verify import Paper

NS = Paper(id="ns", title="Never Saddle (Jacobs, Zhou, Burkholz, arXiv 2603.02064)",
           claims=__name__, sources=Path(__file__).with_name("SOURCES.md"))
#: What each claim gives as its ``paper``.
PAPER = NS.title

"""Claims of Li2 (Tian, arXiv 2509.21519, v5 numbering). Sources: verify/claims/li2/SOURCES.md."""

PAPER = "Li2 (Tian, arXiv 2509.21519 v5)"

"""Claims of Li2 (Tian, arXiv 2509.21519, v5 numbering). Catalogue: shared/papers/li2.md."""

PAPER = "Li2 (Tian, arXiv 2509.21519 v5)"

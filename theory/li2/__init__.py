"""Li2 (Tian, arXiv 2509.21519): closed forms and derivations (sympy only)."""

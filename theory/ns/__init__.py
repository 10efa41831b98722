"""Never Saddle (Jacobs, Zhou, Burkholz, arXiv 2603.02064): closed forms and derivations
(sympy only)."""

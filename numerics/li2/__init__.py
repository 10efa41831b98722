"""Li2 (Tian, arXiv 2509.21519): simulations in torch."""

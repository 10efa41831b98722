"""Never Saddle (Jacobs, Zhou, Burkholz, arXiv 2603.02064): simulations in torch."""

"""A worked example outside the built-in claims: deep linear networks.

Importing this package registers ``arora2018.balance`` (Arora, Cohen & Hazan 2018, Thm. 1) and
``saxe2014.sigmoid`` (Saxe, McClelland & Ganguli 2014, Eqs. 6-7); see ``examples/README.md``.
"""
from . import claims  # noqa: F401 - registers the claims

__all__ = ["claims"]

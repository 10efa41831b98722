r"""Exact arithmetic in the field :math:`\mathbb Q(\zeta_N)`, :math:`\zeta_N=e^{2\pi i/N}`
(cyclotomic).

Characters and representation matrices of a group of exponent :math:`N` have entries in
:math:`\mathbb Q(\zeta_N)`. An element is stored in its canonical form: the rational coefficients
of :math:`1, \zeta, \dots, \zeta^{\varphi(N)-1}` after reduction modulo the cyclotomic polynomial
:math:`\Phi_N`. Equality and the zero test are therefore exact and cheap, with no ``simplify``.

>>> F = cyclotomic_field(3)
>>> w = F.root(1)
>>> 1 + w + w * w == F.zero
True
>>> (w * w).conjugate() == w
True
>>> F.root(1).to_sympy()
-1/2 + sqrt(3)*I/2
"""
from __future__ import annotations

import cmath
import math
from fractions import Fraction
from functools import lru_cache
from typing import Union

import sympy as sp

Rational = Union[int, Fraction]

#: ``to_sympy`` looks for a sparser form (see ``Cyc._sparse_terms``) up to this degree phi(N).
SPARSE_SEARCH_DEGREE = 32


@lru_cache(maxsize=None)
def cyclotomic_field(N: int) -> CyclotomicField:
    """The field :math:`\\mathbb Q(\\zeta_N)` (one shared instance per ``N``)."""
    return CyclotomicField(N)


class CyclotomicField:
    """:math:`\\mathbb Q(\\zeta_N)`; build it with :func:`cyclotomic_field`, not directly."""

    def __init__(self, N: int):
        if not isinstance(N, int) or N < 1:
            raise ValueError(f"N must be an integer >= 1, got {N!r}")
        self.N = N
        x = sp.Symbol("x")
        high_to_low = [int(c) for c in sp.Poly(sp.cyclotomic_poly(N, x), x).all_coeffs()]
        self.degree = len(high_to_low) - 1  # Euler's phi(N)
        # Phi_N is monic: x^phi = -sum_{j<phi} p_j x^j.
        self._low = tuple(reversed(high_to_low[1:]))
        powers = []
        for k in range(N):
            vec = [0] * max(k + 1, self.degree)
            vec[k] = 1
            powers.append(self._reduce(vec))
        self._powers = tuple(powers)
        self._roots = {}  # canonical coefficients of +-zeta^k -> (sign, k)
        for k in range(N):
            self._roots.setdefault(powers[k], (1, k))
            self._roots.setdefault(tuple(-c for c in powers[k]), (-1, k))
        self.zero = Cyc(self, (0,) * self.degree)
        self.one = self.rational(1)
        self._units = tuple(a for a in range(1, N + 1) if math.gcd(a, N) == 1)
        self._sympy_cache: dict[tuple, sp.Expr] = {}
        self._trig: dict[int, tuple[sp.Expr, sp.Expr]] = {}

    def __repr__(self) -> str:
        return f"Q(zeta_{self.N})"

    def _reduce(self, coeffs: list) -> tuple:
        """Canonical coefficients of a polynomial in zeta (any degree) modulo Phi_N."""
        a = list(coeffs)
        phi, low = self.degree, self._low
        for k in range(len(a) - 1, phi - 1, -1):
            c = a[k]
            if c:
                base = k - phi
                for j, p in enumerate(low):
                    if p:
                        a[base + j] -= c * p
        a = a[:phi]
        a.extend([0] * (phi - len(a)))
        return tuple(a)

    def root(self, k: int) -> Cyc:
        """:math:`\\zeta_N^k` (any integer ``k``)."""
        return Cyc(self, self._powers[k % self.N])

    def rational(self, q: Rational) -> Cyc:
        q = Fraction(q)
        return Cyc(self, (q.numerator,) + (0,) * (self.degree - 1), q.denominator)

    def from_exponents(self, exponents) -> Cyc:
        """:math:`\\sum_k \\zeta_N^{e_k}` for an iterable of integer exponents ``e_k``."""
        acc = [0] * self.degree
        for e in exponents:
            for j, c in enumerate(self._powers[e % self.N]):
                if c:
                    acc[j] += c
        return Cyc(self, tuple(acc))

    def embed(self, x: Cyc, target: CyclotomicField) -> Cyc:
        """Image of ``x`` in ``target`` (``N`` must divide ``target.N``): zeta_N -> zeta_M^(M/N)."""
        if x.F is target:
            return x
        if target.N % self.N:
            raise ValueError(f"Q(zeta_{self.N}) does not embed in Q(zeta_{target.N})")
        step = target.N // self.N
        acc = [0] * target.degree
        for k, c in enumerate(x.n):
            if c:
                for j, p in enumerate(target._powers[(k * step) % target.N]):
                    if p:
                        acc[j] += c * p
        return Cyc(target, tuple(acc), x.d)

    def real_imag(self, x: Cyc, target: CyclotomicField) -> tuple[Cyc, Cyc]:
        """Real and imaginary parts of ``x`` as elements of ``target`` (``4 | target.N`` and
        ``N | target.N``): with :math:`\\zeta_N^k = \\zeta_M^j`,
        :math:`\\cos = (\\zeta_M^j + \\zeta_M^{-j})/2`, :math:`\\sin = (\\zeta_M^{M/4-j} -
        \\zeta_M^{M/4+j})/2`."""
        M = target.N
        if M % 4 or M % self.N:
            raise ValueError(f"real and imaginary parts of {self} need Q(zeta_M), 4N | 4M")
        step, quarter, P = M // self.N, M // 4, target._powers
        re = [0] * target.degree
        im = [0] * target.degree
        for k, c in enumerate(x.n):
            if c:
                j = k * step
                for acc, (u, v) in ((re, (j, -j)), (im, (quarter - j, quarter + j))):
                    pu, pv = P[u % M], P[v % M]
                    sign = 1 if acc is re else -1
                    for i in range(target.degree):
                        acc[i] += c * (pu[i] + sign * pv[i])
        return Cyc(target, tuple(re), 2 * x.d), Cyc(target, tuple(im), 2 * x.d)

    def _trig_of(self, k: int) -> tuple[sp.Expr, sp.Expr]:
        if k not in self._trig:
            angle = 2 * sp.pi * sp.Rational(k, self.N)
            self._trig[k] = (sp.cos(angle), sp.sin(angle))
        return self._trig[k]


class Cyc:
    """An element of :math:`\\mathbb Q(\\zeta_N)` (immutable, hashable, exact).

    Stored as integer numerators ``n`` of :math:`1, \\zeta, \\dots, \\zeta^{\\varphi-1}` over
    one positive denominator ``d``, in lowest terms (``gcd(n..., d) = 1``), so that equal
    elements have equal ``key``.
    """

    __slots__ = ("F", "n", "d")

    def __init__(self, F: CyclotomicField, n: tuple, d: int = 1):
        if d != 1:
            g = math.gcd(d, *n)
            if g != 1:
                n = tuple(x // g for x in n)
                d //= g
        self.F, self.n, self.d = F, n, d

    @property
    def key(self) -> tuple[tuple[int, ...], int]:
        """Canonical, hashable and orderable form ``(numerators, denominator)``."""
        return (self.n, self.d)

    @property
    def coefficients(self) -> tuple[Fraction, ...]:
        """Rational coefficients of :math:`1, \\zeta, \\dots, \\zeta^{\\varphi(N)-1}`."""
        return tuple(Fraction(x, self.d) for x in self.n)

    # -- arithmetic ------------------------------------------------------------------------
    def _coerce(self, other) -> Cyc | None:
        if isinstance(other, Cyc):
            if other.F is not self.F:
                raise ValueError(f"cannot mix {self.F} and {other.F}; embed first")
            return other
        if isinstance(other, (int, Fraction)):
            return self.F.rational(other)
        return None

    def __add__(self, other):
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        if self.d == o.d:
            return Cyc(self.F, tuple(a + b for a, b in zip(self.n, o.n)), self.d)
        d1, d2 = self.d, o.d
        return Cyc(self.F, tuple(a * d2 + b * d1 for a, b in zip(self.n, o.n)), d1 * d2)

    __radd__ = __add__

    def __neg__(self):
        return Cyc(self.F, tuple(-a for a in self.n), self.d)

    def __sub__(self, other):
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return self + (-o)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, int):
            return Cyc(self.F, tuple(a * other for a in self.n), self.d)
        if isinstance(other, Fraction):
            return Cyc(self.F, tuple(a * other.numerator for a in self.n),
                       self.d * other.denominator)
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        if not any(o.n[1:]):
            return Cyc(self.F, tuple(a * o.n[0] for a in self.n), self.d * o.d)
        if not any(self.n[1:]):
            return Cyc(self.F, tuple(b * self.n[0] for b in o.n), self.d * o.d)
        a, b = self.n, o.n
        prod = [0] * (2 * len(a) - 1)
        for i, x in enumerate(a):
            if x:
                for j, y in enumerate(b):
                    if y:
                        prod[i + j] += x * y
        return Cyc(self.F, self.F._reduce(prod), self.d * o.d)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, (int, Fraction)):
            if other == 0:
                raise ZeroDivisionError("division of a cyclotomic number by 0")
            return self * (1 / Fraction(other))
        o = self._coerce(other)
        if o is None:
            return NotImplemented
        return self * o.inverse()

    def __rtruediv__(self, other):
        return self.inverse() * other

    def galois(self, a: int) -> Cyc:
        """The automorphism :math:`\\zeta \\mapsto \\zeta^a` (``gcd(a, N) = 1``)."""
        F = self.F
        acc = [0] * F.degree
        for k, c in enumerate(self.n):
            if c:
                for j, p in enumerate(F._powers[(a * k) % F.N]):
                    if p:
                        acc[j] += c * p
        return Cyc(F, tuple(acc), self.d)

    def conjugate(self) -> Cyc:
        """Complex conjugate, :math:`\\zeta \\mapsto \\zeta^{-1}`."""
        return self.galois(self.F.N - 1)

    def inverse(self) -> Cyc:
        """:math:`1/x` as (product of the other Galois conjugates) / (the norm, a rational)."""
        if not self:
            raise ZeroDivisionError("inverse of the cyclotomic number 0")
        if self.is_rational():
            return self.F.rational(Fraction(self.d, self.n[0]))
        others = self.F.one
        for a in self.F._units:
            if a != 1:
                others = others * self.galois(a)
        norm = self * others
        assert norm.is_rational(), "the norm of a cyclotomic number is rational"
        return others / norm.to_fraction()

    def real_part(self) -> Cyc:
        """:math:`(x + \\bar x)/2`."""
        return (self + self.conjugate()) / 2

    # -- predicates and conversion -----------------------------------------------------------
    def __bool__(self) -> bool:
        return any(self.n)

    def __eq__(self, other) -> bool:
        if isinstance(other, Cyc):
            return other.F is self.F and self.n == other.n and self.d == other.d
        if isinstance(other, (int, Fraction)):
            return self.is_rational() and Fraction(self.n[0], self.d) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.F.N, self.n, self.d))

    def is_rational(self) -> bool:
        return not any(self.n[1:])

    def is_real(self) -> bool:
        return self == self.conjugate()

    def to_fraction(self) -> Fraction:
        """The value as a :class:`~fractions.Fraction` (raises if it is not rational)."""
        if not self.is_rational():
            raise ValueError(f"{self!r} is not rational")
        return Fraction(self.n[0], self.d)

    def as_root_of_unity(self) -> tuple[int, int] | None:
        """``(sign, k)`` when the value is :math:`\\pm\\zeta_N^k`, else ``None``."""
        return self.F._roots.get(self.n) if self.d == 1 else None

    def __complex__(self) -> complex:
        N = self.F.N
        return sum((c * cmath.exp(2j * cmath.pi * k / N)
                    for k, c in enumerate(self.n) if c), 0j) / self.d

    def to_sympy(self) -> sp.Expr:
        """Exact sympy value: rationals as ``Rational``; otherwise :math:`\\cos` and :math:`\\sin`
        of rational multiples of :math:`2\\pi` (sympy writes the small ones as radicals).
        A real element gets a real expression."""
        re, im = self.to_sympy_parts()
        return re if im == 0 else sp.expand(re + sp.I * im)

    def to_sympy_parts(self) -> tuple[sp.Expr, sp.Expr]:
        """Exact real and imaginary parts as real sympy expressions (see :meth:`to_sympy`)."""
        F = self.F
        cached = F._sympy_cache.get(self.key)
        if cached is not None:
            return cached
        if self.is_rational():
            out = (sp.Rational(self.n[0], self.d), sp.Integer(0))
        else:
            root = self.as_root_of_unity()
            terms = [(root[0], root[1])] if root else self._sparse_terms()
            re = sp.Add(*[sp.Rational(c, self.d) * F._trig_of(k)[0] for c, k in terms])
            im = sp.Integer(0) if self.is_real() else sp.Add(
                *[sp.Rational(c, self.d) * F._trig_of(k)[1] for c, k in terms])
            out = (sp.expand(re), sp.expand(im))
        F._sympy_cache[self.key] = out
        return out

    def _sparse_terms(self) -> list[tuple[int, int]]:
        """``[(c, k)]`` with ``x = sum c zeta^k / d`` and few terms: the canonical numerators of
        ``x zeta^-s`` shifted back by ``s``, for the ``s`` giving the fewest (``s = 0`` on ties).
        So ``zeta + zeta^-1`` prints as two cosines, not as a sum over the power basis."""
        F = self.F
        best = [(c, k) for k, c in enumerate(self.n) if c]
        if F.degree > SPARSE_SEARCH_DEGREE:
            return best
        for s in range(1, F.N):
            shifted = self * F.root(-s)
            terms = [(c, (k + s) % F.N) for k, c in enumerate(shifted.n) if c]
            if len(terms) < len(best):
                best = terms
        return best

    def __repr__(self) -> str:
        terms = [f"{c}*z^{k}" if k else f"{c}" for k, c in enumerate(self.n) if c]
        body = " + ".join(terms) or "0"
        return f"Cyc[{self.F.N}](({body})/{self.d})" if self.d != 1 else f"Cyc[{self.F.N}]({body})"


def imaginary_unit(F: CyclotomicField) -> Cyc:
    """:math:`i` in ``F`` (requires ``4 | N``)."""
    if F.N % 4:
        raise ValueError(f"i is not in {F}; use Q(zeta_lcm(N, 4))")
    return F.root(F.N // 4)

"""Exact Hadamard matrices for head dims that are not powers of two.

A head dim d = m_1 · ... · m_n · 2^k, each m_i in DENSE_ORDERS, gets the
rotation H_d = H_{m_1} ⊗ ... ⊗ H_{m_n} ⊗ H_{2^k} (entries ±1, H Hᵀ = d I):
the 2^k part is the fast Walsh-Hadamard transform, each m_i a dense ±1 stage.
The dense factors come from Paley's constructions (R. E. A. C. Paley, "On
orthogonal matrices", J. Math. Phys. 12, 1933):

  Paley I  (q prime, q ≡ 3 mod 4): order q + 1   — 12 from q = 11, 20 from q = 19
  Paley II (q prime, q ≡ 1 mod 4): order 2(q + 1) — 28 from q = 13

Coordinate i of the vector is the mixed-radix number (a_1, ..., a_n, b) with b
(the 2^k axis) fastest, so the m_i stage at position j acts on coordinates
stride_j = m_{j+1} · ... · m_n · 2^k apart.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

DENSE_ORDERS = (12, 20, 28)
# Fewest coordinates the 2^k axis may have: with 2^k >= 4 every dense stage's
# stride is a multiple of 4, and each stage's blocks fill whole SIMD registers.
MIN_POW2_AXIS = 4


def _is_prime(q: int) -> bool:
    return q > 1 and all(q % p for p in range(2, int(q ** 0.5) + 1))


def _jacobsthal(q: int) -> list[list[int]]:
    """Q[i][j] = χ(j - i), χ the quadratic character mod the prime q."""
    squares = {(x * x) % q for x in range(1, q)}
    chi = [0] + [1 if a in squares else -1 for a in range(1, q)]
    return [[chi[(j - i) % q] for j in range(q)] for i in range(q)]


def paley(m: int) -> list[list[int]]:
    """A Hadamard matrix of order m by Paley's construction I or II."""
    q = m - 1
    if _is_prime(q) and q % 4 == 3:
        jac = _jacobsthal(q)
        s = [[0] + [1] * q] + [[-1] + row for row in jac]  # skew: S + Sᵀ = 0
        return [[(1 if i == j else 0) + s[i][j] for j in range(m)] for i in range(m)]
    q = m // 2 - 1
    if m % 2 == 0 and _is_prime(q) and q % 4 == 1:
        jac = _jacobsthal(q)
        c = [[0] + [1] * q] + [[1] + row for row in jac]  # symmetric conference matrix
        plus, zero = ((1, 1), (1, -1)), ((1, -1), (-1, -1))
        return [[c[i // 2][j // 2] * plus[i % 2][j % 2] if c[i // 2][j // 2] else zero[i % 2][j % 2]
                 for j in range(m)] for i in range(m)]
    raise ValueError(f"no Paley construction of order {m}")


def is_hadamard(h: list[list[int]]) -> bool:
    m = len(h)
    return all(sum(h[i][t] * h[j][t] for t in range(m)) == (m if i == j else 0)
               for i in range(m) for j in range(m))


@dataclass(frozen=True)
class DenseStage:
    order: int                   # m
    stride: int                  # coordinates between neighbours along this axis
    matrix: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Rotation:
    """The structure of H_d: the 2^k FWHT axis, then the dense stages innermost first."""
    head_dim: int
    pow2: int                    # 2^k, the contiguous axis
    dense: tuple[DenseStage, ...]


def _factorizations(d: int):
    for n in range(0, 4):
        for orders in itertools.combinations_with_replacement(DENSE_ORDERS, n):
            prod = 1
            for m in orders:
                prod *= m
            if d % prod == 0:
                p = d // prod
                if p & (p - 1) == 0 and (not orders or p >= MIN_POW2_AXIS):
                    yield orders, p


def rotation(d: int) -> Rotation:
    """H_d for d, the factorization with the fewest dense operations; ValueError if none."""
    best = min(_factorizations(d), key=lambda f: sum(f[0]), default=None)
    if best is None:
        raise ValueError(f"head dim {d} is not m_1·...·m_n·2^k with each m_i in {{{', '.join(map(str, DENSE_ORDERS))}}} "
                         f"and 2^k >= {MIN_POW2_AXIS} (or a power of two)")
    orders, p = best
    stages, stride = [], p
    for m in reversed(orders):
        h = paley(m)
        assert is_hadamard(h), f"Paley construction of order {m} is not Hadamard"
        stages.append(DenseStage(m, stride, tuple(tuple(row) for row in h)))
        stride *= m
    return Rotation(d, p, tuple(stages))


def supported(d: int) -> bool:
    try:
        rotation(d)
        return True
    except ValueError:
        return False


def ops(rot: Rotation) -> str:
    """The operation count of one rotation, for the generated files' banners."""
    d, k = rot.head_dim, rot.pow2.bit_length() - 1
    text = f"{d * k} add/sub (FWHT)"
    if rot.dense:
        dense = sum(d * (s.order - 1) for s in rot.dense)
        text += f", {dense} add/sub ({' and '.join(f'{s.order}-point' for s in rot.dense)} Hadamard)"
    return text + f", {d} multiplies (signs with 1/sqrt(d) folded in)"

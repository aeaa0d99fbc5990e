#!/usr/bin/python3
"""Fits the CPU backend's tanh: tanh(x) = x P(x^2) / Q(x^2) for |x| <= CLAMP,
P of degree NP and Q of degree NQ in z = x^2, Q(0) = 1, near-minimax in
relative error. Loeb's linearisation (P - f Q = 0, weighted by the last
Q) with Lawson's reweighting towards equal ripple, in 40-digit arithmetic
(Debian's python3-mpmath); points clustered at both ends of [0, CLAMP].
Prints the relative error as fitted and with the coefficients rounded to
floats, and the coefficients as the float literals of
runtime/backend/cpu/VectorMathInline.h; the error after fp32
evaluation is bench/activation_accuracy's to measure (every float).

  scripts/fit-tanh.py [CLAMP NP NQ ITERATIONS]   (default 9.02 5 4 40)"""
import struct
import sys

import mpmath as mp


def as_float(value):
    return struct.unpack("f", struct.pack("f", float(value)))[0]


def fit(clamp, np_, nq, iterations, points=600):
    mp.mp.dps = 40
    xs = [clamp * (1 - mp.cos(mp.pi * (i + mp.mpf(1) / 2) / points)) / 2
          for i in range(points)]
    zs = [x * x for x in xs]
    target = [mp.tanh(x) / x for x in xs]
    weights = [mp.mpf(1)] * points
    last_q = [mp.mpf(1)] * points
    best = None
    for _ in range(iterations):
        rows, rhs = [], []
        for z, f, w, q in zip(zs, target, weights, last_q):
            scale = mp.sqrt(w) / (f * q)
            rows.append([scale * z**k for k in range(np_ + 1)] +
                        [-scale * f * z**k for k in range(1, nq + 1)])
            rhs.append(scale * f)
        solution, _ = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))
        p = [solution[k] for k in range(np_ + 1)]
        q = [mp.mpf(1)] + [solution[np_ + k] for k in range(1, nq + 1)]
        value = lambda c, z: sum(coefficient * z**k
                                 for k, coefficient in enumerate(c))
        errors = [(value(p, z) / value(q, z) - f) / f
                  for z, f in zip(zs, target)]
        worst = max(abs(e) for e in errors)
        if best is None or worst < best[0]:
            best = (worst, p, q)
        last_q = [value(q, z) for z in zs]
        weights = [w * abs(e) for w, e in zip(weights, errors)]
        total = sum(weights)
        weights = [w * points / total for w in weights]
    return best


def rounded_error(p, q, clamp, points=4000):
    """The largest relative error of x P(x^2) / Q(x^2) on a grid of (0, clamp],
    in exact arithmetic (the error of the coefficients alone)."""
    worst = mp.mpf(0)
    for i in range(1, points + 1):
        x = clamp * i / points
        z = x * x
        value = x * sum(c * z**k for k, c in enumerate(p)) / sum(
            c * z**k for k, c in enumerate(q))
        worst = max(worst, abs(value / mp.tanh(x) - 1))
    return worst


def main():
    args = sys.argv[1:] or ["9.02", "5", "4", "40"]
    clamp, np_, nq, iterations = (mp.mpf(args[0]), int(args[1]), int(args[2]),
                                  int(args[3]))
    worst, p, q = fit(clamp, np_, nq, iterations)
    print(f"relative error as fitted: {mp.nstr(worst, 4)}")
    rounded_p = [mp.mpf(as_float(c)) for c in p]
    rounded_q = [mp.mpf(as_float(c)) for c in q]
    print("relative error with the coefficients rounded to floats: "
          f"{mp.nstr(rounded_error(rounded_p, rounded_q, clamp), 4)}")
    for name, coefficients in (("kTanhP", p), ("kTanhQ", q)):
        literals = ", ".join(f"{as_float(c):.9e}f" for c in coefficients)
        print(f"constexpr float {name}[] = {{{literals}}};")


if __name__ == "__main__":
    main()

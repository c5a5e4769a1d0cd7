"""Fits the coefficients of fast_erf (autograd/cpu/rows/fast_math.h): erf(x) ~ x P(x^2) / Q(x^2).

    /usr/bin/python3 autograd/scripts/fit_erf.py

P has degree 6 and Q degree 4 in t = x^2 (Q's constant term 1), fitted on [0, 3.75]; above
3.75, erf(x) is within 1.2e-7 of 1 and fast_erf returns 1. The fit minimises the largest
absolute error, by Loeb's linearisation (P - erf Q = 0, weighted by the last fit's 1 / Q) and
Lawson's reweighting towards the points where the error is largest. It needs numpy only and
prints the coefficients as fast_math.h has them, highest power first, and the fit's own error
in float64; the error of the float32 evaluation (rounding, about 4e-7 near erf = 1) is what
tests/autograd/cpu/rows/test_fast_math_f32.cpp bounds. Other numpy versions may change the last
digits. Run once; the coefficients are committed.
"""
import math

import numpy as np

LIMIT = 3.75
P_TERMS, Q_TERMS = 7, 5  # t^0 .. t^6 and t^0 .. t^4


def main():
    x = np.linspace(0, LIMIT, 40001)[1:]
    target = np.array([math.erf(v) for v in x])
    t = x * x
    q_last = np.ones_like(x)
    weight = np.ones_like(x)
    best = None
    for iteration in range(120):
        # Unknowns: p_0 .. p_6, q_1 .. q_4. x P(t) - erf(x) Q(t) = 0 with q_0 = 1, over q_last.
        columns = [x * t**j / q_last for j in range(P_TERMS)]
        columns += [-target * t**j / q_last for j in range(1, Q_TERMS)]
        design = np.stack(columns, 1)
        scale = np.abs(design).max(0)  # columns of one size, for lstsq's conditioning
        solution, *_ = np.linalg.lstsq(design / scale * weight[:, None], target / q_last * weight, rcond=None)
        solution /= scale
        p, q = solution[:P_TERMS], np.concatenate([[1.0], solution[P_TERMS:]])
        q_last = sum(q[j] * t**j for j in range(Q_TERMS))
        error = x * sum(p[j] * t**j for j in range(P_TERMS)) / q_last - target
        worst = np.abs(error).max()
        if best is None or worst < best[0]:
            best = (worst, p, q)
        if iteration > 5:  # Lawson: more weight where the error is large
            weight = weight * np.sqrt(np.abs(error))
            weight = weight / weight.max() + 1e-12
    worst, p, q = best
    print("P (t^6 first):", ", ".join("%.9ef" % c for c in p[::-1]))
    print("Q (t^4 first):", ", ".join("%.9ef" % c for c in q[::-1]))
    print("largest error of the fit in float64 on [0, %g]: %.3g" % (LIMIT, worst))


if __name__ == "__main__":
    main()

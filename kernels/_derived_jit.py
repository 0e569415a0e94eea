"""The numba functions of :func:`kernels.hierarchy.check_derived`, at the top level of
their own module so that numba's on-disk cache (``cache=True``) finds them in a new
process: nested in a function, the one that called the other was compiled again in
every process (1.7 s per hierarchy loaded).  Imported on first use only (numba loads
slowly)."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def find(ptr, other, row, key):
    lo, hi = ptr[row], ptr[row + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if other[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < ptr[row + 1] and other[lo] == key:
        return lo
    return -1


@njit(cache=True)
def lightest(n, lv, up_ptr, up_head, up_w, down_ptr, down_tail, down_w, gu, gv, gw):
    """The lightest derivation of every hierarchy arc: the graph's arc between its ends,
    or an arc into and an arc out of a vertex of a larger level between them."""
    big = np.int64(1) << 62
    up_best = np.full(len(up_head), big, dtype=np.int64)
    down_best = np.full(len(down_tail), big, dtype=np.int64)
    for j in range(len(gu)):
        a, b = gu[j], gv[j]
        if lv[b] < lv[a]:
            k = find(up_ptr, up_head, a, b)
            if k >= 0 and gw[j] < up_best[k]:
                up_best[k] = gw[j]
        elif lv[b] > lv[a]:
            k = find(down_ptr, down_tail, b, a)
            if k >= 0 and gw[j] < down_best[k]:
                down_best[k] = gw[j]
    for x in range(n):
        for i in range(down_ptr[x], down_ptr[x + 1]):
            a = down_tail[i]
            w1 = np.int64(down_w[i])
            for o in range(up_ptr[x], up_ptr[x + 1]):
                b = up_head[o]
                if a == b:
                    continue
                c = w1 + np.int64(up_w[o])
                if lv[b] < lv[a]:
                    k = find(up_ptr, up_head, a, b)
                    if k >= 0 and c < up_best[k]:
                        up_best[k] = c
                elif lv[b] > lv[a]:
                    k = find(down_ptr, down_tail, b, a)
                    if k >= 0 and c < down_best[k]:
                        down_best[k] = c
    return up_best, down_best

"""Membership of integer keys in a set held as an array, in a few numpy calls.

np.isin and np.unique cost about 50 and 20 us a call on the host whatever the size, most of it
their own Python (checks, dispatch, a merge of both arrays); the controller calls them on tens
to hundreds of keys, many times a batch, and under the guest's TCG that fixed cost was a large
part of sorting out the requests in flight (results/live/ctlcpu.txt).  A sort of the set and a
binary search do the same for the sizes met here at a tenth of it.
"""
import numpy as np


def within(x, keys):
    """Which of `x` are among `keys` (both integer arrays), as np.isin(x, keys)."""
    if not len(keys) or not len(x):
        return np.zeros(len(x), bool)
    s = np.sort(keys)
    return s[np.minimum(np.searchsorted(s, x), len(s) - 1)] == x


def counted(x):
    """The distinct values of `x` (sorted) and how many times each occurs, as
    np.unique(x, return_counts=True)."""
    s = np.sort(x)
    first = np.flatnonzero(np.concatenate(([len(s) > 0], s[1:] != s[:-1])))
    return s[first], np.diff(np.append(first, len(s)))

"""Independent simulations on a pool of forked processes, with one line of progress on stderr."""
import multiprocessing
import os
import sys
import time


def run_all(fn, items, jobs=None, progress=None):
    """fn over items in parallel (jobs processes, default the number of cores); results in the
    order they finish.  progress(result) -> str, if given, labels the progress line after each."""
    out, t0 = [], time.time()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(max(1, min(jobs or os.cpu_count() or 1, len(items)))) as pool:
        for k, r in enumerate(pool.imap_unordered(fn, items), 1):
            out.append(r)
            if progress:
                print("\r[%s %d/%d] %5.0fs" % (progress(r), k, len(items), time.time() - t0),
                      end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return out

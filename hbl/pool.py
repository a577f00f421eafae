"""Independent simulations on a pool of forked processes, with their progress on stderr."""
import multiprocessing
import os

from hbl.progress import Progress


def each(fn, items, jobs=None, progress=None, what="simulate"):
    """fn over items in parallel (jobs processes, default the number of cores), each result
    yielded as it finishes.  progress(result) -> str, if given, labels the progress after each."""
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(max(1, min(jobs or os.cpu_count() or 1, len(items)))) as pool, \
            Progress(what, total=len(items), unit="runs", quiet=not progress) as bar:
        for r in pool.imap_unordered(fn, items):
            bar.update(note=progress(r) if progress else None)
            yield r


def run_all(fn, items, jobs=None, progress=None, what="simulate"):
    """fn over items in parallel (jobs processes, default the number of cores); results in the
    order they finish.  progress(result) -> str, if given, labels the progress after each."""
    return list(each(fn, items, jobs, progress, what))

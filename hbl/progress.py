"""Progress on stderr, the one way every command shows it.

On a terminal, a live bar drawn by tqdm. Anywhere else (a pipe, a log file, CI) a live bar
would pile up carriage returns, so a plain line at most every PLAIN_EVERY seconds, and one
closing line per stage. quiet shows nothing. stdout is never written: it carries the result.

    with Progress("simulate", total=len(jobs), quiet=a.quiet) as bar:
        for r in results:
            bar.update(note=r["policy"])
"""
import sys
import time

PLAIN_EVERY = 5.0    # seconds between two plain lines of one stage


class Progress:
    """One stage: done (of total, if known) with a rate; note labels the latest step.  unit names
    what is counted; a stage with a total always ends in a line, one without only when it was
    long enough to have shown one (a short pass over a trace says nothing)."""

    def __init__(self, what, total=None, unit="", initial=0, quiet=False, stream=None, clock=time.monotonic):
        self.what, self.total, self.unit, self.done = what, total, unit, initial
        self.initial, self.note, self.clock = initial, "", clock
        self.stream = stream or sys.stderr
        self.t0 = self.last = clock()
        self.lines, self.bar, self.closed = 0, None, quiet
        if quiet:
            return
        if _is_terminal(self.stream):
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=initial, desc=what, unit=" " + unit if unit else "it",
                            file=self.stream, dynamic_ncols=True, leave=True, mininterval=0.2,
                            unit_scale=not total)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n=1, note=None):
        if self.closed:
            return
        self.done += n
        if note is not None:
            self.note = note
        if self.bar is not None:
            if note is not None:
                self.bar.set_postfix_str(note, refresh=False)
            self.bar.update(n)
            return
        now = self.clock()
        if now - self.last >= PLAIN_EVERY:
            self.last = now
            self._line(now)

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self.bar is not None:
            self.bar.close()
        elif self.total is not None or self.lines:
            self._line(self.clock(), final=True)

    def _line(self, now, final=False):
        elapsed = now - self.t0
        count = "%d/%d" % (self.done, self.total) if self.total is not None else "%d" % self.done
        text = "%s: %s%s" % (self.what, count, " " + self.unit if self.unit else "")
        rate = (self.done - self.initial) / elapsed if elapsed > 0 else 0
        if final:
            text += " in %s" % duration(elapsed)
        else:
            text += ", %s/s, %s" % (_count(rate), duration(elapsed))
            if self.total and rate > 0:
                text += ", ETA %s" % duration((self.total - self.done) / rate)
        if self.note and not final:
            text += " (%s)" % self.note
        print(text, file=self.stream, flush=True)
        self.lines += 1


def chunks(source, what, quiet=False):
    """Pass the chunks of a trace through, counting their requests."""
    bar = Progress(what, unit="requests", quiet=quiet)
    try:
        for c in source:
            bar.update(len(c))
            yield c
    finally:
        bar.close()


def say(message, quiet=False):
    """A one-off message of a stage (not a result), on stderr."""
    if not quiet:
        print(message, file=sys.stderr, flush=True)


def duration(s):
    if s < 10:
        return "%.1fs" % s
    s = int(s + 0.5)
    if s < 60:
        return "%ds" % s
    return "%dh%02dm" % (s // 3600, s // 60 % 60) if s >= 3600 else "%dm%02ds" % (s // 60, s % 60)


def _count(x):
    return "%.0fk" % (x / 1e3) if x >= 1e4 else "%.1f" % x if x < 10 else "%.0f" % x


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False

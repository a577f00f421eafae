"""Errors a user can cause: the CLI prints them as one line, never a traceback."""


MESSAGE_MAX = 300


def show(text, width=40):
    """A value as quoted in an error message: a 1 MB field is not echoed whole."""
    t = str(text).strip()
    return repr(t if len(t) <= width else t[:width] + "...")


class HblError(Exception):
    """Bad input or configuration; the message says what and where."""


class TraceError(HblError):
    """A trace file that cannot be read: names the file and, where known, the line."""

    def __init__(self, path, message, line=None):
        self.path, self.line = str(path), line
        where = "%s:%d" % (path, line) if line is not None else str(path)
        if len(message) > MESSAGE_MAX:   # a message quoting input stays one readable line
            message = message[:MESSAGE_MAX] + "..."
        super().__init__("%s: %s" % (where, message))

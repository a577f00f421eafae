"""What hbl's command lines share (hbl/cli/ and the live device's, hbl/live/cli.py): the argparse
types of their values, and their JSON output, NaN and infinity as null (JSON has no spelling for
them). Below both, so neither imports the other for them."""
import argparse
import json
import math
import re
import sys

from hbl.errors import HblError, show


def whole(lo, hi):
    """An argparse type: a whole number in lo..hi, plain ASCII digits (no 1_000, +1, 1e3)."""
    def parse(text):
        t = text.strip()
        neg = t.startswith("-")
        digits = t[1:] if neg else t
        if not (digits.isascii() and digits.isdigit()):
            raise argparse.ArgumentTypeError("%s is not a whole number" % show(text))
        if len(digits) > 20 or not lo <= int(t) <= hi:
            raise argparse.ArgumentTypeError("%s is out of range (%d..%d)" % (show(text), lo, hi))
        return int(t)
    return parse


def number(hi, zero=False):
    """An argparse type: a finite number in (0, hi], or [0, hi] with zero."""
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%s is not a number" % show(text)) from None
        if not (math.isfinite(v) and (0 <= v if zero else 0 < v) and v <= hi):
            raise argparse.ArgumentTypeError("%s must be a finite number in %s0, %g]" % (
                show(text), "[" if zero else "(", hi))
        return v
    return parse


def positive(hi):
    return number(hi)


def nonnegative(hi):
    return number(hi, zero=True)


def page_size(text):
    v = whole(512, 64 << 20)(text)
    if v & (v - 1):
        raise argparse.ArgumentTypeError("%d is not a power of two" % v)
    return v


U32 = (1 << 32) - 1


def parse_duration(text):
    """'10s', '2m', '500ms', '1h' or plain seconds -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text or "")
    if not m:
        raise HblError("duration %r: give a number with an optional unit (500ms, 10s, 2m, 1h)" % text)
    return float(m.group(1)) * {"ms": 1e-3, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]


def finite(obj):
    """obj with every NaN or infinity as null: JSON has no spelling for them."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if hasattr(obj, "item"):      # NumPy scalars
        return finite(obj.item())
    return obj


def dump_json(obj, f, indent=2):
    json.dump(finite(obj), f, indent=indent, allow_nan=False)


def print_json(obj):
    dump_json(obj, sys.stdout)
    print()


def write_json(path, obj):
    with open(path, "w") as f:
        dump_json(obj, f, indent=1)

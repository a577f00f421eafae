"""The `hbl` command line: the top-level parser, each command group's parsers and commands (a module
each here; the live device's in hbl/live/cli.py), and the one style of every error."""
import argparse
import sys

from hbl import __version__
from hbl.cli import agents, bench, compare, devices, simulate, traces, vm, workloads
from hbl.cli.options import EPILOG_TRACES
from hbl.cli.vm import vm_command_line  # noqa: F401 (tests/test_vm.py)
from hbl.errors import HblError


class Parser(argparse.ArgumentParser):
    """Usage errors in the one style of every other error: one line, exit status 2."""

    def error(self, message):
        print("hbl: error: %s (see %s --help)" % (message, self.prog), file=sys.stderr)
        sys.exit(2)


def build_parser():
    p = Parser(
        prog="hbl", description="hbl: a hybrid block layer with learned data placement and migration. "
        "Replay block traces through a simulated hybrid storage system and compare placement and "
        "migration policies.", epilog=EPILOG_TRACES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version="hbl " + __version__)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    simulate.add_parsers(sub)
    compare.add_parsers(sub)
    traces.add_parsers(sub)
    vm.add_parsers(sub)
    workloads.add_parsers(sub)
    from hbl.live.cli import add_parsers as live_parsers
    live_parsers(sub)
    agents.add_parsers(sub)
    devices.add_parsers(sub)
    bench.add_parsers(sub)
    _describe(p)
    return p


def _describe(parser):
    """A (sub)command added with a help line but no description shows that line atop its own --help
    (else `hbl top --help` says nothing of what top does)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for line in action._choices_actions:
                child = action.choices[line.dest]
                if child.description is None and line.help:
                    child.description = line.help[0].upper() + line.help[1:] + "."
                _describe(child)


def _innermost(parser, a):
    """The parser of the innermost (sub)command `a` names (hbl vm build's, not hbl vm's): an unknown
    argument is its usage error, its --help the one to see."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            child = action.choices.get(getattr(a, action.dest, None))
            if child is not None:
                return _innermost(child, a)
    return parser


def main(argv=None):
    parser = build_parser()
    a, extra = parser.parse_known_args(argv)
    if extra:   # hbl vm test / run pass what they do not know to pytest / the guest command
        if a.command == "vm" and a.vm_command == "test":
            a.pytest_args = list(extra) + list(a.pytest_args)
        elif a.command == "vm" and a.vm_command == "run":
            a.cmd = list(a.cmd) + list(extra)
        else:
            _innermost(parser, a).error("unrecognized arguments: %s" % " ".join(extra))
    if not a.command:
        parser.print_help()
        return 2
    try:
        return a.func(a)
    except HblError as exc:
        print("hbl: error: %s" % exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hbl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:      # device-mapper refusals carry their own message
        from dmsetup.device import DmError
        from dmsetup.ioctl import DmIoctlError
        if isinstance(exc, (DmError, DmIoctlError)):
            print("hbl: error: %s" % exc, file=sys.stderr)
            return 2
        raise

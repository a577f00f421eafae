"""The documentation against the tree: every relative link in README.md, docs/*.md and the results'
READMEs leads to a file (and heading) that exists, every `hbl` command they name exists in the
parsers and takes every option shown with it, every script they name exists, and docs/cli.md is
what scripts/gen_cli_docs.py writes."""
import functools
import glob
import os
import re
import sys

import pytest

from helpers import script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted([os.path.join(ROOT, "README.md"), os.path.join(ROOT, "scripts", "README.md")] +
               glob.glob(os.path.join(ROOT, "docs", "*.md")) +
               glob.glob(os.path.join(ROOT, "results", "**", "README.md"), recursive=True))

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)
# `hbl WORD` where hbl is the command: at the start of a code line or span (after a prompt, sudo,
# VAR=value and a path such as .venv/bin/ or ./scripts/), after a quote or a parenthesis, after
# `hbl vm run --`, or after a shell operator; elsewhere (a comment, a sentence) it is a word
COMMAND = re.compile(r"(?:^[ \t]*(?:\$ )?(?:sudo )?(?:\w+=\S* )*(?:[\w.~-]*/)*|[`\"'(]|-- |[;&|] ?)"
                     r"hbl((?:[ \t]+[a-z][\w-]*)+)", re.M)


def gen_cli_docs():
    return script("gen_cli_docs")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def prose(text):
    """The text outside code blocks and code spans (links there are not links)."""
    return SPAN.sub("", FENCE.sub("", text))


def code(text):
    """The code blocks and code spans of a page."""
    blocks = [m.group(0) for m in FENCE.finditer(text)]
    return blocks + [s[1:-1] for s in SPAN.findall(FENCE.sub("", text))]


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)          # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.replace("`", "").lower())
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for h in HEADING.findall(FENCE.sub("", read(path))):
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


def links(path):
    for target in LINK.findall(prose(read(path))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):      # http:, https:, mailto:
            continue
        yield target


def test_the_pages_are_found():
    names = {os.path.relpath(p, ROOT) for p in PAGES}
    assert {"README.md", "docs/index.md", "docs/cli.md", "docs/where-to-change.md", "results/README.md"} <= names
    assert len([n for n in names if n.startswith("results/")]) >= 10


def test_every_script_is_in_the_scripts_index():
    """scripts/README.md names every file of scripts/ (a new script gets its row)."""
    index = read(os.path.join(ROOT, "scripts", "README.md"))
    listed = set(re.findall(r"\]\(([\w.-]+)\)", index))
    files = {f for f in os.listdir(os.path.join(ROOT, "scripts"))
             if f != "README.md" and not f.startswith((".", "__")) and os.path.isfile(os.path.join(ROOT, "scripts", f))}
    assert files - listed == set(), "scripts/README.md lists no row for %s" % ", ".join(sorted(files - listed))


def test_the_readme_is_a_front_door():
    assert len(read(os.path.join(ROOT, "README.md")).splitlines()) <= 300


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_relative_link_resolves(page):
    bad = []
    for target in links(page):
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(dest):
            bad.append("%s: no such file" % target)
            continue
        if frag:
            if not dest.endswith(".md"):
                bad.append("%s: an anchor into a file that is not markdown" % target)
            elif frag not in anchors(dest):
                bad.append("%s: no heading with that anchor in %s" % (target, os.path.relpath(dest, ROOT)))
    assert not bad, bad


@functools.lru_cache(maxsize=None)
def known_commands():
    gen = gen_cli_docs()
    return {words[1:] for words, _ in gen.commands(gen.parser())}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_hbl_command_named_exists(page):
    known = known_commands()
    groups = {c[0] for c in known if len(c) == 2}          # vm, workloads: their action must exist too
    bad = []
    for snippet in code(read(page)):
        for m in COMMAND.finditer(snippet):
            words = tuple(m.group(1).split())
            if (words[0],) not in known:
                bad.append("hbl " + " ".join(words[:2]))
            elif words[0] in groups and len(words) > 1 and words[:2] not in known:
                bad.append("hbl " + " ".join(words[:2]))
    assert not bad, bad


# an option a command line names: up to the end of the line or span, a comment, a shell operator,
# `--` (what follows `hbl vm run --` is the guest's command) or a run of spaces (a help epilog's
# example, then what it does)
OPTION = re.compile(r"(?<![\w-])--[a-z][\w-]*")
END = re.compile(r"\s#|\s\s|[;|&)]|\s--(?:\s|$)")


def options_named(snippet):
    """(command words, option) for every `--option` a command of the snippet names."""
    for m in COMMAND.finditer(snippet):
        rest = END.split(snippet[m.end():].split("\n")[0])[0]
        for opt in OPTION.findall(rest):
            yield tuple(m.group(1).split()), opt


@functools.lru_cache(maxsize=None)
def command_options():
    """command words -> the option strings its parser takes."""
    gen = gen_cli_docs()
    # argparse has no public way to list a parser's options (gen_cli_docs.commands reads _actions too)
    return {words[1:]: {s for a in p._actions for s in a.option_strings} for words, p in gen.commands(gen.parser())}


def unknown_options(text):
    """`hbl WORDS --option` in the text's code where WORDS's parser has no such option."""
    table = command_options()
    bad = []
    for snippet in code(text):
        for words, opt in options_named(snippet):
            cmd = max((words[:n] for n in range(1, len(words) + 1) if words[:n] in table), key=len, default=None)
            if cmd is not None and opt not in table[cmd]:
                bad.append("hbl %s %s" % (" ".join(cmd), opt))
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_option_named_exists(page):
    """An option shown with a command is one its parser takes (a renamed option leaves none behind)."""
    bad = unknown_options(read(page))
    assert not bad, bad


SCRIPT = re.compile(r"(?<![\w-])scripts/([\w.-]*\w)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_script_named_exists(page):
    """A `scripts/NAME` a page names (NAME in capitals is a placeholder) is a file there, and so,
    by test_every_script_is_in_the_scripts_index, has its row."""
    bad = sorted({n for n in SCRIPT.findall(read(page))
                  if not n.split(".")[0].isupper() and not os.path.exists(os.path.join(ROOT, "scripts", n))})
    assert not bad, bad


def test_the_checks_catch_what_they_are_for(tmp_path):
    # the extraction itself: a link in code is not a link, a command in prose is not a command
    page = ("See [a](a.md#x) and `[b](b.md)`, `sudo hbl workloads nope`.\n```sh\nhbl simulate --trace t\n"
            "sudo .venv/bin/hbl vm nope  # then hbl smq runs\n```\nhbl is")
    assert LINK.findall(prose(page)) == ["a.md#x"]
    found = [tuple(m.group(1).split()) for s in code(page) for m in COMMAND.finditer(s)]
    assert found == [("simulate",), ("vm", "nope"), ("workloads", "nope")]
    assert ("vm", "nope") not in known_commands() and ("vm", "test") in known_commands()
    # an option that no longer exists is caught; a comment, a pipe or the guest's command is not an option
    assert unknown_options("`hbl simulate --trace t --no-such-option`") == ["hbl simulate --no-such-option"]
    assert unknown_options("```sh\nhbl simulate --trace t   # --not-this\nhbl vm run -- ls --all | grep --x\n```") == []
    assert unknown_options("`sudo hbl vm test --help -k live`") == []
    assert SCRIPT.findall("run scripts/simcheck.py, ./scripts/test and ../scripts/nope.py.") == ["simcheck.py", "test", "nope.py"]
    assert slug("The protocol of a batch") == "the-protocol-of-a-batch"
    assert slug("Live capture with eBPF (`hbl trace`)") == "live-capture-with-ebpf-hbl-trace"


def test_cli_reference_is_what_the_script_writes():
    gen = gen_cli_docs()
    committed = read(gen.OUT)
    made = gen.version_of(committed)
    if made and made != sys.version_info[:2]:
        pytest.skip("docs/cli.md was generated with Python %d.%d, whose argparse lays help out differently" % made)
    assert committed == gen.render(), "docs/cli.md is stale: run .venv/bin/python scripts/gen_cli_docs.py"

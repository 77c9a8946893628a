"""The documentation (README.md, docs/) builds, and the commands it shows run.

- ``mkdocs build --strict`` succeeds (mkdocs.yml turns broken links and anchors
  into warnings, which --strict makes errors); skipped where mkdocs is not
  installed (the ``docs`` extra).
- Every command in a ``sh``, ``bash`` or ``console`` code block that starts with
  ``shmrma-run``, ``shmrma-bench`` or ``python`` (after ``VAR=value``
  assignments; a line of several commands joined by ``&&`` counts each) runs from
  the repository's root with the exit status the page gives:

  * 0, unless the line says ``# exits N``;
  * in a ``console`` block, a command ending in ``; echo "exit status $?"`` must
    exit with the status the transcript shows on its ``exit status N`` line;
  * in a ``console`` block, every line of the transcript's output must appear in
    what the command printed (stdout and stderr; in any order, since ranks print
    concurrently), except lines with ``...``, which elide.

  Installing (pip, venv, activate) and the test suite itself are not run. Tools
  that take minutes (``shmrma-bench compare``, ``tools/*.py``,
  ``benchmarks/*.py``) run with ``--help`` appended instead, which checks the
  options given before it; commands that need mpi4py, an ``mpiexec`` or
  matplotlib (``shmrma-bench timeline``) are skipped where those are missing.
- Every file of the repository that the pages name (``scripts/...``,
  ``docs/examples/...``, ``tools/...``, ``benchmarks/...``) exists, and so do the
  README's relative links.
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
SHELL_LANGUAGES = ("sh", "bash", "console")
RUN_FIRST_WORDS = ("shmrma-run", "shmrma-bench", "python", "python3")
COMMAND_TIMEOUT_S = 60
BIN = os.path.dirname(sys.executable)

# Commands that take minutes: checked with --help appended (argparse checks the
# options before it), not run.
SLOW = (re.compile(r"^shmrma-bench compare\b"),
        re.compile(r"^python3? (tools|benchmarks)/\S+\.py\b"))
# Not run at all: installing, and the test suite (this file is part of it).
NOT_RUN = re.compile(r"^(python3? -m (pip|venv|pytest)\b|pip\b|\. |source )")
EXITS = re.compile(r"#.*\bexits (\d+)\b")
ECHO_STATUS = re.compile(r';\s*echo "exit status \$\?"\s*$')
TRANSCRIPT_STATUS = re.compile(r"^exit status (\d+)$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
REPO_PATH = re.compile(r"(?<![\w/.-])((?:scripts|docs/examples|tools|benchmarks)/[\w./-]*\w)")


def code_blocks(path):
    """(language, first line number, lines) of every fenced code block of a page."""
    blocks, language, start, body = [], None, 0, []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fence = re.match(r"^\s*```(\S*)\s*$", line)
        if fence and language is None:
            language, start, body = fence.group(1) or "text", number + 1, []
        elif fence:
            blocks.append((language, start, body))
            language = None
        elif language is not None:
            body.append(line)
    return blocks


class Command:
    """One command a page shows, with what the page says of its outcome."""

    def __init__(self, page, line, text, status=0, output=()):
        self.page, self.line, self.text = page, line, text
        self.status, self.output = status, list(output)

    @property
    def where(self):
        return "%s:%d" % (self.page.relative_to(ROOT), self.line)

    def __repr__(self):
        return "%s: %s" % (self.where, self.text)


def _split(line):
    """The commands of one shell line: its comment off, its `&&` parts apart."""
    code = line
    for match in re.finditer(r"(?:^|\s)#", line):
        try:
            shlex.split(line[:match.start()])
        except ValueError:
            continue            # the '#' is inside quotes
        code = line[:match.start()]
        break
    return [part.strip() for part in code.split("&&") if part.strip()]


def page_commands():
    """Every command of every page's shell and console blocks."""
    found = []
    for page in PAGES:
        for language, start, body in code_blocks(page):
            if language not in SHELL_LANGUAGES:
                continue
            if language == "console":
                found += _console_commands(page, start, body)
                continue
            for offset, line in enumerate(body):
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                exits = EXITS.search(line)
                for part in _split(line):
                    found.append(Command(page, start + offset, part,
                                         int(exits.group(1)) if exits else 0))
    return found


def _console_commands(page, start, body):
    commands, current = [], None
    for offset, line in enumerate(body):
        if line.startswith("$ "):
            current = Command(page, start + offset, line[2:].strip())
            commands.append(current)
        elif current is not None:
            current.output.append(line)
    for command in commands:
        exits = EXITS.search(command.text)
        if exits:
            command.status = int(exits.group(1))
            command.text = command.text[:command.text.index("#")].strip()
        if ECHO_STATUS.search(command.text):
            command.text = ECHO_STATUS.sub("", command.text)
            shown = [TRANSCRIPT_STATUS.match(line.strip()) for line in command.output]
            shown = [m for m in shown if m]
            assert shown, "%s: the transcript shows no 'exit status N' line" % command.where
            command.status = int(shown[-1].group(1))
            command.output = [line for line in command.output
                              if not TRANSCRIPT_STATUS.match(line.strip())]
    return commands


def _first_word(text):
    words = text.split()
    while words and ASSIGNMENT.match(words[0]):
        words.pop(0)
    return words[0] if words else ""


def runnable(command):
    """(how to run it: "run", "help" or None, why not when None)."""
    text = command.text
    bare = " ".join(w for w in text.split() if not ASSIGNMENT.match(w)) if text else ""
    if NOT_RUN.match(bare) or _first_word(text) not in RUN_FIRST_WORDS:
        return None, "not a shmrma or python command, or an install"
    if any(pattern.match(bare) for pattern in SLOW):
        return "help", None
    if "--backend mpi" in bare or "--impl mpi4py" in bare or "--impl shmrma-mpi" in bare:
        if not (os.access(os.path.join(BIN, "mpiexec"), os.X_OK) or shutil.which("mpiexec")):
            return None, "needs an mpiexec (pip install -e '.[mpi]')"
    if bare.startswith("shmrma-bench timeline"):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return None, "needs matplotlib (pip install -e '.[plot]')"
    if "mpi4py" in bare and "--no-mpi4py-alias" not in bare:
        try:
            import mpi4py  # noqa: F401
        except ImportError:
            return None, "needs mpi4py installed"
    return "run", None


COMMANDS = page_commands()


def _environment():
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"]
                                     if env.get("PYTHONPATH") else "")
    env.pop("SHMRMA_CHECK", None)
    env.pop("SHMRMA_BACKEND", None)
    return env


def test_pages_show_commands():
    """The parser finds the commands (a broken fence would hide them all)."""
    ran = [c for c in COMMANDS if runnable(c)[0] == "run"]
    assert len(ran) >= 20, COMMANDS
    assert any(c.page.name == "README.md" for c in ran)
    assert any(c.status not in (0, None) for c in ran), "no command expected to fail"


@pytest.mark.timeout(300)
def test_docs_commands_run():
    """Every command the pages show runs, with the status and output they show."""
    env = _environment()
    failures, skipped = [], []
    for command in COMMANDS:
        how, why = runnable(command)
        if how is None:
            skipped.append((command, why))
            continue
        text = command.text + (" --help" if how == "help" else "")
        try:
            done = subprocess.run(text, shell=True, executable="/bin/bash", cwd=ROOT,
                                  env=env, capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            failures.append("%s\n  did not end within %d s" % (command, COMMAND_TIMEOUT_S))
            continue
        want = 0 if how == "help" else command.status
        printed = {line.strip() for line in (done.stdout + done.stderr).splitlines()}
        missing = [line for line in command.output
                   if line.strip() and "..." not in line and line.strip() not in printed]
        if done.returncode != want or (how == "run" and missing):
            failures.append("%s\n  exit status %d, the page says %d%s\n  stdout: %s\n"
                            "  stderr: %s" % (
                                command, done.returncode, want,
                                "".join("\n  not printed: %s" % m for m in missing),
                                done.stdout[-2000:], done.stderr[-2000:]))
    assert not failures, "\n\n".join(failures)


def test_named_files_exist():
    """Every repository file a page names, and every relative link of the README."""
    missing = []
    for page in PAGES:
        text = page.read_text()
        for match in REPO_PATH.finditer(text):
            path = match.group(1).rstrip(".")
            if "*" in path or path.endswith("/"):
                continue
            if not (ROOT / path).exists():
                missing.append("%s names %s" % (page.relative_to(ROOT), path))
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme):
        if "://" not in target and not (ROOT / target).exists():
            missing.append("README.md links to %s" % target)
    assert not missing, "\n".join(missing)


def test_docs_build_strict(tmp_path):
    """mkdocs build --strict: no broken link, anchor or page (mkdocs.yml)."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: "
                        "pip install -e '.[docs]' to build the documentation")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()

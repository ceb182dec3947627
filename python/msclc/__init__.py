"""msclc from Python: compile, list, check, simulate and time .mscl programs.

Every function runs the ``msclc`` command this package installed beside
it, so a plan made from Python is the plan the command line writes, and a
mistake raises :class:`MsclcError` with the diagnostic the command prints.

    >>> import msclc
    >>> plan = msclc.compile("examples/simple_allgather.mscl", num_gpus=4)
    >>> msclc.sim("examples/simple_allgather.mscl")["verified"]
    True

A ``source`` is a path to a ``.mscl`` program or a ``.json`` plan, or the
text of a program or of a JSON plan (imports in a program given as text
are found from the current directory). Keyword parameters set the program's ``param``s, as
``-D NAME=VALUE`` does: ints, bools, strings, and the named constants
(``protocol="LL"``) by name.
"""

import contextlib
import json
import os
import re
import shutil
import numbers
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Union

__all__ = [
    "Diagnostic",
    "MsclcError",
    "MsclcWarning",
    "binary",
    "check",
    "compile",
    "ops",
    "params",
    "sim",
    "timing",
    "tune",
    "version",
]

Source = Union[str, "os.PathLike[str]"]


@dataclass
class Diagnostic:
    """One problem msclc reported: its severity ("error" or "warning"),
    code (``E0103``), message, place in the program where it has one, and
    the notes under it (loop values, help)."""

    severity: str
    code: str
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    notes: List[str] = field(default_factory=list)


class MsclcError(Exception):
    """msclc refused the program, plan or request. ``str(error)`` is the
    rendered diagnostic the command line prints; ``exit_code`` is its exit
    status (1: the program or plan is wrong, 2: msclc could not do what
    was asked; negative where a signal ended it, as ``subprocess`` says
    it: -9 for a SIGKILL); ``diagnostics`` the problems, structured; and
    for :func:`timing`, ``rows`` the table printed all the same."""

    def __init__(
        self,
        text: str,
        exit_code: int,
        diagnostics: List[Diagnostic],
        rows: Optional[List[Dict]] = None,
    ):
        super().__init__(text)
        self.text = text
        self.exit_code = exit_code
        self.diagnostics = diagnostics
        #: For :func:`timing`: the table the command printed for a plan it
        #: found wrong (a race; empty where it printed none); ``None`` for
        #: an error before the simulation, and from the other functions.
        self.rows = rows

    def __reduce__(self):
        # Raised in a worker process (multiprocessing, concurrent.futures),
        # the error is pickled to reach the parent: whole, as it was made.
        return (type(self), (self.text, self.exit_code, self.diagnostics, self.rows))


class MsclcWarning(UserWarning):
    """A warning the command printed while it made a plan (``W0502``: the
    executor refuses the plan, ...): :func:`compile` issues one per
    warning, with Python's ``warnings``. ``diagnostic`` is it,
    structured."""

    def __init__(self, diagnostic: "Diagnostic"):
        place = ""
        if diagnostic.file is not None:
            place = f"{diagnostic.file}:{diagnostic.line}:{diagnostic.column}: "
        notes = "".join(f"\n  = {n}" for n in diagnostic.notes)
        super().__init__(f"{place}warning[{diagnostic.code}]: {diagnostic.message}{notes}")
        self.diagnostic = diagnostic

    def __reduce__(self):
        return (type(self), (self.diagnostic,))


def binary() -> str:
    """The msclc command this module runs: ``MSCLC_BINARY`` if set, else
    the one installed with this package, else the first on the PATH."""
    named = os.environ.get("MSCLC_BINARY")
    if named:
        return named
    installed = Path(sysconfig.get_path("scripts")) / "msclc"
    if installed.is_file():
        return str(installed)
    found = shutil.which("msclc")
    if found:
        return found
    raise MsclcError(
        "the msclc command is not installed: `pip install .` in the msclc repository,"
        " or set MSCLC_BINARY to the command",
        2,
        [],
    )


def compile(source: Source, output: Optional[Source] = None, **params) -> str:
    """The MSCCL++ JSON execution plan of ``source``, as text; written to
    ``output`` too when given (whole or not at all, as ``msclc -o``
    writes; ``"-"``, as there, is no file; a folder, a name ending in
    ``/`` or a missing folder raises :class:`MsclcError`). Each warning
    the command prints is issued as an :class:`MsclcWarning` at the
    caller's line."""
    target = None if output is None else _path_text(output, "output")
    if target == "-":
        target = None
    device = target is not None and os.path.exists(target) and not (
        os.path.isfile(target) or os.path.isdir(target)
    )
    if target is not None and not device:
        # A file: the command writes it, as `msclc -o` does, and says what
        # is wrong with the name (a folder, a missing folder, "").
        args = _defines(params) + ["-o", _not_an_option(target)]
        _warn(_run(["compile"], source, args).stderr)
        try:
            with open(target, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise MsclcError(f"msclc wrote no plan to {target}: {e}", 2, []) from None
    out = _run(["compile"], source, _defines(params))
    if not out.stdout:
        raise MsclcError("msclc printed no plan", 2, [])
    _warn(out.stderr)
    if device:
        # A device or a pipe (`/dev/null`): written into as it is.
        try:
            with open(target, "w", encoding="utf-8") as f:
                f.write(out.stdout)
        except OSError as e:
            raise MsclcError(f"cannot write the plan to {target}: {e}", 2, []) from None
    return out.stdout


def ops(source: Source, **params) -> str:
    """The plan's ops listed to read, as ``msclc --emit ops`` lists them:
    per rank and thread block, each op with the program line and loop
    values that made it (a JSON plan's without them). Each warning the
    command prints is issued as an :class:`MsclcWarning`, as by
    :func:`compile`."""
    out = _run(["compile"], source, _defines(params) + ["--emit", "ops"])
    _warn(out.stderr)
    return out.stdout


def _warn(stderr: str) -> None:
    """Issues each warning the command printed as an :class:`MsclcWarning`,
    attributed to the first caller outside this package (the user's line
    that called :func:`compile`, or ``msclc.mscclpp.plan``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(0), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame, level = frame.f_back, level + 1
    for d in _diagnostics(stderr):
        if d.severity == "warning":
            warnings.warn(MsclcWarning(d), stacklevel=level)


def params(source: Source) -> List[Dict]:
    """The ``param``s ``source`` declares, in order: each a dict with
    ``name``, ``type`` (``int``, ``bool``, ``str``, ``protocol``, ...) and
    ``default`` (as written in the program), and ``values`` where it lists
    the values it may take (``in [1, 2, 4]``)."""
    out = _run(["check"], source, ["--params"])
    return _json(out.stdout)


def version() -> str:
    """The version of the msclc command, as ``msclc --version`` says it."""
    out = _command([binary(), "--version"])
    if out.returncode != 0:
        raise MsclcError(_failure_text(out), out.returncode, [])
    words = out.stdout.split()
    if not words:
        raise MsclcError(f"{binary()} --version printed nothing", 2, [])
    return words[-1]


def check(source: Source, **params) -> List[Diagnostic]:
    """Runs every stage but the back end; returns the warnings, raises
    :class:`MsclcError` on an error."""
    out = _run(["check"], source, _defines(params))
    return _diagnostics(out.stderr)


def sim(
    source: Source,
    nranks: Optional[int] = None,
    buffers: Optional[str] = None,
    **params,
) -> Dict:
    """Executes the plan on the CPU, as ``msclc sim --json`` does: a dict
    with ``verified``, and per buffer mode run its ``verdict``,
    ``problems`` (each with ``code``, ``message`` and ``locations``) and
    ``warnings``. A wrong plan is a verdict, not an exception."""
    args = ["--json"] + _defines(params)
    if nranks is not None:
        args += ["--nranks", _count_text(nranks, "nranks")]
    if buffers is not None:
        args += [f"--buffers={_text(buffers, 'buffers')}"]
    out = _run(["sim"], source, args, wrong_is_result=True, json_out=True)
    return out.value


def timing(
    source: Source,
    topology: str = "h100-nvlink",
    sizes: str = "1K:1G",
    dtype: Optional[str] = None,
    nranks: Optional[int] = None,
    **params,
) -> List[Dict]:
    """The predicted table of ``msclc sim --timing``: one dict per size
    with ``size``, ``count``, ``type``, ``redop``, ``time_us``,
    ``algbw_gbps`` and ``busbw_gbps``. A plan the simulator finds wrong
    raises :class:`MsclcError` (exit code 1), with the table the command
    printed all the same (a race) as its ``rows``."""
    args = [_topology(topology), f"--size={_text(sizes, 'sizes')}"]
    args += _defines(params)
    if dtype is not None:
        args += [f"--dtype={_text(dtype, 'dtype')}"]
    if nranks is not None:
        args += ["--nranks", _count_text(nranks, "nranks")]
    out = _run(["sim"], source, args, wrong_is_result=True, report_on_stdout=True)
    rows = _rows(out.stdout)
    if out.returncode != 0:
        report = _stdout_report(out) + out.stderr
        report = report.rstrip("\n")
        raise MsclcError(report, out.returncode, _diagnostics(report), rows)
    return rows


def _stdout_report(out: subprocess.CompletedProcess) -> str:
    """The simulator's report, which comes before the predicted table on
    standard output."""
    return out.stdout.split("\n# predicted", 1)[0]


def _rows(stdout: str) -> List[Dict]:
    """The rows of a predicted table."""
    rows = []
    for line in stdout.splitlines():
        f = line.split()
        if len(f) == 8 and f[0].isdigit():
            rows.append(
                {
                    "size": int(f[0]),
                    "count": int(f[1]),
                    "type": f[2],
                    "redop": f[3],
                    "time_us": float(f[5]),
                    "algbw_gbps": float(f[6]),
                    "busbw_gbps": float(f[7]),
                }
            )
    return rows


def tune(
    source: Source,
    topology: str,
    sizes: str,
    output: Optional[Source] = None,
    vary: Optional[Dict[str, List]] = None,
    max_candidates: Optional[int] = None,
    within: Optional[float] = None,
    nranks: Optional[int] = None,
    dtype: Optional[str] = None,
    **params,
) -> Dict:
    """``msclc tune`` (docs/tuning.md): the plan set fastest across
    ``sizes`` on ``topology``, written to ``output`` when given. Returns
    its index (the plans' files, message-size ranges, params and predicted
    times, and the candidates dropped with their reasons). ``vary`` maps a
    param to the values to try (a list); keyword params are set, not
    varied. When no candidate verifies at some size, raises
    :class:`MsclcError` (E0606)."""
    with tempfile.TemporaryDirectory(prefix="msclc-tune-") as scratch:
        folder = _path_text(output, "output") if output is not None else os.path.join(scratch, "tuned")
        args = [_topology(topology), f"--size={_text(sizes, 'sizes')}"]
        args += ["-o", folder, "--quiet"] + _defines(params)
        if vary is not None and not isinstance(vary, dict):
            raise TypeError(f"vary is {vary!r}: give a dict of a param's name to the values to try")
        for name, values in (vary or {}).items():
            if not isinstance(name, str) or not name.isidentifier():
                raise TypeError(f"vary names {name!r}, which is not a param's name")
            if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, range)):
                raise TypeError(f"vary[{name!r}] is {values!r}: give the values to try as a list")
            if not values:
                raise ValueError(f"vary[{name!r}] is empty: give at least one value to try")
            texts = [_define_text(v) for v in values]
            if any("," in t for t in texts):
                raise ValueError(f"vary[{name!r}]: a value holds a comma, which --vary reads as two")
            args += ["--vary", f"{name}={','.join(texts)}"]
        if max_candidates is not None:
            args += ["--max-candidates", _count_text(max_candidates, "max_candidates")]
        if within is not None:
            if isinstance(within, bool) or not isinstance(within, (int, float)):
                raise TypeError(f"within is {within!r}: give a percentage, a number (5 for 5%)")
            args += ["--within", str(within)]
        if nranks is not None:
            args += ["--nranks", _count_text(nranks, "nranks")]
        if dtype is not None:
            args += [f"--dtype={_text(dtype, 'dtype')}"]
        args[args.index("-o") + 1] = _not_an_option(folder)
        with _source_file(source) as shown:
            _run_file(["tune"], shown, args)
            index_path = os.path.join(folder, "index.json")
            try:
                with open(index_path, encoding="utf-8") as f:
                    index = _json(f.read())
            except OSError as e:
                raise MsclcError(f"msclc tune wrote no index in {folder}: {e}", 2, []) from None
            if shown.shown != shown.path and output is not None:
                # The files kept name the program as what comes back does,
                # not the hidden file it was in while the command ran.
                _rename_in_results(folder, shown)
            return shown.restore(index)


def _rename_in_results(folder: str, shown: "_Shown") -> None:
    """Rewrites tune's ``index.json`` and ``busbw.svg`` in ``folder`` with
    the source named as ``shown`` names it (each replaced whole)."""
    index_path = os.path.join(folder, "index.json")
    with open(index_path, encoding="utf-8") as f:
        index = shown.restore(json.load(f))
    _write_whole(index_path, json.dumps(index, indent=2, ensure_ascii=False) + "\n")
    picture = os.path.join(folder, "busbw.svg")
    if os.path.isfile(picture):
        with open(picture, encoding="utf-8") as f:
            svg = f.read()
        for written in {_xml_text(shown.path, quotes) for quotes in (False, True)}:
            svg = svg.replace(written, _xml_text(shown.shown, False))
        _write_whole(picture, svg)


def _xml_text(text: str, quotes: bool) -> str:
    """``text`` as SVG text holds it (``quotes``: as an attribute does)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;") if quotes else text


def _write_whole(path: Source, text: str) -> None:
    """Writes ``path`` whole or not at all: a temporary file of this
    writer's own beside it (ranks or threads writing at once each have
    one), on disk before it is renamed over the path; a file that was
    there keeps its permissions, a new one gets those the umask leaves
    (``mkstemp`` makes its file for its owner alone)."""
    path = os.fspath(path)
    name = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    """The process's umask: as Linux reports it, else read by setting it
    and setting it back (which another thread could see for a moment)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _define_text(value) -> str:
    """A Python value as ``-D`` writes it: a bool, an int or a string (a
    named constant by its name); anything else is no param's value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    raise TypeError(f"{value!r}: a param is set to an int, a bool or a string")


def _defines(params: Dict) -> List[str]:
    args = []
    for name, value in params.items():
        if not name.isidentifier():
            raise TypeError(f"{name!r} is not a param's name")
        args += ["-D", f"{name}={_define_text(value)}"]
    return args


def _count_text(value, what: str) -> str:
    """A count argument (``nranks``, ``max_candidates``) as the command
    reads it: any integral number, a NumPy one too, but a bool (else a
    ``TypeError``), from 1 to 2**32 - 1 as the command counts (else a
    ``ValueError`` naming the argument, not the command's option)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} is {value!r}: give an int")
    if not 1 <= int(value) <= 2**32 - 1:
        raise ValueError(f"{what} is {int(value)}: give a whole number from 1 to 4,294,967,295")
    return str(int(value))


def _topology(topology) -> str:
    """``--timing=TOPOLOGY``: a built-in's name or a file (a ``str`` or a
    ``pathlib.Path``), read as a value even where it starts with ``-``."""
    if not isinstance(topology, (str, os.PathLike)):
        raise TypeError(f"topology is {topology!r}: give a built-in's name or a file's path")
    return f"--timing={os.fspath(topology)}"


def _text(value, what: str) -> str:
    """A string argument, or a ``TypeError`` that names it."""
    if not isinstance(value, str):
        raise TypeError(f"{what} is {value!r}: give a string")
    return value


def _path_text(path, what: str) -> str:
    """A path argument as text (a ``str`` or an ``os.PathLike``), kept as
    written: ``"plans/"`` names a folder, not the file ``plans``."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} is {path!r}: give a path (a str or a pathlib.Path)")
    return os.fspath(path)


def _not_an_option(path: str) -> str:
    """``path`` as the command reads it as a path: one that starts with
    ``-`` would be read as an option."""
    return os.path.join(".", path) if path.startswith("-") else path


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError as e:
        raise MsclcError(f"msclc printed no JSON where it should: {e}", 2, []) from None


def _command(argv: List[str]) -> subprocess.CompletedProcess:
    """Runs ``argv``, its text UTF-8 whatever the locale. A Ctrl-C while
    it runs (``KeyboardInterrupt``, or any exception raised in this
    thread) reaches the command first, which removes the files it was
    writing and ends; then it reaches the caller. (A SIGTERM, which
    Python does not turn into an exception unless the program asks it
    to, ends Python at once, the command with it only as far as the
    signal reaches its process group.)"""
    try:
        child = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            encoding="utf-8",
            errors="replace",
        )
    except OSError as e:
        raise MsclcError(f"cannot run {argv[0]}: {e}", 2, []) from None
    try:
        stdout, stderr = child.communicate()
    except BaseException:
        child.send_signal(signal.SIGINT)
        try:
            child.communicate(timeout=10)
        except BaseException:
            child.kill()
            child.wait()
        raise
    return subprocess.CompletedProcess(argv, child.returncode, stdout, stderr)


def _run(
    command: List[str],
    source: Source,
    args: List[str],
    wrong_is_result: bool = False,
    json_out: bool = False,
    report_on_stdout: bool = False,
):
    """Runs ``msclc COMMAND SOURCE ARGS``; raises :class:`MsclcError` on a
    failure (for ``sim``, exit code 1 is a verdict and returns), with what
    the command said on standard error (and, with ``report_on_stdout``,
    the simulator's report before it: ``sim --timing`` prints it there).
    What it prints names source text as such, not the file it was put in;
    with ``json_out``, its standard output read as JSON is ``value`` (the
    name replaced in the values, where the JSON text escapes it)."""
    with _source_file(source) as shown:
        out = _run_file(command, shown, args, wrong_is_result, report_on_stdout)
        if json_out:
            out.value = shown.restore(_json(out.stdout))
        out.stdout = shown.restore_text(out.stdout)
        return out


def _run_file(
    command: List[str],
    shown: "_Shown",
    args: List[str],
    wrong_is_result: bool = False,
    report_on_stdout: bool = False,
):
    out = _command([binary()] + command + [_not_an_option(shown.path)] + args)
    out.stderr = shown.restore_text(out.stderr)
    if out.returncode == 0 or (wrong_is_result and out.returncode == 1 and out.stdout):
        return out
    if report_on_stdout:
        out.stderr = shown.restore_text(_stdout_report(out)) + out.stderr
    text = _failure_text(out)
    if shown.away and "cannot read" in out.stderr:
        text += (
            f"\n(the current folder, {os.getcwd()}, cannot be written, so the program text was put in"
            f" {os.path.dirname(shown.path)}, where its imports are looked for: run from a folder you"
            " can write, or give the program as a file)"
        )
    if shown.path == shown.shown and " " in shown.path and not os.path.exists(shown.path):
        # One line of program text is read as a path (it has no line
        # break or brace): say how to give it as text.
        text += (
            "\n(a str with neither a line break nor a brace names a file: program text needs a"
            " line break, as a file ends with one)"
        )
    raise MsclcError(text, out.returncode, _diagnostics(out.stderr))


def _failure_text(out: subprocess.CompletedProcess) -> str:
    """What the command said when it failed; for one a signal ended (its
    exit code negative, as ``subprocess`` gives it), which signal, since it
    could say nothing (killed for memory, most often)."""
    text = out.stderr.rstrip("\n")
    if out.returncode > 0 and not text.strip():
        text = f"{out.args[0]} exited with status {out.returncode} and said nothing"
    if out.returncode < 0:
        try:
            name = signal.Signals(-out.returncode).name
        except ValueError:
            name = f"signal {-out.returncode}"
        ended = f"{out.args[0]} was ended by {name}"
        if -out.returncode == signal.SIGKILL:
            ended += " (the system kills a process so when it runs out of memory)"
        text = f"{text}\n{ended}" if text else ended
    return text


def _kind_of_text(source: Source) -> Optional[str]:
    """What ``source`` holds when it is text rather than a path (a path has
    neither a line break nor a brace): a JSON plan (an object) or a
    program; ``None`` for a path."""
    if isinstance(source, os.PathLike):
        return None
    if not isinstance(source, str):
        raise TypeError(
            f"the source is {type(source).__name__}: give a path (a str or a pathlib.Path),"
            " or a program's or plan's text (a str)"
        )
    if not any(c in source for c in "\n{}"):
        return None
    # No program opens with a brace: text that does is a plan, and JSON
    # that does not read is the plan reader's error to say.
    if source.lstrip().startswith("{"):
        return "plan"
    return "program"


@dataclass
class _Shown:
    """The file the command is handed, and how what it prints names it."""

    path: str
    shown: str
    #: Text put in the system's temporary folder (the current one could
    #: not be written): its relative imports are looked for there.
    away: bool = False

    def restore_text(self, text: str) -> str:
        return text if self.shown == self.path else text.replace(self.path, self.shown)

    def restore(self, value):
        """A JSON value read back, with the file named as shown."""
        if self.shown == self.path:
            return value
        if isinstance(value, str):
            return self.restore_text(value)
        if isinstance(value, list):
            return [self.restore(v) for v in value]
        if isinstance(value, dict):
            return {k: self.restore(v) for k, v in value.items()}
        return value


@contextlib.contextmanager
def _source_file(source: Source):
    """The file to hand the command: the path given, or the program's (or
    plan's) text written to a hidden file in the current directory (where
    its imports are found), shown as ``<program text>`` (``<plan text>``)
    and removed after."""
    kind = _kind_of_text(source)
    if kind is None:
        path = os.fspath(source)
        yield _Shown(path, path)
        return
    suffix = ".json" if kind == "plan" else ".mscl"
    away = False
    try:
        fd, written = tempfile.mkstemp(prefix=".msclc-", suffix=suffix, dir=".")
    except OSError:
        # A folder that cannot be written: imports are not found.
        fd, written = tempfile.mkstemp(prefix="msclc-", suffix=suffix)
        away = True
    try:
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(source)
        except UnicodeEncodeError as e:
            raise ValueError(
                f"the {kind} text holds {source[e.start]!r} at index {e.start}, which is no Unicode"
                " character (a lone surrogate): it cannot be written as UTF-8"
            ) from None
        yield _Shown(written, f"<{kind} text>", away)
    finally:
        try:
            os.unlink(written)
        except OSError:
            pass


_HEADER = re.compile(r"^(error|warning)\[([EW]\d{4})\]: (.*)$")
_PLACE = re.compile(r"^\s*┌─ (.*):(\d+):(\d+)$")
_NOTE = re.compile(r"^\s*= (.*)$")


def _diagnostics(text: str) -> List[Diagnostic]:
    """The diagnostics of a rendered report, in order."""
    found: List[Diagnostic] = []
    # Whether the line before was a note's, which an indented line goes on.
    in_note = False
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            found.append(Diagnostic(header.group(1), header.group(2), header.group(3)))
            in_note = False
            continue
        if not found:
            continue
        place = _PLACE.match(line)
        if place and found[-1].file is None:
            found[-1].file = place.group(1)
            found[-1].line = int(place.group(2))
            found[-1].column = int(place.group(3))
            continue
        note = _NOTE.match(line)
        if note:
            found[-1].notes.append(note.group(1))
            in_note = True
        elif in_note and line.startswith("  ") and line.strip():
            # A note of several lines (a list under it) goes on; a blank
            # or unindented line ends it.
            found[-1].notes[-1] += "\n" + line.strip()
        else:
            in_note = False
    return found

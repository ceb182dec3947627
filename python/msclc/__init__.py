"""msclc from Python: compile, check, simulate and time .mscl programs.

Every function runs the ``msclc`` command this package installed beside
it, so a plan made from Python is the plan the command line writes, and a
mistake raises :class:`MsclcError` with the diagnostic the command prints.

    >>> import msclc
    >>> plan = msclc.compile("examples/simple_allgather.mscl", num_gpus=4)
    >>> msclc.sim("examples/simple_allgather.mscl")["verified"]
    True

A ``source`` is a path to a ``.mscl`` program or a ``.json`` plan, or the
text of a program (imports in a program given as text are found from the
current directory). Keyword parameters set the program's ``param``s, as
``-D NAME=VALUE`` does: ints, bools, strings, and the named constants
(``protocol="LL"``) by name.
"""

import json
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Union

__all__ = [
    "Diagnostic",
    "MsclcError",
    "binary",
    "check",
    "compile",
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
    was asked); ``diagnostics`` the problems, structured."""

    def __init__(self, text: str, exit_code: int, diagnostics: List[Diagnostic]):
        super().__init__(text)
        self.text = text
        self.exit_code = exit_code
        self.diagnostics = diagnostics


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
        "the msclc command is not installed: `pip install msclc`, or set MSCLC_BINARY", 2, []
    )


def compile(source: Source, output: Optional[Source] = None, **params) -> str:
    """The MSCCL++ JSON execution plan of ``source``, as text; written to
    ``output`` too when given (atomically, as ``msclc -o`` does)."""
    args = _defines(params)
    if output is not None:
        args += ["-o", os.fspath(output)]
    out = _run(["compile"], source, args)
    if output is not None:
        return Path(output).read_text()
    return out.stdout


def params(source: Source) -> List[Dict]:
    """The ``param``s ``source`` declares, in order: each a dict with
    ``name``, ``type`` (``int``, ``bool``, ``str``, ``protocol``, ...) and
    ``default`` (as written in the program)."""
    out = _run(["check"], source, ["--params"])
    return json.loads(out.stdout)


def version() -> str:
    """The version of the msclc command, as ``msclc --version`` says it."""
    out = subprocess.run([binary(), "--version"], capture_output=True, text=True)
    if out.returncode != 0:
        raise MsclcError(out.stderr.rstrip("\n"), out.returncode, [])
    return out.stdout.split()[-1]


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
        args += ["--nranks", str(nranks)]
    if buffers is not None:
        args += ["--buffers", buffers]
    out = _run(["sim"], source, args, wrong_is_result=True)
    return json.loads(out.stdout)


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
    ``algbw_gbps`` and ``busbw_gbps``."""
    args = ["--timing", topology, "--size", sizes] + _defines(params)
    if dtype is not None:
        args += ["--dtype", dtype]
    if nranks is not None:
        args += ["--nranks", str(nranks)]
    out = _run(["sim"], source, args, wrong_is_result=True)
    rows = []
    for line in out.stdout.splitlines():
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
    **params,
) -> Dict:
    """``msclc tune`` (docs/tuning.md): the plan set fastest across
    ``sizes`` on ``topology``, written to ``output`` when given. Returns
    its index (the plans' files, message-size ranges, params and predicted
    times, and the candidates dropped with their reasons). ``vary`` maps a
    param to the values to try; keyword params are set, not varied. When
    no candidate verifies at some size, raises :class:`MsclcError` (E0606)."""
    with tempfile.TemporaryDirectory(prefix="msclc-tune-") as scratch:
        folder = os.fspath(output) if output is not None else os.path.join(scratch, "tuned")
        args = ["--timing", topology, "--size", sizes, "-o", folder, "--quiet"]
        args += _defines(params)
        for name, values in (vary or {}).items():
            texts = [_define_text(v) for v in values]
            args += ["--vary", f"{name}={','.join(texts)}"]
        if max_candidates is not None:
            args += ["--max-candidates", str(max_candidates)]
        if within is not None:
            args += ["--within", str(within)]
        if nranks is not None:
            args += ["--nranks", str(nranks)]
        _run(["tune"], source, args)
        with open(os.path.join(folder, "index.json")) as f:
            return json.load(f)


def _define_text(value) -> str:
    """A Python value as ``-D`` writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _defines(params: Dict) -> List[str]:
    args = []
    for name, value in params.items():
        args += ["-D", f"{name}={_define_text(value)}"]
    return args


def _run(command: List[str], source: Source, args: List[str], wrong_is_result: bool = False):
    """Runs ``msclc COMMAND SOURCE ARGS``; raises :class:`MsclcError` on a
    failure (for ``sim``, exit code 1 is a verdict and returns)."""
    with tempfile.TemporaryDirectory(prefix="msclc-") as scratch:
        path = _source_path(source, scratch)
        out = subprocess.run(
            [binary()] + command + [path] + args,
            capture_output=True,
            text=True,
        )
    if out.returncode == 0 or (wrong_is_result and out.returncode == 1 and out.stdout):
        return out
    raise MsclcError(out.stderr.rstrip("\n"), out.returncode, _diagnostics(out.stderr))


def _is_path(source: Source) -> bool:
    """Whether ``source`` names a file (else it is a program's text)."""
    if isinstance(source, os.PathLike):
        return True
    return "\n" not in source and ("program" not in source or os.path.exists(source))


def _source_path(source: Source, scratch: str) -> str:
    """A file to hand the command: the path given, or the program text
    written to a file in ``scratch``."""
    if _is_path(source):
        return os.fspath(source)
    path = os.path.join(scratch, "program.mscl")
    with open(path, "w") as f:
        f.write(source)
    return path


_HEADER = re.compile(r"^(error|warning)\[([EW]\d{4})\]: (.*)$")
_PLACE = re.compile(r"^\s*┌─ (.*):(\d+):(\d+)$")
_NOTE = re.compile(r"^\s*= (.*)$")


def _diagnostics(text: str) -> List[Diagnostic]:
    """The diagnostics of a rendered report, in order."""
    found: List[Diagnostic] = []
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            found.append(Diagnostic(header.group(1), header.group(2), header.group(3)))
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
    return found

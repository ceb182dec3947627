"""The MSCCL++ integration flow with a ``.mscl`` program.

``mscclpp.compile(algo=fn, algo_spec=spec, rank=rank)`` runs a Python DSL
function, writes its plan into the MSCCL++ cache under a content hash and
wraps it as an ``mscclpp.Algorithm``. :func:`compile` does the same with a
``.mscl`` program: the AlgoSpec's fields become the program's ``param``s
of the same names, where it declares them.

    >>> import msclc.mscclpp
    >>> algo = msclc.mscclpp.compile("allreduce_nvls.mscl", spec, rank=rank)

The ``Algorithm`` goes where ``mscclpp.compile``'s does: to a customized
communicator (``algo.execute(...)``), or to
``mscclpp.ext.AlgorithmCollectionBuilder().add_algorithm_builder(algo)``
for unchanged ``backend="nccl"`` code under the NCCL shim.
examples/python/ has both.

MSCCL++ is imported by :func:`compile` only: :func:`plan` needs nothing
but msclc.
"""

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Optional

from . import (
    MsclcError,
    Source,
    _kind_of_text,
    _path_text,
    _write_whole,
    compile as _compile_plan,
    params as _declared,
    version,
)

__all__ = ["PLAN_FIELDS", "SPEC_FIELDS", "compile", "plan"]

# The AlgoSpec fields (mscclpp.language.utils.AlgoSpec) that set a program's
# params of the same names. `collective` and `tags` are not params: the
# program says its collective, and the tags go to the Algorithm.
SPEC_FIELDS = (
    "name",
    "world_size",
    "nranks_per_node",
    "in_place",
    "instances",
    "protocol",
    "instr_fusion",
    "auto_sync",
    "replication_policy",
    "reuse_resources",
    "num_threads_per_block",
    "use_double_scratch_buffer",
    "buffer_alignment",
    "min_message_size",
    "max_message_size",
)


def plan(
    source: Source,
    algo_spec: Any,
    cache_dir: Optional[Source] = None,
    **params,
) -> Path:
    """Compiles ``source`` for ``algo_spec`` and writes the plan into
    ``cache_dir`` (MSCCL++'s cache: ``$MSCCLPP_CACHE_DIR``, else
    ``~/.cache/mscclpp``) as ``<id>.json``, the id a hash of the
    program's text, the params, the msclc version, the spec's name,
    collective and tags, and the plan. Returns the path.

    Params: each field of :data:`SPEC_FIELDS` the program declares, then
    ``params`` (which win). Raises :class:`msclc.MsclcError` when the
    program does not compile, or when its plan is not the spec's: another
    world size, collective, buffer mode or name, or another value of a
    field the plan holds (``protocol``, ``min_message_size``, ...)."""
    _spec_fields_read(algo_spec)
    directory = Path(_path_text(cache_dir, "cache_dir")) if cache_dir is not None else _default_cache_dir()
    declared = {p["name"] for p in _declared(source)}
    values: Dict[str, Any] = {}
    for field in SPEC_FIELDS:
        if field in declared and hasattr(algo_spec, field):
            value = getattr(algo_spec, field)
            # Enums (ReplicationPolicy) by their names in the language.
            values[field] = value if isinstance(value, (bool, int, str)) else str(value)
    values.update(params)
    text = _compile_plan(source, **values)
    _agrees_with_spec(source, json.loads(text), algo_spec, declared, params)
    collective = getattr(getattr(algo_spec, "collective", None), "name", None)
    tags = dict(getattr(algo_spec, "tags", {}) or {})
    key = {
        "msclc": version(),
        "source": _sha256(_source_bytes(source)),
        "params": {k: _jsonable(v) for k, v in sorted(values.items())},
        "name": getattr(algo_spec, "name", None),
        "collective": collective,
        "tags": sorted((str(k), _jsonable(v)) for k, v in tags.items()),
        # What the executor runs: an imported file that changed is a new plan.
        "plan": _sha256(text.encode()),
    }
    plan_id = _sha256(json.dumps(key, sort_keys=True, separators=(",", ":")).encode())
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MsclcError(f"cannot make the plan cache {directory}: {e}", 2, []) from None
    path = directory / f"{plan_id}.json"
    if not path.exists():
        try:
            _write_whole(path, text)
        except OSError as e:
            raise MsclcError(f"cannot write the plan into the cache {directory}: {e}", 2, []) from None
    return path


def compile(source: Source, algo_spec: Any, rank: int, **params):
    """What ``mscclpp.compile(algo=..., algo_spec=algo_spec, rank=rank)``
    returns, for the ``.mscl`` program ``source``: an ``mscclpp.Algorithm``
    over the plan :func:`plan` writes into MSCCL++'s cache, its id the
    plan's, its constraint the spec's world size and ranks per node, its
    tags the spec's."""
    world_size = _spec_fields_read(algo_spec)
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise TypeError(f"rank is {rank!r}: give an int, one of the AlgoSpec's {world_size} ranks")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is not one of the AlgoSpec's {world_size} ranks")
    try:
        import mscclpp  # Only here: msclc works without MSCCL++ installed.
    except ImportError as e:
        raise ImportError(
            f"msclc.mscclpp.compile needs MSCCL++'s Python package, which is not installed here ({e});"
            " build and install it from its source (github.com/microsoft/mscclpp: it is not on PyPI),"
            " or write the plan alone with msclc.mscclpp.plan, which needs nothing but msclc",
            name=e.name,
        ) from e

    path = plan(source, algo_spec, cache_dir=mscclpp.env().cache_dir, **params)
    return mscclpp.Algorithm(
        id=path.stem,
        execution_plan=mscclpp.ExecutionPlan(str(path), rank),
        constraint=mscclpp.Algorithm.Constraint(
            world_size=world_size, n_ranks_per_node=algo_spec.nranks_per_node
        ),
        tags=dict(getattr(algo_spec, "tags", {}) or {}),
    )


def _spec_fields_read(algo_spec: Any) -> int:
    """The spec's world size, after a ``TypeError`` for what is no AlgoSpec
    (a dict, ``None``): it has a world size and ranks per node, ints."""
    for field in ("world_size", "nranks_per_node"):
        value = getattr(algo_spec, field, None)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"the AlgoSpec's {field} is {value!r}: give an mscclpp.language.AlgoSpec"
                " (its world_size and nranks_per_node ints)"
            )
    return algo_spec.world_size


# The fields of the plan that the executor reads and the AlgoSpec says:
# another value makes MSCCL++ pick the plan for messages it was not made
# for (the sizes), or run it otherwise than the spec asks.
PLAN_FIELDS = (
    "protocol",
    "num_threads_per_block",
    "reuse_resources",
    "use_double_scratch_buffer",
    "buffer_alignment",
    "min_message_size",
    "max_message_size",
)


def _agrees_with_spec(source: Source, plan_json: Dict, spec: Any, declared, given: Dict) -> None:
    """Raises when the plan is not what the spec describes: MSCCL++ would
    pick it for messages it does not handle, or fail at run time. (``given``:
    the params the caller set by keyword, which win over the spec's.)"""
    where = os.fspath(source) if _kind_of_text(source) is None else "the program"
    problems = []

    def param_hint(param: str, use: str) -> str:
        if param in given:
            return f"the keyword argument {param}={given[param]!r} set it: leave it out, the AlgoSpec's is used"
        if param in declared:
            return f"the program declares `{param}`: {use}"
        return f"declare `param {param}` and {use}, or set the program's own param (compile(..., NAME=VALUE))"

    def differs(what: str, planned: Any, wanted: Any, hint: str):
        if wanted is not None and planned != wanted:
            problems.append(f"{what}: the plan's is {planned!r}, the AlgoSpec's {wanted!r}; {hint}")

    differs(
        "world size",
        len(plan_json.get("gpus", [])),
        getattr(spec, "world_size", None),
        param_hint("world_size", "make it the collective's number of ranks"),
    )
    differs(
        "ranks of the AlgoSpec's collective",
        len(plan_json.get("gpus", [])),
        getattr(getattr(spec, "collective", None), "num_ranks", None),
        "make the collective's ranks the AlgoSpec's world_size",
    )
    collective = getattr(getattr(spec, "collective", None), "name", None)
    if collective not in (None, "custom"):
        differs(
            "collective",
            plan_json.get("collective"),
            collective,
            "the program's `collective = ...` says which",
        )
    differs(
        "buffers in place",
        plan_json.get("inplace"),
        getattr(spec, "in_place", None),
        param_hint("in_place", "make it the collective's `inplace:`"),
    )
    differs(
        "name",
        plan_json.get("name"),
        getattr(spec, "name", None),
        param_hint("name", "name the program with it (`program name { ... }`)"),
    )
    for field in PLAN_FIELDS:
        differs(
            field,
            plan_json.get(field),
            getattr(spec, field, None),
            param_hint(field, f"set the program's option with it (`{field} = {field}`)"),
        )
    if problems:
        text = f"{where} does not make the plan the AlgoSpec describes:\n" + "\n".join(
            f"  {p}" for p in problems
        )
        raise MsclcError(text, 1, [])


def _default_cache_dir() -> Path:
    """MSCCL++'s cache when MSCCL++ is not imported: as its env() finds it."""
    named = os.environ.get("MSCCLPP_CACHE_DIR")
    return Path(named) if named else Path.home() / ".cache" / "mscclpp"


def _source_bytes(source: Source) -> bytes:
    if _kind_of_text(source) is None:
        return Path(os.fspath(source)).read_bytes()
    return str(source).encode()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)

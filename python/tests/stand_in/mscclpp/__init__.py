"""A stand-in for the ``mscclpp`` package (not on PyPI; it needs a GPU
build) with the signatures of the parts ``msclc.mscclpp.compile`` calls,
as microsoft/mscclpp has them at commit 1f5f065d:

- ``CppExecutionPlan(planPath: str, rank: int)``, exported as
  ``ExecutionPlan`` (python/csrc/executor_py.cpp; python/mscclpp/__init__.py);
- ``Algorithm(id, execution_plan, native_handle, tags, constraint)`` and
  ``Algorithm.Constraint(world_size, n_ranks_per_node)``
  (python/mscclpp/_core/algorithm.py);
- ``env().cache_dir`` (python/csrc/env_py.cpp), ``$MSCCLPP_CACHE_DIR``.

It records every call in ``calls``, and its ExecutionPlan reads the plan
as the executor would (the file must be JSON with the rank in it).
test_mscclpp_flow.py checks these signatures against MSCCL++'s own source
when ``MSCCLPP_SOURCE`` names a checkout of it.
"""

import json
import os
from typing import Dict, Optional

calls = []


class _Env:
    def __init__(self):
        self.cache_dir = os.environ.get(
            "MSCCLPP_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "mscclpp")
        )


def env():
    calls.append(("env",))
    return _Env()


class ExecutionPlan:
    def __init__(self, planPath: str, rank: int):
        calls.append(("ExecutionPlan", planPath, rank))
        with open(planPath) as f:
            plan = json.load(f)
        ids = [g["id"] for g in plan["gpus"]]
        if rank not in ids:
            raise RuntimeError(f"rank {rank} is not in the plan")
        self.name = plan["name"]
        self.collective = plan["collective"]
        self.min_message_size = plan["min_message_size"]
        self.max_message_size = plan["max_message_size"]


class Algorithm:
    class Constraint:
        def __init__(self, world_size: int = 0, n_ranks_per_node: int = 0):
            calls.append(("Constraint", world_size, n_ranks_per_node))
            self.world_size = world_size
            self.n_ranks_per_node = n_ranks_per_node

    def __init__(
        self,
        id: Optional[str] = None,
        execution_plan: Optional[ExecutionPlan] = None,
        native_handle: Optional[object] = None,
        tags: Optional[Dict[str, int]] = None,
        constraint: Optional["Algorithm.Constraint"] = None,
    ):
        calls.append(("Algorithm", id))
        self.id = id
        self.execution_plan = execution_plan
        self.tags = tags if tags is not None else {}
        self.constraint = constraint
        self.name = execution_plan.name
        self.collective = execution_plan.collective

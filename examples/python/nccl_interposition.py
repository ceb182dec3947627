"""Flow 2 of the MSCCL++ integration guide, with a .mscl program: unchanged
``backend="nccl"`` PyTorch code runs msclc's AllReduce through MSCCL++'s
NCCL shim, which picks it for the messages a selector says.

    LD_PRELOAD=<mscclpp>/build/lib/libmscclpp_nccl.so \
        torchrun --nnodes=1 --nproc_per_node=8 examples/python/nccl_interposition.py

Needs MSCCL++ (its Python bindings and the shim), PyTorch and a node of
NVSwitch-connected GPUs; msclc needs nothing more (`pip install .`).
"""

from __future__ import annotations

import os
from pathlib import Path

import msclc.mscclpp
import mscclpp.ext
import torch
import torch.distributed as dist
from mscclpp.language.collectives import AllReduce
from mscclpp.language.utils import AlgoSpec

PROGRAM = Path(__file__).resolve().parent.parent / "allreduce_nvls.mscl"


def register(builder: "mscclpp.ext.AlgorithmCollectionBuilder", rank: int, world_size: int):
    """Registers msclc's plan with the shim, as mscclpp.compile's would be."""
    spec = AlgoSpec(
        name="allreduce_nvls",
        collective=AllReduce(world_size, 1, True),
        nranks_per_node=world_size,
        world_size=world_size,
        in_place=True,
        instances=2,
        protocol="Simple",
        num_threads_per_block=1024,
        min_message_size=1 << 20,
        max_message_size=48 << 30,
        tags={"nvls": 1},
    )
    builder.add_algorithm_builder(msclc.mscclpp.compile(PROGRAM, spec, rank))


def selector(algorithms, request):
    """msclc's plan for AllReduce from 1 MiB up; NCCL's own below."""
    if request.collective != "allreduce" or request.message_size < 1 << 20:
        return None
    return algorithms["allreduce"]["allreduce_nvls"]


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    builder = mscclpp.ext.AlgorithmCollectionBuilder()
    register(builder, rank, world)
    builder.set_algorithm_selector(selector)
    dist.init_process_group(backend="nccl", device_id=torch.device("cuda", local))
    torch.cuda.set_device(local)
    buffer = mscclpp.RawGpuBuffer(24 << 20)
    x = torch.utils.dlpack.from_dlpack(buffer.to_dlpack(data_type=str(torch.bfloat16)))
    x.fill_(rank + 1)
    dist.all_reduce(x, op=dist.ReduceOp.SUM)  # unchanged NCCL code
    torch.cuda.synchronize()
    expected = world * (world + 1) / 2
    assert torch.all(x == expected), f"rank {rank}: {x[:4]} where {expected} was expected"
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: allreduce through the NCCL shim and msclc's plan: right")


if __name__ == "__main__":
    main()

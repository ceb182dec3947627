"""Flow 1 of the MSCCL++ integration guide, with a .mscl program: a
customized communicator runs msclc's AllReduce on PyTorch tensors.

    MSCCLPP_MASTER_ADDR=<ip> MSCCLPP_MASTER_PORT=<port> \
        torchrun --nnodes=1 --nproc_per_node=8 examples/python/customized_comm.py

Needs MSCCL++ (built with its Python bindings), PyTorch and a node of
NVSwitch-connected GPUs; msclc needs nothing more (`pip install .`).
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import msclc.mscclpp
import mscclpp
import mscclpp.language
import netifaces
import torch
from mscclpp.language.collectives import AllReduce

PROGRAM = Path(__file__).resolve().parent.parent / "allreduce_nvls.mscl"


def algorithm(rank: int, world_size: int, nranks_per_node: int) -> mscclpp.Algorithm:
    """msclc's plan for this world, in MSCCL++'s cache, as an Algorithm."""
    spec = mscclpp.language.AlgoSpec(
        name="allreduce_nvls",
        collective=AllReduce(world_size, 1, True),
        nranks_per_node=nranks_per_node,
        world_size=world_size,
        in_place=True,
        instances=nranks_per_node,
        protocol="Simple",
        num_threads_per_block=1024,
        min_message_size=1 << 20,
        max_message_size=48 << 30,
        tags={"nvls": 1},
    )
    # What mscclpp.compile(algo=..., algo_spec=spec, rank=rank) gives for a
    # DSL function; raises msclc.MsclcError with the diagnostic on a mistake.
    return msclc.mscclpp.compile(PROGRAM, spec, rank)


MSCCLPP_TYPES = {
    torch.float16: mscclpp.DataType.float16,
    torch.float32: mscclpp.DataType.float32,
    torch.bfloat16: mscclpp.DataType.bfloat16,
    torch.int32: mscclpp.DataType.int32,
}


class CustomizedComm:
    """All-reduce through one MSCCL++ algorithm, in place."""

    def __init__(self, group: mscclpp.CommGroup, algo: mscclpp.Algorithm):
        self.group = group
        self.executor = mscclpp.Executor(group.communicator)
        self.algo = algo

    def all_reduce(self, tensor: torch.Tensor, stream=None):
        self.algo.execute(
            comm=self.group.communicator,
            executor=self.executor,
            input_buffer=tensor.data_ptr(),
            output_buffer=tensor.data_ptr(),
            input_size=tensor.nbytes,
            output_size=tensor.nbytes,
            dtype=MSCCLPP_TYPES[tensor.dtype],
            stream=stream.cuda_stream if stream is not None else 0,
        )


def interface_of(ip: str) -> str:
    """The network interface that has address ``ip``."""
    wanted = ipaddress.ip_address(ip)
    for name in netifaces.interfaces():
        for link in netifaces.ifaddresses(name).get(netifaces.AF_INET, []):
            if "addr" in link and ipaddress.ip_address(link["addr"]) == wanted:
                return name
    raise ValueError(f"no network interface has the address {ip}")


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    addr, port = os.environ["MSCCLPP_MASTER_ADDR"], os.environ["MSCCLPP_MASTER_PORT"]
    algo = algorithm(rank, world, torch.cuda.device_count())
    group = mscclpp.CommGroup(interfaceIpPortTrio=f"{interface_of(addr)}:{addr}:{port}", rank=rank, size=world)
    comm = CustomizedComm(group, algo)
    buffer = mscclpp.RawGpuBuffer(24 << 20)
    x = torch.utils.dlpack.from_dlpack(buffer.to_dlpack(data_type=str(torch.bfloat16)))
    x.fill_(rank + 1)
    comm.all_reduce(x, stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    expected = world * (world + 1) / 2
    assert torch.all(x == expected), f"rank {rank}: {x[:4]} where {expected} was expected"
    group.barrier()
    print(f"rank {rank}: allreduce of {x.nbytes} bytes through msclc's plan {algo.name}: right")


if __name__ == "__main__":
    main()

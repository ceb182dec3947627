"""Stand-in for ``mscclpp.language.utils`` (python/mscclpp/language/utils.py
at commit 1f5f065d): AlgoSpec's fields, in order, with their defaults.
test_mscclpp_flow.py checks them against the reference DSL's copy in
../shared/reference-dsl when it is there."""

from dataclasses import dataclass, field
from enum import Enum


class ReplicationPolicy(Enum):
    interleaved = "interleaved"
    none = "none"

    def __str__(self):
        return self.value


@dataclass(frozen=True)
class AlgoSpec:
    name: str
    collective: object
    nranks_per_node: int
    world_size: int
    in_place: bool
    instances: int
    protocol: str
    instr_fusion: bool = True
    auto_sync: bool = True
    replication_policy: ReplicationPolicy = ReplicationPolicy.interleaved
    reuse_resources: bool = False
    num_threads_per_block: int = 1024
    use_double_scratch_buffer: bool = False
    buffer_alignment: int = 16
    min_message_size: int = 0
    max_message_size: int = 2**64 - 1
    tags: dict = field(default_factory=dict)

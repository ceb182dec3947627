"""Stand-in for ``mscclpp.language.collectives``: the collectives an
AlgoSpec names, with the ``name`` each has there."""


class Collective:
    def __init__(self, num_ranks, chunk_factor, inplace):
        self.num_ranks = num_ranks
        self.chunk_factor = chunk_factor
        self.inplace = inplace
        self.name = "custom"


class AllReduce(Collective):
    def __init__(self, num_ranks, chunk_factor, inplace):
        super().__init__(num_ranks, chunk_factor, inplace)
        self.name = "allreduce"


class AllGather(Collective):
    def __init__(self, num_ranks, chunk_factor, inplace):
        super().__init__(num_ranks, chunk_factor, inplace)
        self.name = "allgather"

"""Stand-in for ``mscclpp.ext``: the builder the NCCL shim takes its
algorithms from (python/mscclpp/ext/algorithm_collection_builder.py)."""

from .. import Algorithm, calls


class AlgorithmCollectionBuilder:
    def __init__(self):
        self.algorithms = []
        self.selector = None

    def add_algorithm_builder(self, algorithm_builder):
        calls.append(("add_algorithm_builder", algorithm_builder.id))
        if not isinstance(algorithm_builder, Algorithm):
            raise TypeError("an Algorithm or an AlgorithmBuilder")
        self.algorithms.append(algorithm_builder)

    def set_algorithm_selector(self, selector):
        self.selector = selector

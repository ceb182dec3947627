"""msclc.mscclpp: a .mscl program into MSCCL++'s integration flows, against
a stand-in for MSCCL++ (stand_in/mscclpp: not on PyPI) whose signatures
are MSCCL++'s own.

Run from the repository root, with the package installed:
python -m unittest discover -s python/tests
"""

import ast
import importlib
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest
import warnings
from pathlib import Path

import msclc
import msclc.mscclpp

ROOT = Path(__file__).resolve().parents[2]
STAND_IN = Path(__file__).resolve().parent / "stand_in"
PROGRAM = ROOT / "examples/allreduce_nvls.mscl"
REFERENCE_DSL = ROOT.parent / "shared" / "reference-dsl"

sys.path.insert(0, str(STAND_IN))
import mscclpp  # noqa: E402  (the stand-in)
from mscclpp.language.collectives import AllGather, AllReduce  # noqa: E402
from mscclpp.language.utils import AlgoSpec  # noqa: E402


def spec(**changes):
    fields = dict(
        name="allreduce_nvls",
        collective=AllReduce(8, 1, True),
        nranks_per_node=8,
        world_size=8,
        in_place=True,
        instances=2,
        protocol="Simple",
        min_message_size=1 << 20,
        max_message_size=48 << 30,
        tags={"nvls": 1},
    )
    fields.update(changes)
    return AlgoSpec(**fields)


def command(*args):
    return subprocess.run([msclc.binary(), *args], capture_output=True, text=True, cwd=ROOT)


class Plan(unittest.TestCase):
    def test_the_plan_is_the_commands_with_the_specs_params(self):
        with tempfile.TemporaryDirectory() as cache:
            four = spec(world_size=4, nranks_per_node=4, collective=AllReduce(4, 1, True))
            path = msclc.mscclpp.plan(PROGRAM, four, cache_dir=cache)
            self.assertEqual(path.parent, Path(cache))
            self.assertRegex(path.name, r"^[0-9a-f]{64}\.json$")
            # The params the program declares, from the spec's fields of
            # the same names; the rest (nranks_per_node, in_place, ...) not.
            cli = command(
                str(PROGRAM),
                *("-D", "name=allreduce_nvls", "-D", "world_size=4", "-D", "instances=2"),
                *("-D", "protocol=Simple", "-D", "num_threads_per_block=1024"),
                *("-D", f"min_message_size={1 << 20}", "-D", f"max_message_size={48 << 30}"),
            )
            self.assertEqual(cli.returncode, 0, cli.stderr)
            self.assertEqual(path.read_text(), cli.stdout)
            plan = json.loads(path.read_text())
            self.assertEqual((len(plan["gpus"]), plan["min_message_size"]), (4, 1 << 20))
            self.assertEqual(os.listdir(cache), [path.name], "no temporary file is left")

    def test_a_plan_in_the_cache_has_the_umasks_permissions(self):
        mask = os.umask(0o027)
        try:
            with tempfile.TemporaryDirectory() as cache:
                written = msclc.mscclpp.plan(PROGRAM, spec(), cache_dir=cache)
                self.assertEqual(written.stat().st_mode & 0o777, 0o640)
        finally:
            os.umask(mask)

    def test_the_cache_key_is_the_content(self):
        with tempfile.TemporaryDirectory() as cache:
            first = msclc.mscclpp.plan(PROGRAM, spec(), cache_dir=cache)
            written = first.stat().st_mtime_ns
            again = msclc.mscclpp.plan(PROGRAM, spec(), cache_dir=cache)
            self.assertEqual(first, again)
            self.assertEqual(again.stat().st_mtime_ns, written, "a plan in the cache is not rewritten")
            others = {
                msclc.mscclpp.plan(PROGRAM, spec(instances=4), cache_dir=cache),
                msclc.mscclpp.plan(PROGRAM, spec(tags={"nvls": 2}), cache_dir=cache),
                msclc.mscclpp.plan(PROGRAM, spec(num_threads_per_block=512), cache_dir=cache),
                msclc.mscclpp.plan(PROGRAM.read_text() + "\n// changed\n", spec(), cache_dir=cache),
            }
            self.assertEqual(len(others), 4)
            self.assertNotIn(first, others)

    def test_a_plan_that_is_not_the_specs_raises(self):
        with tempfile.TemporaryDirectory() as cache:
            cases = [
                (spec(collective=AllGather(8, 1, True)), "collective: the plan's is 'allreduce'"),
                (spec(in_place=False), "declare `param in_place`"),
                # A param given by hand wins over the spec's field.
                (
                    spec(),
                    "name: the plan's is 'other', the AlgoSpec's 'allreduce_nvls'; the keyword argument name='other' set it",
                    {"name": "other"},
                ),
                # The spec's own fields disagree.
                (spec(world_size=4, nranks_per_node=4), "ranks of the AlgoSpec's collective: the plan's is 4, the AlgoSpec's 8"),
                # What the executor picks the plan by, set by hand otherwise.
                (spec(), "max_message_size: the plan's is 4194304, the AlgoSpec's 51539607552", {"max_message_size": 4 << 20}),
            ]
            for wrong, says, *given in cases:
                with self.assertRaises(msclc.MsclcError, msg=says) as raised:
                    msclc.mscclpp.plan(PROGRAM, wrong, cache_dir=cache, **(given[0] if given else {}))
                self.assertIn(says, str(raised.exception))
                self.assertEqual(raised.exception.exit_code, 1)
            # A program whose ranks are its own param, not world_size, and
            # whose message sizes are its own, not params.
            simple = ROOT / "examples/simple_allgather.mscl"
            gather = spec(name="simple_allgather_2gpus", collective=AllGather(8, 1, True))
            with self.assertRaises(msclc.MsclcError) as raised:
                msclc.mscclpp.plan(simple, gather, cache_dir=cache)
            said = str(raised.exception)
            self.assertIn("world size: the plan's is 2, the AlgoSpec's 8; declare `param world_size`", said)
            self.assertIn(
                "min_message_size: the plan's is 0, the AlgoSpec's 1048576; declare `param min_message_size`"
                " and set the program's option with it (`min_message_size = min_message_size`)",
                said,
            )
            sizes = dict(min_message_size=0, max_message_size=1 << 30)
            fixed = msclc.mscclpp.plan(simple, spec(**dict(vars(gather), **sizes)), cache_dir=cache, num_gpus=8)
            self.assertEqual(len(json.loads(fixed.read_text())["gpus"]), 8)
            self.assertEqual(os.listdir(cache), [fixed.name], "nothing is written for a refused plan")
            with self.assertRaisesRegex(TypeError, "cache_dir is 3: give a path"):
                msclc.mscclpp.plan(PROGRAM, spec(), cache_dir=3)

    def test_a_mistake_raises_the_commands_diagnostic(self):
        broken = PROGRAM.read_text().replace("let nvls", "let nvls = undefined_name\nlet nvls2")
        with tempfile.TemporaryDirectory() as folder:
            cli_path = Path(folder) / "broken.mscl"
            cli_path.write_text(broken)
            with self.assertRaises(msclc.MsclcError) as raised:
                msclc.mscclpp.plan(cli_path, spec(), cache_dir=cli_path.parent)
            self.assertEqual(str(raised.exception), command(str(cli_path)).stderr.rstrip("\n"))
        self.assertTrue(any(d.code.startswith("E") for d in raised.exception.diagnostics))

    def test_the_plans_warnings_are_the_callers(self):
        with tempfile.TemporaryDirectory() as cache, warnings.catch_warnings(record=True) as issued:
            warnings.simplefilter("always")
            msclc.mscclpp.plan(PROGRAM, spec(world_size=64, collective=AllReduce(64, 1, True)), cache_dir=cache)
        self.assertTrue(issued)
        self.assertTrue(all(w.category is msclc.MsclcWarning for w in issued))
        self.assertEqual({w.filename for w in issued}, {__file__})

    def test_what_is_no_algospec_or_rank_is_a_type_error(self):
        for wrong in (None, {"world_size": 8, "nranks_per_node": 8}):
            with self.assertRaisesRegex(TypeError, "give an mscclpp.language.AlgoSpec"):
                msclc.mscclpp.plan(PROGRAM, wrong)
        for rank in ("1", 1.5, True):
            with self.assertRaisesRegex(TypeError, "rank is"):
                msclc.mscclpp.compile(PROGRAM, spec(), rank=rank)


class Compile(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.TemporaryDirectory()
        os.environ["MSCCLPP_CACHE_DIR"] = self.cache.name
        mscclpp.calls.clear()

    def tearDown(self):
        del os.environ["MSCCLPP_CACHE_DIR"]
        self.cache.cleanup()

    def test_an_algorithm_over_the_plan_in_mscclpps_cache(self):
        algo = msclc.mscclpp.compile(PROGRAM, spec(), rank=3)
        self.assertIsInstance(algo, mscclpp.Algorithm)
        (plan,) = Path(self.cache.name).iterdir()
        self.assertEqual(algo.id, plan.stem)
        self.assertEqual((algo.name, algo.collective), ("allreduce_nvls", "allreduce"))
        self.assertEqual(algo.tags, {"nvls": 1})
        self.assertEqual((algo.constraint.world_size, algo.constraint.n_ranks_per_node), (8, 8))
        self.assertIn(("ExecutionPlan", str(plan), 3), mscclpp.calls)
        self.assertEqual(algo.execution_plan.min_message_size, 1 << 20)

    def test_a_rank_outside_the_world_is_refused(self):
        with self.assertRaises(ValueError):
            msclc.mscclpp.compile(PROGRAM, spec(), rank=8)

    def test_without_mscclpp_it_says_what_to_do(self):
        # (A None in sys.modules makes `import mscclpp` fail, as where it
        # is not installed.)
        modules = {k: v for k, v in sys.modules.items() if k == "mscclpp" or k.startswith("mscclpp.")}
        sys.modules["mscclpp"] = None
        try:
            with self.assertRaisesRegex(ImportError, "not on PyPI.*msclc.mscclpp.plan"):
                msclc.mscclpp.compile(PROGRAM, spec(), rank=0)
        finally:
            sys.modules.update(modules)

    def test_the_guides_flows_as_examples_write_them(self):
        # The examples import PyTorch and netifaces at the top; their msclc
        # part needs neither.
        for name in ("torch", "torch.distributed", "netifaces"):
            sys.modules.setdefault(name, types.ModuleType(name))
        sys.modules["torch"].distributed = sys.modules["torch.distributed"]
        for attr in ("float16", "float32", "bfloat16", "int32"):
            setattr(sys.modules["torch"], attr, attr)
        mscclpp.DataType = types.SimpleNamespace(float16=1, float32=2, bfloat16=3, int32=4)
        sys.path.insert(0, str(ROOT / "examples/python"))
        try:
            customized = importlib.import_module("customized_comm")
            interposed = importlib.import_module("nccl_interposition")
        finally:
            sys.path.remove(str(ROOT / "examples/python"))
        algo = customized.algorithm(rank=5, world_size=8, nranks_per_node=8)
        self.assertEqual((algo.name, algo.constraint.world_size), ("allreduce_nvls", 8))
        builder = mscclpp.ext.AlgorithmCollectionBuilder()
        interposed.register(builder, rank=0, world_size=8)
        (registered,) = builder.algorithms
        self.assertEqual(registered.name, "allreduce_nvls")
        # The selector finds it by collective and the plan's name.
        by_name = {"allreduce": {registered.name: registered}}
        ask = lambda collective, size: types.SimpleNamespace(collective=collective, message_size=size)
        self.assertIs(interposed.selector(by_name, ask("allreduce", 1 << 20)), registered)
        self.assertIsNone(interposed.selector(by_name, ask("allreduce", 1 << 10)))


class StandIn(unittest.TestCase):
    """The stand-in's signatures are MSCCL++'s."""

    def test_algospec_fields_are_the_reference_dsls(self):
        utils = REFERENCE_DSL / "mscclpp/language/utils.py"
        if not utils.exists():
            self.skipTest(f"{utils} is not here: AlgoSpec's fields not checked against the reference DSL")
        fields = _dataclass_fields(utils, "AlgoSpec")
        self.assertEqual(fields, list(AlgoSpec.__dataclass_fields__))
        self.assertTrue(set(msclc.mscclpp.SPEC_FIELDS) <= set(fields))

    def test_signatures_are_mscclpps(self):
        source = os.environ.get("MSCCLPP_SOURCE")
        if not source:
            self.skipTest("MSCCLPP_SOURCE (a checkout of microsoft/mscclpp) not set: signatures not checked")
        root = Path(source)
        tree = ast.parse((root / "python/mscclpp/_core/algorithm.py").read_text())
        algorithm = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Algorithm")
        constraint = next(n for n in algorithm.body if isinstance(n, ast.ClassDef) and n.name == "Constraint")
        self.assertEqual(_init_args(algorithm), _stand_in_args(mscclpp.Algorithm))
        self.assertEqual(_init_args(constraint), _stand_in_args(mscclpp.Algorithm.Constraint))
        binding = (root / "python/csrc/executor_py.cpp").read_text()
        self.assertIn('nb::init<const std::string&, int>(), nb::arg("planPath"), nb::arg("rank")', binding)
        self.assertEqual(_stand_in_args(mscclpp.ExecutionPlan), ["planPath", "rank"])
        self.assertIn('"cache_dir"', (root / "python/csrc/env_py.cpp").read_text())
        exported = (root / "python/mscclpp/__init__.py").read_text()
        self.assertIn("CppExecutionPlan as ExecutionPlan", exported)
        self.assertIn('"Algorithm"', exported)


def _dataclass_fields(path: Path, name: str):
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)]


def _init_args(cls: ast.ClassDef):
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    return [a.arg for a in init.args.args[1:]]


def _stand_in_args(cls):
    import inspect

    return list(inspect.signature(cls.__init__).parameters)[1:]


if __name__ == "__main__":
    unittest.main()

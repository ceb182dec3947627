"""The msclc module as a user calls it, against the command it installs.

Run from the repository root, with the package installed (.ci/run does it
in a fresh virtual environment): python -m unittest discover -s python/tests
"""

import json
import os
import pickle
import subprocess
import stat
import tempfile
import unittest
import warnings
from unittest import mock
from pathlib import Path

import msclc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.mscl"))


def command(*args):
    return subprocess.run([msclc.binary(), *args], capture_output=True, text=True, cwd=ROOT)


class Docs(unittest.TestCase):
    def test_the_first_example_of_docs_python_runs_as_written(self):
        doc = (ROOT / "docs/python.md").read_text()
        snippet = doc.split("```python\n", 1)[1].split("```", 1)[0]
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory() as d:
            # As from the repository's folder, what it writes kept apart.
            for folder in ("examples", "benches"):
                os.symlink(ROOT / folder, Path(d) / folder)
            os.chdir(d)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", msclc.MsclcWarning)
                    names = {}
                    exec(snippet, names)
                self.assertTrue(Path("plan.json").is_file())
                self.assertTrue((Path("tuned") / "index.json").is_file())
            finally:
                os.chdir(cwd)
        self.assertTrue(names["report"]["verified"])
        self.assertEqual(names["found"][0].code, "W0502")


class Compile(unittest.TestCase):
    def test_every_example_gives_the_commands_plan(self):
        compiled = 0
        for path in EXAMPLES:
            out = command(str(path))
            if out.returncode != 0:
                with self.assertRaises(msclc.MsclcError, msg=str(path)) as raised:
                    msclc.compile(path)
                self.assertEqual(str(raised.exception), out.stderr.rstrip("\n"), path)
                continue
            with warnings.catch_warnings(record=True) as issued:
                warnings.simplefilter("always")
                self.assertEqual(msclc.compile(path), out.stdout, path)
            # Each warning the command prints, as a Python warning.
            said = [w.message.diagnostic for w in issued if issubclass(w.category, msclc.MsclcWarning)]
            self.assertEqual(said, msclc._diagnostics(out.stderr), path)
            compiled += 1
        self.assertGreater(compiled, 60)

    def test_warnings_are_python_warnings_that_say_where(self):
        path = ROOT / "benches/ring_allreduce.mscl"
        with warnings.catch_warnings(record=True) as issued:
            warnings.simplefilter("always")
            msclc.compile(path)
        first = issued[0]
        self.assertIs(first.category, msclc.MsclcWarning)
        self.assertEqual(first.filename, __file__, "attributed to the caller")
        self.assertTrue(str(first.message).startswith(f"{path}:28:"), str(first.message))
        self.assertIn("warning[W0502]", str(first.message))
        self.assertEqual(pickle.loads(pickle.dumps(first.message)).diagnostic, first.message.diagnostic)

    def test_a_killed_command_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            killed = Path(d) / "msclc"
            killed.write_text("#!/bin/sh\nkill -9 $$\n")
            killed.chmod(killed.stat().st_mode | stat.S_IXUSR)
            with mock.patch.dict(os.environ, {"MSCLC_BINARY": str(killed)}):
                with self.assertRaises(msclc.MsclcError) as raised:
                    msclc.compile(ROOT / "examples/simple_allgather.mscl")
        self.assertEqual(raised.exception.exit_code, -9)
        self.assertIn("was ended by SIGKILL", str(raised.exception))

    def test_a_command_that_fails_silently_says_so(self):
        with mock.patch.dict(os.environ, {"MSCLC_BINARY": "/bin/false"}):
            with self.assertRaises(msclc.MsclcError) as raised:
                msclc.compile(ROOT / "examples/simple_allgather.mscl")
        self.assertEqual(raised.exception.exit_code, 1)
        self.assertEqual(str(raised.exception), "/bin/false exited with status 1 and said nothing")

    def test_params_are_python_values(self):
        path = ROOT / "examples/simple_allgather.mscl"
        plan = json.loads(msclc.compile(path, num_gpus=4, name="four"))
        self.assertEqual(len(plan["gpus"]), 4)
        self.assertEqual(plan["name"], "four")
        cli = command(str(path), "-D", "num_gpus=4", "-D", "name=four")
        self.assertEqual(json.loads(cli.stdout), plan)

    def test_program_text_and_output_file(self):
        text = (ROOT / "examples/simple_allgather.mscl").read_text()
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "plan.json"
            plan = msclc.compile(text, output=out)
            self.assertEqual(out.read_text(), plan)
            self.assertEqual(plan, msclc.compile(ROOT / "examples/simple_allgather.mscl"))

    def test_a_mistake_raises_the_rendered_diagnostic(self):
        text = 'program "p" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\nlet x = y\n'
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.compile(text)
        error = raised.exception
        self.assertEqual(error.exit_code, 1)
        self.assertIn("error[E0", str(error))
        (d,) = [d for d in error.diagnostics if d.severity == "error"]
        self.assertEqual((d.line, d.column), (4, 9))
        self.assertEqual(d.file, "<program text>")
        self.assertIn("<program text>:4:9", str(error))
        self.assertIn("y", d.message)

    def test_program_text_imports_from_the_current_directory(self):
        text = 'import "lib.mscl"\nprogram "p" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\nassert(two() == 2, "")\n'
        before = os.getcwd()
        with tempfile.TemporaryDirectory() as d:
            Path(d, "lib.mscl").write_text("fn two() -> int {\n    return 2\n}\n")
            os.chdir(d)
            try:
                self.assertIn('"collective":"allgather"', msclc.compile(text))
                self.assertEqual(os.listdir(d), ["lib.mscl"], "the text's file is removed")
            finally:
                os.chdir(before)
        # From a folder no file can be made in (/proc, even as root), the
        # text goes to the system's temporary folder: an import not found
        # there says why.
        if os.path.isdir("/proc/self"):
            os.chdir("/proc")
            try:
                with self.assertRaises(msclc.MsclcError) as raised:
                    msclc.compile(text)
            finally:
                os.chdir(before)
            self.assertIn("(the current folder, /proc, cannot be written", str(raised.exception))

    def test_a_path_starting_with_a_dash_is_a_path(self):
        program = (ROOT / "examples/simple_allgather.mscl").read_text()
        before = os.getcwd()
        with tempfile.TemporaryDirectory() as d:
            Path(d, "-h").write_text(program)
            os.chdir(d)
            try:
                plan = msclc.compile("-h", output="-plan.json")
                self.assertEqual(Path(d, "-plan.json").read_text(), plan)
                self.assertEqual(plan, msclc.compile(ROOT / "examples/simple_allgather.mscl"))
                with self.assertRaises(msclc.MsclcError) as raised:
                    msclc.compile("my_program.mscl")
                self.assertEqual(raised.exception.exit_code, 2, "a missing file, not text")
            finally:
                os.chdir(before)

    def test_a_param_of_no_param_type_is_refused(self):
        path = ROOT / "examples/simple_allgather.mscl"
        for value in [None, 4.5, [1, 2]]:
            with self.assertRaises(TypeError, msg=repr(value)):
                msclc.compile(path, num_gpus=value)
        with self.assertRaises(TypeError):
            msclc.compile(path, **{"name=x": "y"})

    def test_each_diagnostic_keeps_its_own_notes(self):
        # Two reports one after the other, the first's last note of two
        # lines, then a report's plain lines: none joins another's notes.
        one = "error[E0603]: a race\n  = note: first\n    goes on\n\nthe user's read\n  hint: none\n"
        found = msclc._diagnostics(one + one)
        self.assertEqual([d.notes for d in found], [["note: first\ngoes on"]] * 2)

    def test_text_that_cannot_be_given_says_why(self):
        # One line is a path: the error says how to give it as text.
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.compile("param x: int = 1")
        self.assertIn("program text needs a line break", str(raised.exception))
        # A lone surrogate is no text to write; nothing is left behind.
        before = set(os.listdir("."))
        with self.assertRaisesRegex(ValueError, "lone surrogate"):
            msclc.compile("param x: int = 1\n// \udcff\n")
        self.assertEqual(set(os.listdir(".")), before)
        # Counts out of the command's range name the argument.
        for nranks in (0, -1, 2**32):
            with self.assertRaisesRegex(ValueError, f"nranks is {nranks}: give a whole number from 1"):
                msclc.sim(ROOT / "examples/simple_allgather.mscl", nranks=nranks)

    def test_a_note_of_several_lines_is_kept_whole(self):
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.compile(ROOT / "examples/simple_allgather.mscl", nope=1)
        (note,) = raised.exception.diagnostics[0].notes
        self.assertIn("num_gpus: int", note)


class Ops(unittest.TestCase):
    def test_the_listing_the_command_prints(self):
        example = str(ROOT / "examples/simple_allgather.mscl")
        listed = msclc.ops(example, num_gpus=3)
        self.assertEqual(listed, command(example, "-D", "num_gpus=3", "--emit", "ops").stdout)
        self.assertIn("    5  put output[0] -> rank(1).output[0]", listed)

    def test_program_text_is_named_so(self):
        text = (ROOT / "examples/simple_allgather.mscl").read_text()
        listed = msclc.ops(text)
        self.assertIn("// <program text>:19:9, src = 0, dst = 1", listed)
        self.assertNotIn(".msclc-", listed)

    def test_a_plan_is_listed_without_program_lines(self):
        plan = msclc.compile(str(ROOT / "examples/simple_allgather.mscl"))
        listed = msclc.ops(plan)
        self.assertIn("    5  put output[0] -> rank(1).output[0]\n", listed)
        self.assertNotIn("//", listed)


class Check(unittest.TestCase):
    def test_warnings_come_back_structured(self):
        path = ROOT / "benches/ring_allreduce.mscl"
        warnings = msclc.check(path)
        self.assertTrue(warnings)
        w = warnings[0]
        self.assertEqual((w.severity, w.code), ("warning", "W0502"))
        self.assertEqual(w.line, 28)
        self.assertTrue(any("64" in n for n in w.notes))


    def test_the_error_crosses_processes_whole(self):
        # multiprocessing and concurrent.futures pickle a worker's error.
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.compile("no_such_program.mscl")
        error = pickle.loads(pickle.dumps(raised.exception))
        self.assertEqual((str(error), error.exit_code), (str(raised.exception), 2))
        self.assertEqual(error.diagnostics, raised.exception.diagnostics)

    def test_output_names_what_the_command_would_write(self):
        path = ROOT / "examples/simple_allgather.mscl"
        with tempfile.TemporaryDirectory() as d:
            for folder in (d, os.path.join(d, "plans") + os.sep):
                with self.assertRaises(msclc.MsclcError, msg=folder) as raised:
                    msclc.compile(path, output=folder)
                self.assertEqual(raised.exception.exit_code, 2)
                self.assertEqual(raised.exception.diagnostics[0].code, "E0801")
            self.assertEqual(os.listdir(d), [])
            cwd = os.getcwd()
            os.chdir(d)
            try:
                self.assertEqual(msclc.compile(path, output="-"), msclc.compile(path))
                self.assertEqual(os.listdir(d), [])
            finally:
                os.chdir(cwd)

    def test_a_source_of_no_source_type_is_refused(self):
        for source in (b"plan.mscl", 3, None):
            with self.assertRaisesRegex(TypeError, "give a path", msg=repr(source)):
                msclc.compile(source)

    def test_a_plan_made_here_goes_back_in_as_text(self):
        plan = msclc.compile(ROOT / "examples/simple_allgather.mscl")
        self.assertTrue(msclc.sim(plan)["verified"])
        self.assertEqual(msclc.check(plan), [])

    def test_plan_text_that_is_not_json_gets_the_plan_readers_error(self):
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.sim('{"gpus": [}')
        self.assertIn("not JSON", str(raised.exception))
        self.assertIn("<plan text>", str(raised.exception))


class Sim(unittest.TestCase):
    def test_a_verdict_as_sim_json_gives_it(self):
        path = ROOT / "examples/simple_allgather.mscl"
        report = msclc.sim(path)
        self.assertTrue(report["verified"])
        self.assertEqual(report, json.loads(command("sim", str(path), "--json").stdout))

    def test_a_wrong_plan_is_a_verdict_not_an_exception(self):
        text = 'program "p" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\n'
        report = msclc.sim(text)
        self.assertFalse(report["verified"])
        self.assertEqual(report["runs"][0]["verdict"], "wrong result")

    def test_program_text_is_named_so_in_the_report(self):
        text = (ROOT / "examples/allreduce_nvls.mscl").read_text()
        report = msclc.sim(text)
        files = {loc["file"] for run in report["runs"] for p in run["problems"] for loc in p["locations"]}
        self.assertEqual(files, {"<program text>"})

    def test_program_text_is_named_so_wherever_the_folder_is(self):
        # The hidden file's path, JSON-escaped in the report where the
        # folder's name has a quote, is replaced all the same.
        text = (ROOT / "examples/allreduce_nvls.mscl").read_text()
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory() as d:
            quoted = Path(d) / 'a "quoted" folder'
            quoted.mkdir()
            os.chdir(quoted)
            try:
                report = msclc.sim(text)
            finally:
                os.chdir(cwd)
        files = {loc["file"] for run in report["runs"] for p in run["problems"] for loc in p["locations"]}
        self.assertEqual(files, {"<program text>"})

    def test_nranks_sets_the_rank_param(self):
        report = msclc.sim(ROOT / "examples/mscclpp/single_node/allreduce.mscl", nranks=4)
        self.assertEqual(report["ranks"], 4)
        for nranks in (True, 2.0, "4"):
            with self.assertRaisesRegex(TypeError, "nranks is", msg=repr(nranks)):
                msclc.sim(ROOT / "examples/simple_allgather.mscl", nranks=nranks)


class Timing(unittest.TestCase):
    def test_rows_of_the_predicted_table(self):
        rows = msclc.timing(ROOT / "examples/mscclpp/single_node/allreduce.mscl", "emulated-h100", "1K:1M")
        self.assertEqual([r["size"] for r in rows], [1024 << k for k in range(11)])
        self.assertTrue(all(r["time_us"] > 0 for r in rows))
        self.assertEqual(rows[-1]["redop"], "sum")

    def test_a_topology_file_is_a_path_whatever_its_name(self):
        program = ROOT / "examples/mscclpp/single_node/allreduce.mscl"
        builtin = msclc.timing(program, "h100-nvlink", "1K:4K")
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory() as d:
            os.chdir(d)
            try:
                Path("-topo.json").write_text('{"base": "h100-nvlink"}')
                self.assertEqual(msclc.timing(program, "-topo.json", "1K:4K"), builtin)
                self.assertEqual(msclc.timing(program, Path("-topo.json"), "1K:4K"), builtin)
            finally:
                os.chdir(cwd)

    def test_a_plan_the_simulator_finds_wrong_raises(self):
        # The NVLS AllReduce races (its closing handshake is relaxed): the
        # table comes with the error.
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.timing(ROOT / "examples/allreduce_nvls.mscl", "h100-nvls", "1K:4K")
        self.assertEqual(raised.exception.exit_code, 1)
        self.assertEqual(raised.exception.diagnostics[0].code, "E0603")
        self.assertEqual([r["size"] for r in raised.exception.rows], [1024, 2048, 4096])
        # One that never ends has no table.
        text = 'program "p" {\n    collective = allgather(2, chunk_factor: 1, inplace: false)\n}\n'
        text += "let a = memory_channel(1, 0)\nlet b = memory_channel(0, 1)\n"
        text += "a.wait(tb: 0)\na.signal(tb: 0)\nb.wait(tb: 0)\nb.signal(tb: 0)\n"
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.timing(text, "h100-nvlink", "1K:4K")
        self.assertEqual((raised.exception.exit_code, raised.exception.rows), (1, []))
        self.assertEqual(raised.exception.diagnostics[0].code, "E0602")
        self.assertEqual(raised.exception.diagnostics[0].file, "<program text>")
        # No size of the range runs it (exit code 2): the race found
        # before is said too.
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.timing(ROOT / "examples/allreduce_nvls.mscl", "h100-nvls", "16:16")
        self.assertEqual(raised.exception.exit_code, 2)
        codes = [d.code for d in raised.exception.diagnostics]
        self.assertEqual((codes[0], codes[-1]), ("E0603", "E0808"))


class Tune(unittest.TestCase):
    PROGRAM = ROOT / "examples/mscclpp/default_algos/allreduce_multi_nodes.mscl"

    def test_the_index_of_the_plan_set_as_the_command_writes_it(self):
        with tempfile.TemporaryDirectory() as d:
            index = msclc.tune(self.PROGRAM, "h100-ib", "1K:64K", output=d, vary={"tbg": [1, 4]}, num_gpus=16)
            with open(Path(d) / "index.json") as f:
                self.assertEqual(json.load(f), index)
            cli = Path(d) / "cli"
            out = command("tune", str(self.PROGRAM), "--timing", "h100-ib", "--size", "1K:64K",
                          "--vary", "tbg=1,4", "-D", "num_gpus=16", "-o", str(cli))
            self.assertEqual(out.returncode, 0, out.stderr)
            with open(cli / "index.json") as f:
                self.assertEqual(json.load(f)["plans"], index["plans"])
        self.assertEqual(index["fixed"], {"num_gpus": "16"})
        self.assertEqual([p["params"]["tbg"] for p in index["plans"]], ["4"])
        self.assertEqual(index["dropped"][0]["params"], "tbg=1 instances=2")

    def test_program_text_is_named_so_in_the_files_kept(self):
        text = self.PROGRAM.read_text()
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory() as d:
            os.chdir(d)
            try:
                index = msclc.tune(text, "h100-ib", "1K:4K", output="tuned", vary={"tbg": [4]}, num_gpus=16)
                with open("tuned/index.json") as f:
                    self.assertEqual(json.load(f), index)
                self.assertEqual(index["program"], "<program text>")
                with open("tuned/busbw.svg") as f:
                    self.assertIn("&lt;program text&gt; on h100-ib", f.read())
                self.assertEqual(sorted(os.listdir(".")), ["tuned"], "no hidden file is left")
                # Rewritten with the permissions the command gave them.
                modes = {stat.S_IMODE(p.stat().st_mode) for p in Path("tuned").iterdir()}
                self.assertEqual(len(modes), 1, modes)
                # The command takes the folder for its own again.
                msclc.tune(text, "h100-ib", "1K:4K", output="tuned", vary={"tbg": [4]}, num_gpus=16)
            finally:
                os.chdir(cwd)

    def test_vary_takes_a_list(self):
        for values in ("12", 4):
            with self.assertRaisesRegex(TypeError, "as a list"):
                msclc.tune(self.PROGRAM, "h100-ib", "1K:4K", vary={"tbg": values})
        for vary in ([("tbg", [1])], {"a=b": [1]}):
            with self.assertRaisesRegex(TypeError, "vary", msg=repr(vary)):
                msclc.tune(self.PROGRAM, "h100-ib", "1K:4K", vary=vary)
        with self.assertRaisesRegex(ValueError, "is empty"):
            msclc.tune(self.PROGRAM, "h100-ib", "1K:4K", vary={"tbg": []})

    def test_within_is_a_percentage(self):
        with self.assertRaisesRegex(TypeError, r"give a percentage, a number \(5 for 5%\)"):
            msclc.tune(self.PROGRAM, "h100-ib", "1K:4K", within="5")
        with self.assertRaisesRegex(msclc.MsclcError, "not a percentage from 0 to 100"):
            msclc.tune(self.PROGRAM, "h100-ib", "1K:4K", within=101)

    def test_dtype_is_the_commands(self):
        index = msclc.tune(self.PROGRAM, "h100-ib", "1K:4K", vary={"tbg": [4]}, dtype="float16", num_gpus=16)
        self.assertEqual(len(index["plans"]), 1)

    def test_nothing_that_verifies_raises(self):
        with self.assertRaises(msclc.MsclcError) as raised:
            msclc.tune(self.PROGRAM, "h100-ib", "1K:4K", vary={"tbg": [1]}, instances=2)
        self.assertEqual(raised.exception.exit_code, 1)
        self.assertEqual(raised.exception.diagnostics[0].code, "E0606")


if __name__ == "__main__":
    unittest.main()

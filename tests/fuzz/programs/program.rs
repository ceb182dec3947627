//! Generated functions, params, the program block and imports: a whole
//! program.

use super::*;

impl Gen {
    // ------------------------------------------------------------ functions

    /// A function definition, recorded so that later code can call it.
    pub(crate) fn function(&mut self) -> String {
        if self.rng.chance(35) {
            return self.recursive_function();
        }
        let name = self.fresh("f");
        let mut params = Vec::new();
        let mut text_params = Vec::new();
        for k in 0..self.rng.below(4) {
            let ty = self.any_type();
            let pname = format!("p{k}");
            let default = if self.rng.chance(30) && !ty.needs_program() {
                let saved = self.vars.clone();
                self.vars.clear();
                let d = self.expr(&ty, 8).0;
                self.vars = saved;
                Some(d)
            } else if self.mistake() {
                Some(format!("{name}()"))
            } else {
                None
            };
            text_params.push(match &default {
                Some(d) => format!("{pname}: {} = {d}", ty.syntax()),
                None => format!("{pname}: {}", ty.syntax()),
            });
            params.push((pname, ty, default.is_some()));
        }
        let ret = if self.rng.chance(60) {
            Some(self.any_type())
        } else {
            None
        };
        // The body sees its parameters and the program's params only, and
        // its loops stay within FN_ITERATIONS.
        let saved_vars = std::mem::take(&mut self.vars);
        let saved = (self.mult, self.loop_depth, self.in_fn);
        for (p, ty) in self.params.clone() {
            self.declare(&p, ty, 64);
        }
        for (p, ty, _) in &params {
            self.declare(p, ty.clone(), 8);
        }
        self.mult = ITERATION_BUDGET / FN_ITERATIONS;
        self.loop_depth = 0;
        self.in_fn = true;
        let mut body = self.block(2, 0, 3);
        let mut ret_len = 0;
        if let Some(t) = &ret {
            self.depth = 2;
            let (value, len) = self.expr(t, self.cap());
            ret_len = len;
            if self.rng.chance(20) {
                let cond = self.boolean();
                let early = self.expr(t, self.cap()).0;
                body = format!("    if {cond} {{ return {early} }}\n{body}");
            }
            body = format!("{body}\n    return {value}");
        }
        self.vars = saved_vars;
        (self.mult, self.loop_depth, self.in_fn) = saved;
        let arrow = ret
            .as_ref()
            .map_or(String::new(), |t| format!(" -> {}", t.syntax()));
        let needs_program = self.after_program;
        self.fns.push(UserFn {
            name: name.clone(),
            params,
            ret,
            ret_len: ret_len.min(u64::MAX / 2),
            cost: FN_ITERATIONS,
            needs_program,
        });
        format!(
            "fn {name}({}){arrow} {{\n{body}\n}}",
            text_params.join(", ")
        )
    }

    /// A function that calls itself once per call (never twice: that is
    /// exponential, and a known hang); its first parameter counts down, or,
    /// by mistake, up until the recursion limit stops it.
    pub(crate) fn recursive_function(&mut self) -> String {
        let name = self.fresh("r");
        let step = if self.mistake() { "n + 1" } else { "n - 1" };
        let (text, ret, ret_len) = match self.rng.below(4) {
            0 => (
                format!("fn {name}(n: int, acc: int = 0) -> int {{\n    if n <= 0 {{ return acc }}\n    return {name}({step}, acc + n * {})\n}}", self.small_int()),
                Some(Ty::Int),
                0,
            ),
            1 => (
                format!("fn {name}(n: int) -> list[int] {{\n    if n <= 0 {{ return [] }}\n    return {name}({step}) + [n]\n}}"),
                Some(Ty::list(Ty::Int)),
                RECURSION_COST,
            ),
            2 if self.after_program => {
                let ranks = self.ranks;
                (
                    format!("fn {name}(n: int) {{\n    if n > 0 {{\n        rank(n % {ranks}).copy(rank(n % {ranks}).output[0], rank(n % {ranks}).input[0], tb: n % 4)\n        {name}({step})\n    }}\n}}"),
                    None,
                    0,
                )
            }
            _ => (
                format!("fn {name}(n: int, s: str = \"\") -> str {{\n    if n <= 0 || len(s) > 64 {{ return s }}\n    return {name}({step}, s + str(n))\n}}"),
                Some(Ty::Str),
                RECURSION_COST * 8,
            ),
        };
        let mut params = vec![("n".to_string(), Ty::Int, false)];
        if text.contains("acc: int") {
            params.push(("acc".to_string(), Ty::Int, true));
        }
        if text.contains("s: str") {
            params.push(("s".to_string(), Ty::Str, true));
        }
        let needs_program = self.after_program;
        self.fns.push(UserFn {
            name,
            params,
            ret,
            ret_len,
            cost: RECURSION_COST,
            needs_program,
        });
        text
    }

    // -------------------------------------------------------------- program

    pub(crate) fn param_decl(&mut self) -> String {
        let (ty, default) = match self.rng.below(8) {
            0 | 1 => (Ty::Int, self.int_leaf()),
            2 => (Ty::Bool, self.rng.pick(&["true", "false"]).into()),
            3 => (Ty::Str, self.string_literal().0),
            4 => (Ty::Protocol, self.rng.pick(&["Simple", "LL"]).into()),
            5 => (Ty::SyncType, self.expr(&Ty::SyncType, 1).0),
            6 => (Ty::ReduceOp, self.expr(&Ty::ReduceOp, 1).0),
            _ => (Ty::Policy, self.expr(&Ty::Policy, 1).0),
        };
        let name = self.fresh("q");
        let ty_text = if self.mistake() {
            "list[int]".to_string()
        } else {
            ty.syntax()
        };
        self.params.push((name.clone(), ty.clone()));
        self.declare(&name, ty, 64);
        format!("param {name}: {ty_text} = {default}")
    }

    /// `-D NAME=VALUE` settings: mostly right for the param's type.
    pub(crate) fn defines(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if self.params.is_empty() || !self.rng.chance(30) {
            return out;
        }
        for _ in 0..self.rng.range(1, 2) {
            let (name, ty) = self.params[self.rng.below(self.params.len() as u64) as usize].clone();
            let value: String = if self.rng.chance(75) {
                match ty {
                    Ty::Int => self
                        .rng
                        .pick(&[
                            "0",
                            "1",
                            "2",
                            "4",
                            "8",
                            "-1",
                            "0x10",
                            "18446744073709551615",
                            "9223372036854775807",
                        ])
                        .into(),
                    Ty::Bool => self.rng.pick(&["true", "false"]).into(),
                    Ty::Str => self
                        .rng
                        .pick(&["", "x", "é🚀", "a b", "\"q\"", "line\nbreak"])
                        .into(),
                    Ty::Protocol => self.rng.pick(&["Simple", "LL"]).into(),
                    Ty::SyncType => self.rng.pick(&["none", "before", "after", "both"]).into(),
                    Ty::ReduceOp => self.rng.pick(&["sum", "min", "max"]).into(),
                    _ => self.rng.pick(&["interleaved", "none"]).into(),
                }
            } else {
                self.rng
                    .pick(&[
                        "",
                        "abc",
                        "18446744073709551616",
                        "-9223372036854775808",
                        "--5",
                        "0x",
                        "1e3",
                        "TRUE",
                        "=",
                        "🚀",
                    ])
                    .into()
            };
            let name = if self.rng.chance(5) {
                "undeclared".to_string()
            } else {
                name
            };
            out.push("-D".to_string());
            out.push(format!("{name}={value}"));
        }
        out
    }

    /// The `program` block: a collective with small or extreme arguments,
    /// and some of the options.
    pub(crate) fn program_block(&mut self) -> String {
        let kind = self.rng.pick(&[
            "allreduce",
            "allgather",
            "alltoall",
            "reducescatter",
            "sendrecv",
            "test_collective",
        ]);
        let n = self.planned_ranks;
        let c: i64 = if self.rng.chance(92) {
            self.rng.range(1, 3) as i64
        } else {
            self.rng.pick(&[0, -1, 1024, 1048576, 1048577, 1 << 40])
        };
        let n_text = match self.params.iter().find(|(p, _)| p == "num_gpus") {
            Some((p, _)) => p.clone(),
            None => n.to_string(),
        };
        let collective = if kind == "test_collective" {
            let (i, o) = if self.wild() {
                (self.rng.range(0, 4), self.rng.range(0, 4))
            } else {
                (self.rng.range(1, 4), self.rng.range(1, 4))
            };
            self.chunks = i.min(o).max(1);
            format!("test_collective({n_text}, input_size: {i}, output_size: {o})")
        } else {
            // Chunks of the smaller of the input and output buffers.
            let per_rank = match kind {
                "allreduce" | "alltoall" => self.ranks,
                _ => 1,
            };
            let mut args = vec![n_text];
            if self.rng.chance(70) {
                args.push(format!("chunk_factor: {c}"));
                self.chunks = per_rank * c.clamp(1, 3) as u64;
            } else {
                self.chunks = per_rank;
            }
            if self.rng.chance(50) {
                args.push(format!("inplace: {}", self.rng.pick(&["true", "false"])));
            }
            if self.mistake() {
                args.push(self.rng.pick(&["nope: 1", "inplace: 1", "2"]).into());
            }
            format!("{kind}({})", args.join(", "))
        };
        let mut options = vec![format!("    collective = {collective}")];
        let pick_int =
            |rng: &mut Rng, usual: &[&'static str], extreme: &[&'static str]| -> String {
                if rng.chance(90) {
                    rng.pick(usual).into()
                } else {
                    rng.pick(extreme).into()
                }
            };
        if self.rng.chance(30) {
            let v = pick_int(
                &mut self.rng,
                &["1", "2"],
                &["0", "-1", "64", "1024", "1025"],
            );
            if v.parse::<i64>().unwrap_or(0) >= 64 {
                self.heavy = true;
            }
            options.push(format!("    instances = {v}"));
        }
        let flags = [
            "instr_fusion",
            "auto_sync",
            "reuse_resources",
            "use_double_scratch_buffer",
        ];
        for flag in flags {
            if self.rng.chance(20) {
                options.push(format!("    {flag} = {}", self.boolean()));
            }
        }
        if self.rng.chance(40) {
            options.push(format!("    protocol = {}", self.expr(&Ty::Protocol, 1).0));
        }
        if self.rng.chance(20) {
            options.push(format!(
                "    replication_policy = {}",
                self.expr(&Ty::Policy, 1).0
            ));
        }
        if self.rng.chance(20) {
            let v = pick_int(
                &mut self.rng,
                &["1024", "512"],
                &["0", "1025", "4096", "-1"],
            );
            options.push(format!("    num_threads_per_block = {v}"));
        }
        if self.rng.chance(15) {
            let v = pick_int(&mut self.rng, &["16"], &["0", "3", "18446744073709551615"]);
            options.push(format!("    buffer_alignment = {v}"));
        }
        if self.rng.chance(20) {
            let v = pick_int(
                &mut self.rng,
                &["0", "1024"],
                &["18446744073709551615", "-1"],
            );
            options.push(format!("    min_message_size = {v}"));
        }
        if self.rng.chance(20) {
            let v = pick_int(
                &mut self.rng,
                &["1 << 30", "18446744073709551615"],
                &["0", "-1"],
            );
            options.push(format!("    max_message_size = {v}"));
        }
        if self.rng.chance(10) {
            let v = if self.rng.chance(80) {
                n.to_string()
            } else {
                self.int()
            };
            options.push(format!("    num_ranks = {v}"));
        }
        if self.mistake() {
            options.push(
                self.rng
                    .pick(&[
                        "    nope = 1",
                        "    instances = true",
                        "    collective = 3",
                        "    protocol = LL\n    protocol = Simple",
                    ])
                    .into(),
            );
        }
        if self.mistake() {
            options.remove(0);
        }
        // Shuffle: the block's options may come in any order.
        for k in (1..options.len()).rev() {
            let j = self.rng.below(k as u64 + 1) as usize;
            options.swap(k, j);
        }
        let name = match self.rng.below(5) {
            0 => format!("\"ar\" + str({})", self.small_int()),
            1 => match self.params.iter().find(|(_, t)| *t == Ty::Str) {
                Some((p, _)) => p.clone(),
                None => self.string_literal().0,
            },
            _ => self.string_literal().0,
        };
        format!("program {name} {{\n{}\n}}", options.join("\n"))
    }

    /// A whole program: imports, params, functions, the program block, then
    /// statements.
    pub(crate) fn program(mut self) -> Program {
        let mut parts = Vec::new();
        let mut helper = None;
        // The rank count comes first: a param may hold it, and rank
        // numbers everywhere are drawn below it.
        let n: i64 = if self.rng.chance(94) {
            self.rng.pick(&[1, 2, 2, 3, 4, 4, 5, 6, 7, 8])
        } else {
            self.rng
                .pick(&[0, -1, 16, 64, 4096, 65536, 1048576, 1048577, i64::MAX])
        };
        self.heavy = n > 4096;
        self.runaway = self.rng.chance(20);
        self.planned_ranks = n;
        self.ranks = n.clamp(1, 8) as u64;
        if self.rng.chance(30) {
            self.sync_lib = true;
            parts.push("import \"std/sync\"".to_string());
        }
        if self.rng.chance(30) {
            self.peers_lib = true;
            parts.push("import \"std/peers\"".to_string());
        }
        if self.rng.chance(3) {
            let (line, file) = self.import_oddity();
            parts.push(line);
            helper = file;
        }
        if self.rng.chance(25) {
            parts.push(format!("param num_gpus: int = {n}"));
            self.params.push(("num_gpus".into(), Ty::Int));
            self.declare("num_gpus", Ty::Int, 0);
        }
        for _ in 0..self.rng.below(4) {
            parts.push(self.param_decl());
        }
        for _ in 0..self.rng.below(3) {
            parts.push(self.function());
        }
        let missing_block = self.mistake();
        if !missing_block {
            parts.push(self.program_block());
        }
        self.after_program = true;
        for _ in 0..self.rng.below(3) {
            parts.push(self.function());
        }
        for _ in 0..self.rng.range(2, 12) {
            parts.push(self.stmt(3));
        }
        if self.mistake() {
            parts.push(self.param_decl());
        }
        let defines = self.defines();
        let mut text = parts.join("\n");
        text.push('\n');
        Program {
            text,
            defines,
            helper,
            heavy: self.heavy,
        }
    }

    /// An import of something unusual, and the file it names (written next
    /// to the program) if any.
    pub(crate) fn import_oddity(&mut self) -> (String, Option<Vec<u8>>) {
        let (path, file): (&str, Option<&[u8]>) = match self.rng.below(9) {
            0 => (
                "helper.mscl",
                Some(b"fn helper_fn(x: int) -> int {\n    return x + 1\n}\n"),
            ),
            1 => (
                "helper.mscl",
                Some(b"fn helper_fn(x: int) -> int {\n    return x +\n}\n"),
            ),
            2 => ("helper.mscl", Some(b"let x = 1\n")),
            3 => ("helper.mscl", Some(b"import \"case.mscl\"\n")),
            4 => ("helper.mscl", Some(b"fn h() {}\n\xff\xfe\n")),
            5 => ("case.mscl", None),
            6 => ("std/nope", None),
            7 => ("/dev/null", None),
            _ => (".", None),
        };
        (format!("import \"{path}\""), file.map(|f| f.to_vec()))
    }
}

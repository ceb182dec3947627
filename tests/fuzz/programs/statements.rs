//! Generated statements: ops, blocks, `let`, assignments, loops, `if`,
//! calls and pipelines.

use super::*;

impl Gen {
    // ----------------------------------------------------------- statements

    pub(crate) fn tb_spec(&mut self, group_allowed: bool) -> String {
        if self.mistake() {
            return self
                .rng
                .pick(&[
                    "",
                    "tb: 0, tb_group: tb_group([0])",
                    "tb: \"0\"",
                    "tb_group: 0",
                ])
                .into();
        }
        if group_allowed && self.rng.chance(10) {
            if let Some((g, _)) = self.var_of(&Ty::TbGroup, u64::MAX) {
                return format!("tb_group: {g}");
            }
            return format!("tb_group: tb_group({})", self.tb_list());
        }
        format!("tb: {}", self.tb_no())
    }

    /// `, name: value` for an optional keyword argument, half the time.
    pub(crate) fn opt(&mut self, name: &str, ty: &Ty) -> String {
        if self.rng.chance(50) {
            String::new()
        } else {
            format!(", {name}: {}", self.expr(ty, 4).0)
        }
    }

    /// An operation: a method of a rank, channel, switch or semaphore. With
    /// `emitting`, only ones that always emit an op (or fail).
    pub(crate) fn op(&mut self, emitting: bool) -> String {
        let ranks = self.ranks;
        let d = self.rng.below(ranks);
        let s = if ranks > 1 {
            (d + 1 + self.rng.below(ranks - 1)) % ranks
        } else {
            d
        };
        let (i, j) = (self.chunk_index(), self.chunk_index());
        let which = if emitting {
            self.rng.below(4)
        } else {
            self.rng.below(16)
        };
        match which {
            0 => {
                let tb = self.tb_spec(true);
                let m = self
                    .rng
                    .pick(&["copy", "copy", "copy_packets", "unpack_packets"]);
                let (dst, src) = if self.wild() {
                    (self.chunk(), self.chunk())
                } else {
                    // Packets go into scratch, and are unpacked out of it.
                    let (dst_buf, src_buf) = match m {
                        "copy_packets" => ("scratch", "input"),
                        "unpack_packets" => ("output", "scratch"),
                        _ => ("output", "input"),
                    };
                    (self.on_rank(d, dst_buf, i), self.on_rank(d, src_buf, j))
                };
                format!("rank({d}).{m}({dst}, {src}, {tb})")
            }
            1 => {
                let ch = self.mem_channel(d, s);
                let tb = self.tb_spec(true);
                let m = self
                    .rng
                    .pick(&["put", "put", "get", "put_packets", "read_put_packets"]);
                let (dst, src) = match m {
                    "get" => (self.on_rank(s, "input", i), self.on_rank(d, "output", j)),
                    "put_packets" => (self.on_rank(d, "scratch", i), self.on_rank(s, "input", j)),
                    "read_put_packets" => {
                        (self.on_rank(d, "scratch", i), self.on_rank(s, "scratch", j))
                    }
                    _ => (self.on_rank(d, "output", i), self.on_rank(s, "input", j)),
                };
                format!("{ch}.{m}({dst}, {src}, {tb})")
            }
            2 | 3 => {
                let ch = self.mem_channel(d, s);
                let m = if which == 2 { "signal" } else { "wait" };
                let tb = self.tb_no();
                let sync = self.opt("data_sync", &Ty::SyncType);
                let relaxed = self.opt("relaxed", &Ty::Bool);
                let op = format!("{ch}.{m}(tb: {tb}{sync}{relaxed})");
                if emitting || self.rng.chance(15) {
                    return op;
                }
                // Mostly as a pair: a signal of src to dst, the wait of dst
                // for src, so that the program gets past the matching check.
                let sync = self.opt("data_sync", &Ty::SyncType);
                format!("memory_channel({d}, {s}).signal(tb: {tb}{relaxed})\nmemory_channel({s}, {d}).wait(tb: {tb}{sync}{relaxed})")
            }
            4 => {
                let tb = self.tb_spec(true);
                let others = if !self.wild() {
                    let n = self.rng.range(1, 3);
                    let items: Vec<String> = (0..n)
                        .map(|_| {
                            let k = self.rng.below(self.chunks);
                            self.on_rank(d, "output", k)
                        })
                        .collect();
                    format!("[{}]", items.join(", "))
                } else {
                    self.list(&Ty::Chunk, 4).0
                };
                let dst = if self.wild() {
                    self.opt("dst_chunk", &Ty::Chunk)
                } else if self.rng.chance(50) {
                    format!(", dst_chunk: {}", self.on_rank(d, "output", i))
                } else {
                    String::new()
                };
                let op = self.opt("reduce_op", &Ty::ReduceOp);
                // Packet operands live in scratch: only the wild say so here.
                let packet = if self.wild() {
                    self.opt("packet", &Ty::Bool)
                } else {
                    String::new()
                };
                format!("rank({d}).reduce(rank({d}).input[{i}], {others}, {tb}{dst}{op}{packet})")
            }
            5 => format!("rank({d}).barrier(tb_list: {})", self.tb_list()),
            6 => {
                let ch = self.mem_channel(d, s);
                let tb = self.tb_spec(true);
                let dst = if self.wild() {
                    self.opt("local_dst_chunk", &Ty::Chunk)
                } else if self.rng.chance(50) {
                    format!(", local_dst_chunk: {}", self.on_rank(s, "output", i))
                } else {
                    String::new()
                };
                let op = self.opt("reduce_op", &Ty::ReduceOp);
                // The local chunks are on the channel's source rank.
                format!("{ch}.reduce(rank({s}).input[{i}], [rank({d}).input[{j}]], {tb}{dst}{op})")
            }
            7 | 8 => {
                let tb = self.tb_no();
                let sync = self.opt("data_sync", &Ty::SyncType);
                if self.rng.chance(60) {
                    // A signal and the peer's wait, as for memory channels.
                    return format!("port_channel({d}, {s}).signal(tb: {tb}{sync})\nport_channel({s}, {d}).wait(tb: {tb})");
                }
                let ch = self.expr(&Ty::PortCh, 1).0;
                let m = self.rng.pick(&["signal", "wait", "flush"]);
                format!("{ch}.{m}(tb: {tb}{sync})")
            }
            9 => {
                let ch = format!("port_channel({d}, {s})");
                let m = self.rng.pick(&[
                    "put",
                    "put_with_signal",
                    "put_with_signal_and_flush",
                    "put_packets",
                    "read_put_packets",
                ]);
                let tb = self.tb_spec(m == "read_put_packets");
                let (dst, src) = match m {
                    "put_packets" => (self.on_rank(d, "scratch", i), self.on_rank(s, "input", j)),
                    "read_put_packets" => {
                        (self.on_rank(d, "scratch", i), self.on_rank(s, "scratch", j))
                    }
                    _ => (self.on_rank(d, "output", i), self.on_rank(s, "input", j)),
                };
                format!("{ch}.{m}({dst}, {src}, {tb})")
            }
            10 => {
                let sw = self.expr(&Ty::SwitchCh, 1).0;
                let tb = self.tb_no();
                let op = self.opt("reduce_op", &Ty::ReduceOp);
                if self.rng.chance(50) {
                    format!("{sw}.at_rank({d}).reduce(buffer_offset: {i}, size: 1, dst_chunk: rank({d}).input[{i}], tb: {tb}{op})")
                } else {
                    format!("{sw}.reduce({d}, buffer_offset: {i}, size: 1, dst_chunk: rank({d}).input[{i}], tb: {tb}{op})")
                }
            }
            11 => {
                let sw = self.expr(&Ty::SwitchCh, 1).0;
                let tb = self.tb_no();
                let m = self.rng.pick(&["broadcast", "broadcast_packets"]);
                let size = if self.wild() {
                    self.rng.pick(&["2", "0", "-1"])
                } else {
                    "1"
                };
                format!("{sw}.at_rank({d}).{m}(rank({d}).input[{i}], buffer_offset: {j}, size: {size}, tb: {tb})")
            }
            12 => {
                let sem = self.expr(&Ty::Sem, 1).0;
                let m = self.rng.pick(&["acquire", "release"]);
                let tb = self.tb_no();
                let sync = self.opt("data_sync", &Ty::SyncType);
                format!("{sem}.{m}(tb: {tb}{sync})")
            }
            13 if self.sync_lib => {
                let n = self.ranks.min(4);
                let tb = self.tb_no();
                let relaxed = self.opt("relaxed", &Ty::Bool);
                format!("all_pairs_barrier(all_pairs_channels({n}), {n}, {tb}{relaxed})")
            }
            14 if self.mistake() => {
                // A method the receiver does not have, or a wrong arity.
                self.rng
                    .pick(&[
                        "rank(0).put(rank(0).input[0], rank(0).input[0], tb: 0)",
                        "memory_channel(0, 1).copy(tb: 0)",
                        "rank(0).copy(rank(0).input[0], tb: 0)",
                        "rank(0).copy(rank(0).input[0], rank(0).output[0], rank(0).output[0], tb: 0)",
                        "rank(0).copy(dst_chunk: rank(0).input[0], rank(0).output[0], tb: 0)",
                        "rank(0).copy(rank(0).input[0], rank(0).output[0], tb: 0, tb: 1)",
                    ])
                    .into()
            }
            15 if self.wild() => {
                // Any chunks at all.
                let tb = self.tb_spec(true);
                let (a, b) = (self.chunk(), self.chunk());
                format!("rank({}).copy({a}, {b}, {tb})", self.rank_no())
            }
            _ => {
                let tb = self.tb_spec(true);
                let (a, b) = (self.on_rank(d, "output", i), self.on_rank(d, "input", j));
                format!("rank({d}).copy({a}, {b}, {tb})")
            }
        }
    }

    /// A chunk of rank `r`'s `buffer` (input, output or scratch) at `i`.
    pub(crate) fn on_rank(&mut self, r: u64, buffer: &str, i: u64) -> String {
        match buffer {
            "scratch" => format!("scratch({r}, {})[{}]", self.chunks, i % self.chunks.max(1)),
            _ => format!("rank({r}).{buffer}[{i}]"),
        }
    }

    pub(crate) fn mem_channel(&mut self, d: u64, s: u64) -> String {
        if self.rng.chance(85) {
            format!("memory_channel({d}, {s})")
        } else {
            self.channel("memory_channel")
        }
    }

    /// A block of `lo..=hi` statements, each on its own line.
    pub(crate) fn block(&mut self, nest: u32, lo: u64, hi: u64) -> String {
        let n = self.rng.range(lo, hi);
        let saved = self.vars.len();
        let body: Vec<String> = (0..n).map(|_| self.stmt(nest)).collect();
        self.vars.truncate(saved);
        indent(&body.join("\n"))
    }

    pub(crate) fn stmt(&mut self, nest: u32) -> String {
        self.depth = self.rng.range(1, 4) as u32;
        let s = loop {
            let s = match self.rng.below(100) {
                0..=19 => self.let_stmt(),
                20..=23 => self.let_tuple(),
                24..=31 => self.assign(),
                32..=56 if self.after_program => Some(self.op(false)),
                57..=68 if nest > 0 => self.for_stmt(nest),
                69 if nest > 0 && self.after_program && self.runaway => {
                    Some(self.runaway_loop(nest))
                }
                71..=78 if nest > 0 => Some(self.if_stmt(nest)),
                79..=81 => Some(format!(
                    "assert({}, {})",
                    self.boolean(),
                    self.string(self.cap()).0
                )),
                82..=86 => self.call_stmt(),
                87..=89 if nest > 0 && self.after_program => self.pipeline(nest),
                90 if self.mistake() => Some(format!("return {}", self.int())),
                91 if self.mistake() => Some(
                    self.rng
                        .pick(&[
                            "let = 1",
                            "for in 0..1 {}",
                            "x.",
                            "if {}",
                            "rank(0).input[0] = 1",
                            "f(",
                            "}",
                        ])
                        .into(),
                ),
                _ => None,
            };
            if let Some(s) = s {
                break s;
            }
        };
        let sep = if self.rng.chance(10) { ";" } else { "" };
        format!("{s}{sep}")
    }

    pub(crate) fn let_stmt(&mut self) -> Option<String> {
        let ty = self.any_type();
        let cap = self.cap();
        let (value, len) = self.expr(&ty, cap);
        // Sometimes shadow an existing name, with a value of another type.
        let name = match self.visible().first() {
            Some(v) if self.rng.chance(10) => v.name.clone(),
            _ => self.fresh("v"),
        };
        self.declare(&name, ty, len);
        Some(format!("let {name} = {value}"))
    }

    pub(crate) fn let_tuple(&mut self) -> Option<String> {
        let (a, b) = (self.fresh("a"), self.fresh("b"));
        let cap = self.cap();
        let value = self.expr(&Ty::Tuple(vec![Ty::Int, Ty::list(Ty::Int)]), cap);
        let pattern = match self.rng.below(4) {
            0 => format!("(_, {b})"),
            1 if self.mistake() => format!("({a}, {b}, c)"),
            _ => format!("({a}, {b})"),
        };
        if pattern.contains(&a) {
            self.declare(&a, Ty::Int, 0);
        }
        self.declare(&b, Ty::list(Ty::Int), value.1);
        Some(format!("let {pattern} = {}", value.0))
    }

    /// `x = value`. From inside a loop, a list, map or string declared
    /// outside it takes no value bigger than the one it has: `x = x + x`
    /// there would double it every iteration (tests/limits.rs has that).
    pub(crate) fn assign(&mut self) -> Option<String> {
        let vars = self.visible();
        if vars.is_empty() {
            return None;
        }
        let v = vars[self.rng.below(vars.len() as u64) as usize].clone();
        let outer = v.loop_depth < self.loop_depth;
        let cap = if outer {
            v.len.min(self.cap())
        } else {
            self.cap()
        };
        let (value, len) = self.expr(&v.ty, cap);
        if let Some(var) = self.vars.iter_mut().rev().find(|x| x.name == v.name) {
            var.len = var.len.max(len);
        }
        Some(format!("{} = {value}", v.name))
    }

    /// A `for` with one or two clauses, maybe a `where`, whose iterations
    /// stay within the budget.
    pub(crate) fn for_stmt(&mut self, nest: u32) -> Option<String> {
        let budget = self.iterations_left();
        if budget < 1 {
            return None;
        }
        let saved = self.vars.len();
        let mut clauses = Vec::new();
        let mut total = 1u64;
        for _ in 0..self.rng.range(1, 2) {
            let room = budget / total;
            let (text, n) = self.for_clause(room);
            clauses.push(text);
            total = total.saturating_mul(n.max(1));
        }
        let filter = if self.rng.chance(30) {
            format!(" where {}", self.boolean())
        } else {
            String::new()
        };
        self.mult = self.mult.saturating_mul(total);
        self.loop_depth += 1;
        let body = self.block(nest - 1, 1, 4);
        self.loop_depth -= 1;
        self.mult /= total;
        self.vars.truncate(saved);
        Some(format!("for {}{filter} {{\n{body}\n}}", clauses.join(", ")))
    }

    /// `PATTERN in ITERABLE` with at most `room` iterations; declares the
    /// loop variables.
    pub(crate) fn for_clause(&mut self, room: u64) -> (String, u64) {
        let v = self.fresh("i");
        let room = room.max(1);
        match self.rng.below(10) {
            0..=4 => {
                let (r, n) = self.range(room);
                let n = if n == u64::MAX {
                    // An unknown range: bound it.
                    let a = self.int();
                    let k = self.rng.below(room.min(16) + 1);
                    self.declare(&v, Ty::Int, 0);
                    return (format!("{v} in 0..min({a}, {k})"), k);
                } else {
                    n
                };
                self.declare(&v, Ty::Int, 0);
                (format!("{v} in {r}"), n)
            }
            5 | 6 => {
                let (l, n) = self.list(&Ty::Int, room.min(self.cap()));
                self.declare(&v, Ty::Int, 0);
                (format!("{v} in {l}"), n)
            }
            7 => {
                let w = self.fresh("j");
                let t = Ty::Tuple(vec![Ty::Int, Ty::Int]);
                let (l, n) = self.list(&t, room.min(self.cap()));
                self.declare(&v, Ty::Int, 0);
                self.declare(&w, Ty::Int, 0);
                (format!("({v}, {w}) in {l}"), n)
            }
            8 => {
                let w = self.fresh("j");
                let (m, n) = self.map(&Ty::Int, &Ty::Int, room.min(self.cap()));
                self.declare(&v, Ty::Int, 0);
                self.declare(&w, Ty::Int, 0);
                (format!("{v}, {w} in {m}"), n)
            }
            _ => {
                // A list variable (walking an unbounded one is left out).
                let (l, n) = match self.var_of(&Ty::list(Ty::Int), room) {
                    Some(x) => x,
                    None => (format!("0..{}", room.min(3)), room.min(3)),
                };
                if self.rng.chance(20) {
                    return (format!("_ in {l}"), n);
                }
                self.declare(&v, Ty::Int, 0);
                (format!("{v} in {l}"), n)
            }
        }
    }

    /// A loop with a huge (or empty) bound whose body first emits an op:
    /// `--max-ops` ends it after a few thousand iterations, or the op fails
    /// at once.
    pub(crate) fn runaway_loop(&mut self, nest: u32) -> String {
        let bound = self.rng.pick(&[
            "1000000000",
            "9223372036854775807",
            "(1 << 40)",
            "0x7fffffffffffffff",
            "18446744073709551615",
            "4294967296",
        ]);
        let v = self.fresh("i");
        let saved = self.vars.len();
        self.declare(&v, Ty::Int, 0);
        let mult = self.mult;
        // The rest of the body runs up to --max-ops times: nothing big in it.
        self.mult = ITERATION_BUDGET;
        self.loop_depth += 1;
        let first = self.op(true);
        let rest = if nest > 1 {
            self.block(1, 0, 1)
        } else {
            String::new()
        };
        self.loop_depth -= 1;
        self.mult = mult;
        self.vars.truncate(saved);
        format!("for {v} in 0..{bound} {{\n    {first}\n{rest}\n}}")
    }

    pub(crate) fn if_stmt(&mut self, nest: u32) -> String {
        let cond = self.boolean();
        let then = self.block(nest - 1, 1, 3);
        match self.rng.below(4) {
            0 => {
                let other = self.block(nest - 1, 1, 2);
                format!("if {cond} {{\n{then}\n}} else {{\n{other}\n}}")
            }
            1 => {
                let cond2 = self.boolean();
                let other = self.block(nest - 1, 1, 1);
                format!("if {cond} {{\n{then}\n}} else if {cond2} {{\n{other}\n}}")
            }
            _ => format!("if {cond} {{\n{then}\n}}"),
        }
    }

    pub(crate) fn call_stmt(&mut self) -> Option<String> {
        let f = self.callable_fn(None)?;
        Some(self.call(&f))
    }

    pub(crate) fn pipeline(&mut self, nest: u32) -> Option<String> {
        if self.in_pipeline && !self.mistake() {
            return None;
        }
        let unit = if self.rng.chance(90) {
            self.rng.pick(&["1 << 20", "1048576", "1"])
        } else {
            self.rng.pick(&["0", "-1", "18446744073709551615"])
        };
        let chunks = if self.rng.chance(90) {
            self.rng.pick(&["1", "2", "4"])
        } else {
            self.rng.pick(&["0", "1000000000"])
        };
        let args = if self.mistake() {
            format!("unit_size: {unit}")
        } else {
            format!("unit_size: {unit}, num_chunks: {chunks}")
        };
        let was = self.in_pipeline;
        self.in_pipeline = true;
        let body = self.block(nest - 1, 1, 3);
        self.in_pipeline = was;
        Some(format!("pipeline({args}) {{\n{body}\n}}"))
    }
}

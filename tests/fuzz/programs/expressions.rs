//! Generated expressions: ints, bools, strings, ranges, lists, maps,
//! ranks, buffers, chunks, channels and calls.

use super::*;

impl Gen {
    // ---------------------------------------------------------- expressions

    /// An expression of type `ty` with at most `cap` elements, and a bound
    /// on its elements.
    pub(crate) fn expr(&mut self, ty: &Ty, cap: u64) -> (String, u64) {
        if self.mistake() {
            return (self.wrong(), 0);
        }
        if self.rng.chance(30) {
            if let Some(v) = self.var_of(ty, cap) {
                return v;
            }
        }
        let plain = |s: String| (s, 0);
        match ty {
            Ty::Int => plain(self.int()),
            Ty::Bool => plain(self.boolean()),
            Ty::Str => self.string(cap),
            Ty::Range => self.range(cap),
            Ty::List(t) => self.list(t, cap),
            Ty::Tuple(ts) => {
                let items: Vec<String> = ts.iter().map(|t| self.expr(t, cap).0).collect();
                let comma = if items.len() == 1 { "," } else { "" };
                plain(format!("({}{comma})", items.join(", ")))
            }
            Ty::Map(k, v) => self.map(k, v, cap),
            Ty::Rank => plain(format!("rank({})", self.rank_no())),
            Ty::Buffer => plain(self.buffer()),
            Ty::Chunk => plain(self.chunk()),
            Ty::MemCh => plain(self.channel("memory_channel")),
            Ty::PortCh => plain(self.channel("port_channel")),
            Ty::SwitchCh => plain(self.switch_channel()),
            Ty::SwitchView => {
                let sw = self.expr(&Ty::SwitchCh, cap).0;
                plain(format!("{sw}.at_rank({})", self.rank_no()))
            }
            Ty::TbGroup => plain(format!("tb_group({})", self.tb_list())),
            Ty::Sem => plain(format!(
                "semaphore({}, initial_value: {})",
                self.rank_no(),
                self.small_int()
            )),
            Ty::Protocol => plain(self.rng.pick(&["Simple", "LL"]).into()),
            Ty::SyncType => plain(self.rng.pick(&["none", "before", "after", "both"]).into()),
            Ty::ReduceOp => plain(self.rng.pick(&["sum", "min", "max"]).into()),
            Ty::BufferType => plain(self.rng.pick(&["input", "output", "scratch"]).into()),
            Ty::Policy => plain(self.rng.pick(&["interleaved", "none"]).into()),
        }
    }

    /// A deliberate mistake where an expression belongs.
    pub(crate) fn wrong(&mut self) -> String {
        match self.rng.below(9) {
            0 => "undefined_name".into(),
            1 => format!("\"{}\"", self.rng.pick(&["x", "0", ""])),
            2 => "true".into(),
            3 => "[1, \"a\"]".into(),
            4 => "rank(0).nope".into(),
            5 => "()".into(),
            6 => "{1: 2, \"a\": 3}".into(),
            7 => "nosuch(1, x: 2)".into(),
            _ => format!("{}", self.rng.next() as i64),
        }
    }

    pub(crate) fn small_int(&mut self) -> String {
        self.rng.below(self.ranks + 2).to_string()
    }

    pub(crate) fn int_leaf(&mut self) -> String {
        match self.rng.below(20) {
            0..=8 => self.small_int(),
            9..=12 => match self.var_of(&Ty::Int, u64::MAX) {
                Some((v, _)) => v,
                None => self.small_int(),
            },
            13 => self.rng.below(1 << 20).to_string(),
            14 => (1u64 << self.rng.below(64)).to_string(),
            15 => {
                let shift = self.rng.below(64);
                format!("0x{:x}", self.rng.next() >> shift)
            }
            16 => self
                .rng
                .pick(&["1_024", "1_000_000", "0x_ff", "0X10", "00", "0_0"])
                .into(),
            17 => self.rng.pick(EXTREME_INTS).into(),
            18 => self.rng.pick(EDGE_INTS).into(),
            _ if self.mistake() => self
                .rng
                .pick(&[
                    "99999999999999999999",
                    "0x1_0000_0000_0000_0000",
                    "0x",
                    "0x_",
                ])
                .into(),
            _ => self.small_int(),
        }
    }

    pub(crate) fn int(&mut self) -> String {
        if self.depth == 0 || self.rng.chance(40) {
            return self.int_leaf();
        }
        self.depth -= 1;
        let cap = self.cap();
        let s = match self.rng.below(16) {
            0..=3 => {
                let op = self.rng.pick(INT_OPS);
                let right = if op.len() == 2 && self.rng.chance(80) {
                    // A shift by a small amount.
                    self.rng.below(64).to_string()
                } else {
                    self.int()
                };
                format!("({} {op} {right})", self.int())
            }
            4 => format!("-{}", self.int()),
            5 => {
                let ty = match self.rng.below(4) {
                    0 => Ty::Str,
                    1 => Ty::list(Ty::Int),
                    2 => Ty::map(Ty::Int, Ty::Int),
                    _ => Ty::Range,
                };
                let (e, _) = self.expr(&ty, cap);
                {
                    format!("len({e})")
                }
            }
            6 => {
                let f = self.rng.pick(&["min", "max"]);
                format!("{f}({}, {})", self.int(), self.int())
            }
            7 => {
                let (l, len) = self.list(&Ty::Int, cap);
                format!("{l}[{}]", self.index(len))
            }
            8 => {
                let t = self.expr(&Ty::Tuple(vec![Ty::Int, Ty::Int]), cap).0;
                format!("{t}[{}]", self.rng.pick(&["0", "1"]))
            }
            9 if self.after_program => {
                let c = self.chunk();
                format!("{c}.{}", self.rng.pick(&["size", "index", "rank"]))
            }
            10 if self.after_program => {
                let b = self.buffer();
                format!("{b}.{}", self.rng.pick(&["size", "rank"]))
            }
            11 if self.after_program => format!("rank({}).id", self.rank_no()),
            12 if self.after_program => {
                let kind = self.rng.pick(&["memory_channel", "port_channel"]);
                let c = self.channel(kind);
                format!("{c}.{}", self.rng.pick(&["src_rank", "dst_rank"]))
            }
            13 => {
                let (m, _) = self.map(&Ty::Int, &Ty::Int, cap);
                let key = if self.rng.chance(70) {
                    "0".to_string()
                } else {
                    self.small_int()
                };
                format!("{m}[{key}]")
            }
            14 => match self.call_of(&Ty::Int) {
                Some((call, _)) => call,
                None => self.int_leaf(),
            },
            15 if self.peers_lib => format!("peer_slot({}, {})", self.int(), self.int()),
            _ => self.int_leaf(),
        };
        self.depth += 1;
        s
    }

    pub(crate) fn boolean(&mut self) -> String {
        if self.depth == 0 || self.rng.chance(30) {
            return match self.var_of(&Ty::Bool, u64::MAX) {
                Some((v, _)) if self.rng.chance(50) => v,
                _ => self.rng.pick(&["true", "false"]).into(),
            };
        }
        self.depth -= 1;
        let cap = self.cap();
        let s = match self.rng.below(9) {
            0..=2 => {
                let op = self.rng.pick(CMP_OPS);
                format!("({} {op} {})", self.int(), self.int())
            }
            3 => format!("({} && {})", self.boolean(), self.boolean()),
            4 => format!("({} || {})", self.boolean(), self.boolean()),
            5 => format!("!{}", self.boolean()),
            6 => {
                let l = self.list(&Ty::Int, cap).0;
                format!("({} in {l})", self.int())
            }
            7 => {
                let (a, b) = (self.string(cap / 2).0, self.string(cap / 2).0);
                format!("({a} {} {b})", self.rng.pick(&["==", "!="]))
            }
            _ => match self.call_of(&Ty::Bool) {
                Some((call, _)) => call,
                None => format!("({} in {})", self.int(), self.range(cap).0),
            },
        };
        self.depth += 1;
        s
    }

    pub(crate) fn string_literal(&mut self) -> (String, u64) {
        let mut s = String::from("\"");
        for _ in 0..self.rng.below(6) {
            s.push_str(self.rng.pick(STRING_PIECES));
        }
        if self.mistake() {
            s.push_str(self.rng.pick(&["\\q", "\\", "\\u{41}", "\n"]));
        }
        s.push('"');
        let len = s.len() as u64;
        (s, len)
    }

    pub(crate) fn string(&mut self, cap: u64) -> (String, u64) {
        if self.depth == 0 || cap < 64 || self.rng.chance(40) {
            if let Some(v) = self.var_of(&Ty::Str, cap).filter(|_| self.rng.chance(40)) {
                return v;
            }
            return self.string_literal();
        }
        self.depth -= 1;
        let s = match self.rng.below(4) {
            0 => {
                // str(x) of a small value: its text is at most a few dozen
                // bytes per element.
                let ty = self.any_type();
                let (e, len) = self.expr(&ty, cap / 64);
                (
                    format!("str({e})"),
                    len.saturating_add(1).saturating_mul(64),
                )
            }
            1 => {
                let (a, la) = self.string(cap / 2);
                let (b, lb) = self.string(cap / 2);
                (format!("({a} + {b})"), la.saturating_add(lb))
            }
            2 => match self.call_of(&Ty::Str) {
                Some(call) => call,
                None => self.string_literal(),
            },
            _ => self.string_literal(),
        };
        self.depth += 1;
        s
    }

    /// `a..b` with at most `cap` elements, or any range (length unknown).
    pub(crate) fn range(&mut self, cap: u64) -> (String, u64) {
        match self.rng.below(6) {
            0..=2 => {
                let a = self.rng.below(4);
                let n = self.rng.below(cap.min(8) + 1);
                (format!("({a}..{})", a + n), n)
            }
            3 => {
                let n = self.rng.below(cap.min(8) + 1);
                (format!("(0..min({}, {n}))", self.int()), n)
            }
            4 => {
                // Empty, or reversed (and empty): any start, ending at 0.
                let end = self.rng.pick(&["0", "-1"]);
                let start = self.int_leaf();
                let len = if start.starts_with("0x") || start.contains('_') {
                    u64::MAX
                } else {
                    start.parse::<u64>().map_or(u64::MAX, |_| 0)
                };
                (format!("({start}..{end})"), len)
            }
            _ => (format!("({}..{})", self.int(), self.int()), u64::MAX),
        }
    }

    pub(crate) fn index(&mut self, len: u64) -> String {
        match self.rng.below(8) {
            0..=5 if len > 0 && len < u64::MAX => self.rng.below(len).to_string(),
            6 => format!("-{}", self.rng.range(1, 3)),
            _ => self.int(),
        }
    }

    pub(crate) fn list(&mut self, t: &Ty, cap: u64) -> (String, u64) {
        if let Some(v) = self
            .var_of(&Ty::list(t.clone()), cap)
            .filter(|_| self.rng.chance(30))
        {
            return v;
        }
        let shallow = self.depth == 0;
        if !shallow {
            self.depth -= 1;
        }
        let choice = if shallow { 0 } else { self.rng.below(6) };
        let s = match choice {
            1 if cap >= 2 && self.iterations_left() >= 2 => self.list_comprehension(t, cap),
            2 if cap >= 2 => {
                let (a, la) = self.list(t, cap / 2);
                let (b, lb) = self.list(t, cap / 2);
                (format!("({a} + {b})"), la.saturating_add(lb))
            }
            3 if *t == Ty::Int && self.peers_lib && cap >= 1 => {
                // The standard library's lists have as many elements as
                // their second argument.
                let f = self.rng.pick(&["ring_peers", "node_peers"]);
                let n = cap.min(8);
                (format!("{f}({}, min({}, {n}))", self.int(), self.int()), n)
            }
            4 if *t == Ty::Int && self.after_program => {
                (format!("tb_group({}).tb_list", self.tb_list()), 4)
            }
            5 => match self.call_of(&Ty::list(t.clone())) {
                Some(call) => call,
                None => self.list_literal(t, cap),
            },
            _ => self.list_literal(t, cap),
        };
        if !shallow {
            self.depth += 1;
        }
        if s.1 > cap {
            // A function's list may exceed what this context allows.
            return self.list_literal(t, cap);
        }
        s
    }

    pub(crate) fn list_literal(&mut self, t: &Ty, cap: u64) -> (String, u64) {
        // Mostly not empty: indexing an empty list ends the program.
        let n = if self.wild() || self.rng.chance(10) {
            self.rng.below(cap.min(4) + 1)
        } else {
            self.rng.range(1, cap.clamp(1, 4))
        };
        let inner = (cap / (n + 1)).max(1);
        let items: Vec<String> = (0..n).map(|_| self.expr(t, inner).0).collect();
        let trailing = if n > 0 && self.rng.chance(10) {
            ","
        } else {
            ""
        };
        (format!("[{}{trailing}]", items.join(", ")), n)
    }

    /// `[e for v in a..b where c]`: its loop counts against the budget.
    pub(crate) fn list_comprehension(&mut self, t: &Ty, cap: u64) -> (String, u64) {
        let n = self.rng.below(cap.min(self.iterations_left()).min(16) + 1);
        let a = self.rng.below(3);
        let v = self.fresh("i");
        let saved = self.vars.len();
        self.declare(&v, Ty::Int, 0);
        self.mult *= n.max(1);
        let e = self.expr(t, self.cap()).0;
        let filter = if self.rng.chance(30) {
            format!(" where {}", self.boolean())
        } else {
            String::new()
        };
        self.mult /= n.max(1);
        self.vars.truncate(saved);
        (format!("[{e} for {v} in {a}..{}{filter}]", a + n), n)
    }

    pub(crate) fn map(&mut self, k: &Ty, v: &Ty, cap: u64) -> (String, u64) {
        if let Some(var) = self.var_of(&Ty::map(k.clone(), v.clone()), cap) {
            if self.rng.chance(40) {
                return var;
            }
        }
        if self.rng.chance(30) && cap >= 2 && self.iterations_left() >= 2 {
            // `{k: v for i in 0..n}`: keys may repeat (the last one wins).
            let n = self.rng.below(cap.min(self.iterations_left()).min(9) + 1);
            let i = self.fresh("i");
            let saved = self.vars.len();
            self.declare(&i, Ty::Int, 0);
            self.mult *= n.max(1);
            let key = if *k == Ty::Int && !self.wild() {
                i.clone()
            } else {
                self.expr(k, 1).0
            };
            let value = self.expr(v, self.cap()).0;
            self.mult /= n.max(1);
            self.vars.truncate(saved);
            return (format!("{{{key}: {value} for {i} in 0..{n}}}"), n);
        }
        let n = if self.wild() || self.rng.chance(10) {
            self.rng.below(cap.min(3) + 1)
        } else {
            self.rng.range(1, cap.clamp(1, 3))
        };
        let inner = (cap / (n + 1)).max(1);
        let entries: Vec<String> = (0..n)
            .map(|e| {
                let key = if *k == Ty::Int && (e == 0 || self.rng.chance(80)) {
                    e.to_string()
                } else {
                    self.expr(k, 1).0
                };
                format!("{key}: {}", self.expr(v, inner).0)
            })
            .collect();
        (format!("{{{}}}", entries.join(", ")), n)
    }

    /// A rank number: mostly one of the collective's ranks.
    pub(crate) fn rank_no(&mut self) -> String {
        if self.wild() {
            return match self.rng.below(2) {
                0 => self.int(),
                _ => self.rng.below(self.ranks + 3).to_string(),
            };
        }
        match self.rng.below(4) {
            0..=2 => self.rng.below(self.ranks).to_string(),
            _ => match self.var_of(&Ty::Int, u64::MAX) {
                Some((v, _)) => format!("({v} % {})", self.ranks),
                None => self.rng.below(self.ranks).to_string(),
            },
        }
    }

    /// A chunk index: mostly within the buffers.
    pub(crate) fn chunk_index(&mut self) -> u64 {
        if self.wild() {
            self.rng.below(self.chunks + 3)
        } else {
            self.rng.below(self.chunks)
        }
    }

    pub(crate) fn buffer(&mut self) -> String {
        self.sized_buffer().0
    }

    /// A buffer, and how many chunks it (most likely) has.
    pub(crate) fn sized_buffer(&mut self) -> (String, u64) {
        match self.rng.below(7) {
            0..=3 => (
                format!(
                    "rank({}).{}",
                    self.rank_no(),
                    self.rng.pick(&["input", "output"])
                ),
                self.chunks,
            ),
            4 | 5 => {
                let (size, n) = if !self.wild() {
                    let n = self.rng.range(1, 8);
                    (n.to_string(), n)
                } else {
                    let size = self
                        .rng
                        .pick(&["0", "-1", "4000000000", "16777217", "65536"]);
                    (size.to_string(), 1)
                };
                (format!("scratch({}, {size})", self.rank_no()), n)
            }
            _ => match self.var_of(&Ty::Buffer, u64::MAX) {
                Some((v, _)) => (v, 1),
                None => (format!("rank({}).input", self.rank_no()), self.chunks),
            },
        }
    }

    pub(crate) fn chunk(&mut self) -> String {
        if let Some((v, _)) = self.var_of(&Ty::Chunk, u64::MAX) {
            if self.rng.chance(30) {
                return v;
            }
        }
        let (b, size) = self.sized_buffer();
        if self.wild() {
            return match self.rng.below(2) {
                0 => format!("{b}[{}]", self.int()),
                _ => format!("{b}[{}]", self.rng.below(size + 3)),
            };
        }
        let i = self.rng.below(size);
        match self.rng.below(5) {
            0..=3 => format!("{b}[{i}]"),
            _ => format!("{b}[{i}..{}]", (i + self.rng.range(1, 2)).min(size)),
        }
    }

    pub(crate) fn channel(&mut self, kind: &str) -> String {
        let map_ty = Ty::map(Ty::Tuple(vec![Ty::Int, Ty::Int]), Ty::MemCh);
        if kind == "memory_channel" && self.rng.chance(20) {
            if let Some((m, _)) = self.var_of(&map_ty, u64::MAX) {
                return format!("{m}[({}, {})]", self.rank_no(), self.rank_no());
            }
        }
        let d = self.rank_no();
        let mut s = self.rank_no();
        if s == d && self.rng.chance(90) {
            s = ((d.parse::<u64>().unwrap_or(0) + 1) % self.ranks.max(2)).to_string();
        }
        format!("{kind}({d}, {s})")
    }

    pub(crate) fn switch_channel(&mut self) -> String {
        let ranks = match self.rng.below(10) {
            0..=5 => format!("[g for g in 0..{}]", self.ranks),
            6..=8 => {
                let all: Vec<String> = (0..self.ranks).map(|r| r.to_string()).collect();
                format!("[{}]", all.join(", "))
            }
            _ => self.list(&Ty::Int, 8).0,
        };
        let buf = self.expr(&Ty::BufferType, 1).0;
        format!("switch_channel({ranks}, {buf})")
    }

    pub(crate) fn tb_no(&mut self) -> String {
        if self.wild() {
            return match self.rng.below(2) {
                0 => self.rng.pick(&["4095", "4096", "-1", "1023"]).into(),
                _ => self.int(),
            };
        }
        self.rng.below(4).to_string()
    }

    pub(crate) fn tb_list(&mut self) -> String {
        if self.mistake() {
            return self.rng.pick(&["[]", "[4096]", "[-1]", "[0, 0]"]).into();
        }
        let n = self.rng.range(1, 4);
        let first = self.rng.below(3);
        let items: Vec<String> = (first..first + n).map(|t| t.to_string()).collect();
        format!("[{}]", items.join(", "))
    }

    /// A type for a `let` or a parameter.
    pub(crate) fn any_type(&mut self) -> Ty {
        let mut choices = vec![
            Ty::Int,
            Ty::Int,
            Ty::Int,
            Ty::Bool,
            Ty::Str,
            Ty::Range,
            Ty::list(Ty::Int),
            Ty::list(Ty::Int),
            Ty::Tuple(vec![Ty::Int, Ty::Int]),
            Ty::map(Ty::Int, Ty::Int),
            Ty::SyncType,
            Ty::ReduceOp,
        ];
        if self.after_program {
            choices.extend([
                Ty::Rank,
                Ty::Buffer,
                Ty::Chunk,
                Ty::Chunk,
                Ty::MemCh,
                Ty::MemCh,
                Ty::PortCh,
                Ty::TbGroup,
                Ty::Sem,
                Ty::SwitchCh,
                Ty::SwitchView,
                Ty::list(Ty::Chunk),
                Ty::map(Ty::Tuple(vec![Ty::Int, Ty::Int]), Ty::MemCh),
            ]);
        }
        if self.rng.chance(5) {
            return Ty::list(Ty::list(Ty::Int));
        }
        choices[self.rng.below(choices.len() as u64) as usize].clone()
    }

    /// A call of a user function returning `ty`, if one is callable here,
    /// and a bound on the length of what it returns.
    pub(crate) fn call_of(&mut self, ty: &Ty) -> Option<(String, u64)> {
        let f = self.callable_fn(Some(ty))?;
        Some((self.call(&f), f.ret_len))
    }

    /// One of the user functions callable here (returning `ty`, when
    /// given): not inside a function, within the iteration budget, and
    /// after the program block if it needs one.
    pub(crate) fn callable_fn(&mut self, ty: Option<&Ty>) -> Option<UserFn> {
        if self.in_fn {
            return None;
        }
        let fits: Vec<UserFn> = self
            .fns
            .iter()
            .filter(|f| ty.is_none() || f.ret.as_ref() == ty)
            .filter(|f| self.mult.saturating_mul(f.cost) <= ITERATION_BUDGET)
            .filter(|f| self.after_program || !f.needs_program)
            .cloned()
            .collect();
        if fits.is_empty() {
            return None;
        }
        Some(fits[self.rng.below(fits.len() as u64) as usize].clone())
    }

    /// `f(a, b, name: c)`: positional arguments, then keyword ones; defaulted
    /// parameters sometimes left out.
    pub(crate) fn call(&mut self, f: &UserFn) -> String {
        let mut parts = Vec::new();
        let mut keyword = false;
        for (i, (name, ty, has_default)) in f.params.iter().enumerate() {
            if *has_default && self.rng.chance(40) {
                keyword = true;
                continue;
            }
            // The first parameter of a recursive function is its depth:
            // mostly small, sometimes past the recursion limit.
            let value = if i == 0 && f.cost >= RECURSION_COST && *ty == Ty::Int {
                self.rng
                    .pick(&["0", "1", "3", "10", "255", "256", "300", "100000"])
                    .to_string()
            } else {
                self.expr(ty, 8).0
            };
            keyword |= self.rng.chance(20);
            if keyword {
                parts.push(format!("{name}: {value}"));
            } else {
                parts.push(value);
            }
        }
        if self.mistake() {
            parts.push(self.rng.pick(&["nosuch: 1", "1", "tb: 0"]).to_string());
        }
        format!("{}({})", f.name, parts.join(", "))
    }
}

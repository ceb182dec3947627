//! The scheduler: runs the thread blocks of every rank in turn, each as
//! far as it can go, until all have ended or none can move (a deadlock);
//! ends a rank's kernel when its blocks are done, and starts its next
//! execution.

use super::*;

impl<'p> Sim<'p> {
    pub(super) fn run(&mut self) -> Verdict {
        for r in 0..self.plan.ranks.len() as u32 {
            if let Some(v) = self.user_writes_input(r, 1) {
                return v;
            }
            if let Some(v) = self.kernels_without_blocks(r) {
                return v;
            }
        }
        loop {
            let mut progress = false;
            let mut all_done = true;
            for t in 0..self.threads.len() {
                if self.threads[t].done {
                    continue;
                }
                all_done = false;
                loop {
                    match self.step(t) {
                        Step::Ran => progress = true,
                        Step::Blocked => break,
                        Step::Problem(v) => return v,
                    }
                }
                if let Some(bar) = &self.progress {
                    bar.set_position(self.ops_run);
                }
            }
            if all_done {
                return self.wrong.take().map_or(Verdict::Verified, |(_, v)| v);
            }
            if !progress {
                return match self.wrong.take() {
                    // No rank starts an execution past a wrong result: a
                    // rank that began one before waits for peers that
                    // never will, which is no hang of the plan's.
                    Some((execution, wrong))
                        if self
                            .threads
                            .iter()
                            .all(|th| th.done || th.execution > execution) =>
                    {
                        wrong
                    }
                    _ => Verdict::Deadlock(self.blocked_threads()),
                };
            }
        }
    }

    /// Runs thread `t`'s next op if it can.
    pub(super) fn step(&mut self, t: usize) -> Step {
        let th = &self.threads[t];
        if th.done {
            return Step::Blocked;
        }
        if th.pc == th.ops.len() {
            return self.end_of_kernel(t);
        }
        let op = th.ops.op(th.pc);
        if let Some(recorder) = &mut self.record {
            recorder.after.clear();
        }
        match self.execute(t, op) {
            Ok(true) => {
                self.note_event(t, op);
                self.threads[t].pc += 1;
                self.ops_run += 1;
                Step::Ran
            }
            Ok(false) => Step::Blocked,
            Err(v) => Step::Problem(v),
        }
    }

    /// A thread reached the end of its ops: once all blocks of its rank are
    /// there, the kernel ends, the user checks the result and starts the
    /// next execution.
    pub(super) fn end_of_kernel(&mut self, t: usize) -> Step {
        let rank = self.threads[t].rank;
        if !self.threads[t].at_kernel_end {
            self.threads[t].at_kernel_end = true;
            self.at_end[rank as usize] += 1;
        }
        let mine = self.rank_threads[rank as usize]..self.rank_threads[rank as usize + 1];
        if self.at_end[rank as usize] < mine.len() {
            return Step::Blocked;
        }
        self.at_end[rank as usize] = 0;
        let execution = self.threads[t].execution;
        // The kernel's end syncs every block: what they learnt now counts.
        for i in mine.clone() {
            self.sync_epoch(i);
        }
        // The user's thread learns everything the kernel did.
        let user = self.users + rank as usize;
        let mut clock = Clocks::zero();
        clock.join_all(self.threads[mine.clone()].iter().map(|th| &th.clock));
        for i in mine.clone() {
            clock.set(i, self.threads[i].epoch + 1);
        }
        clock.set(user, 2 * execution);
        if let Some(v) = self.read_result(rank, execution, &clock) {
            return Step::Problem(v);
        }
        // Once a result is wrong, no rank starts another execution: the
        // rest only show whether the executions begun end, or hang.
        if execution == self.executions || self.wrong.is_some() {
            for i in mine {
                self.threads[i].done = true;
            }
            return Step::Ran;
        }
        // (Kept for the next execution only: after the last, a thousand
        // ranks' clocks of everything would be held for nothing.)
        self.user_clocks[rank as usize] = clock.clone();
        clock.set(user, 2 * execution + 1);
        clock.compact();
        for i in mine {
            let th = &mut self.threads[i];
            th.clock = clock.clone();
            th.epoch += 1;
            th.clock.set(i, th.epoch);
            th.pc = 0;
            th.execution = execution + 1;
            th.at_kernel_end = false;
        }
        match self.user_writes_input(rank, execution + 1) {
            Some(v) => Step::Problem(v),
            None => Step::Ran,
        }
    }

    /// A rank without thread blocks runs an empty kernel: each execution
    /// ends as soon as it starts, and the user reads the result at once
    /// (a peer's later write into it is a race, as on the GPU).
    pub(super) fn kernels_without_blocks(&mut self, rank: u32) -> Option<Verdict> {
        if self.rank_threads[rank as usize] != self.rank_threads[rank as usize + 1] {
            return None;
        }
        let user = self.users + rank as usize;
        for execution in 1..=self.executions {
            let mut clock = self.user_clocks[rank as usize].clone();
            clock.set(user, 2 * execution);
            if let Some(v) = self.read_result(rank, execution, &clock) {
                return Some(v);
            }
            if execution < self.executions {
                self.user_clocks[rank as usize] = clock;
                if let Some(v) = self.user_writes_input(rank, execution + 1) {
                    return Some(v);
                }
            }
        }
        None
    }

    /// The user reads `rank`'s result of `execution`: a race is the
    /// verdict at once; a wrong result is kept (the first) and the
    /// executions begun go on, for a deadlock among them would hide it on
    /// the GPU.
    fn read_result(&mut self, rank: u32, execution: u32, clock: &Clocks) -> Option<Verdict> {
        match self.user_reads_result(rank, execution, clock)? {
            wrong @ Verdict::WrongResult(_) => {
                self.wrong.get_or_insert((execution, wrong));
                None
            }
            other => Some(other),
        }
    }

    /// Signals nobody waited for: they carry over into the next launch and
    /// let a wait there pass early.
    pub(super) fn unconsumed_signals(&self) -> Vec<crate::diag::Diagnostic> {
        let mut waiting: Vec<_> = self.signals.waiting().collect();
        waiting.sort();
        let names = crate::ir::ChannelNumbers::new(self.plan);
        waiting
            .into_iter()
            .map(|(e, n)| {
                crate::diag::Diagnostic::plain(crate::diag::Code::ChannelPair, format!(
                    "{n} signal(s) to {} are never waited for; they carry over into the next launch",
                    names.name(e)
                ))
                .as_warning()
            })
            .collect()
    }

    /// Semaphores the launches leave with another value than they found:
    /// the executor sets each once, from its `init_value`, and never again,
    /// so what a launch takes and does not give back (or gives beyond what
    /// it takes) adds up over the launches that follow. A plan that
    /// verifies over the executions simulated then hangs, or lets an
    /// acquire pass early, a few launches later.
    pub(super) fn unbalanced_semaphores(&self) -> Vec<crate::diag::Diagnostic> {
        let launches = i64::from(self.executions.max(1));
        // (rank, change a launch, initial value) -> the semaphores: one
        // warning for a rank's semaphores that drift alike.
        let mut drifts: std::collections::BTreeMap<(u32, i64, i64), Vec<u32>> = Default::default();
        for (&(rank, s), (value, _)) in &self.semaphores {
            let init = self.plan.ranks[rank as usize].semaphores[s as usize];
            if *value != init {
                // Every launch runs the same ops: the change is the same in each.
                let per_launch = (*value - init) / launches;
                drifts.entry((rank, per_launch, init)).or_default().push(s);
            }
        }
        drifts
            .into_iter()
            .map(|((rank, per_launch, init), mut ids)| {
                ids.sort_unstable();
                let which = match &ids[..] {
                    [one] => format!("rank {rank}'s semaphore {one} is"),
                    many => format!(
                        "rank {rank}'s semaphores {} are each",
                        crate::diag::short_list(many, "semaphores")
                    ),
                };
                // The launch that waits forever, for a semaphore run down.
                let (message, waits) = if per_launch < 0 {
                    let lost = -per_launch;
                    let runs = init.max(0) / lost;
                    (format!(
                        "{which} acquired {lost} more time(s) than released in each launch; \
                         the executor never resets a semaphore, so from its initial value {init} it runs out after about {runs} launch(es), and the next waits forever"
                    ), Some(runs + 1))
                } else {
                    (format!(
                        "{which} released {per_launch} more time(s) than acquired in each launch; \
                         the executor never resets a semaphore, so in later launches acquires pass without waiting for the releases meant for them"
                    ), None)
                };
                // At the rank's first op that takes (or gives) more than
                // its share: the program line, where there is one.
                let (name, label) = if per_launch < 0 {
                    (OpName::SemAcquire, "acquired here first")
                } else {
                    (OpName::SemRelease, "released here first")
                };
                let first = self.plan.ranks[rank as usize]
                    .threadblocks
                    .iter()
                    .flat_map(|tb| tb.ops_with_bodies())
                    .map(|(op, _)| op)
                    .find(|op| {
                        op.name == name && op.semaphore_ids().iter().any(|s| ids.contains(s))
                    });
                let code = crate::diag::Code::SemaphoreBalance;
                let warning = match first {
                    Some(op) => crate::diag::Diagnostic::error(code, op.span, message, label),
                    None => crate::diag::Diagnostic::plain(code, message),
                }
                .as_warning();
                match waits.filter(|&n| n <= i64::from(super::MAX_EXECUTIONS)) {
                    Some(n) => warning.with_note(format!(
                        "`msclc sim --executions {n}` simulates that many launches"
                    )),
                    None => warning,
                }
            })
            .collect()
    }

    // -- ops --------------------------------------------------------------------
}

//! Happens-before: whether an access is ordered after the earlier accesses
//! to its location, and how a race is told.

use super::*;

impl Sim<'_> {
    /// Checks a new access against the location's log; on success, nothing.
    /// An access must follow the last write by release/acquire ordering and
    /// (a write) the reads since by any ordering, relaxed included.
    pub(super) fn check(&self, loc: Loc, access: Access, clock: &Clocks) -> Option<Verdict> {
        let cell = self.memory.get(&loc)?;
        if cell.packet.is_some() {
            return None;
        }
        let ordered = |a: &Access| {
            // The user's copy into the input is complete before the kernel
            // starts (stream order): execution order suffices after it.
            let by_user = self.is_user(a.thread());
            let known = if a.write && !by_user {
                &clock.data
            } else {
                &clock.exec
            };
            a.op == access.op && a.thread == access.thread && a.epoch == access.epoch
                || a.epoch < known.at(a.thread())
        };
        let conflict = cell
            .last_write
            .iter()
            .chain(if access.write {
                cell.reads.iter()
            } else {
                [].iter()
            })
            .find(|a| !ordered(a));
        conflict.map(|a| Verdict::Race(Box::new(self.race(loc, a, &access))))
    }

    pub(super) fn race(&self, loc: Loc, a: &Access, b: &Access) -> Race {
        let place = loc.place;
        let part = if self.parts > 1 {
            format!(" part {}", loc.part + 1)
        } else {
            String::new()
        };
        Race {
            location: format!(
                "rank {} {} chunk {}{part}",
                place.rank,
                place.kind.name(),
                place.chunk
            ),
            first: self.describe_access(a),
            second: self.describe_access(b),
            ops: [a, b].map(|x| self.op_at(x.by as usize, x.op as usize)),
            hint: self.race_hint(loc, a, b),
        }
    }

    /// What most likely lets an op race with the user's access to a
    /// rank's buffer around a kernel: the usual mistakes at a kernel's
    /// start and end. A port channel's proxy that still copies from the
    /// rank's buffer when its kernel ends (no flush); a peer's access to
    /// the buffer that nothing orders after the rank's kernel starts (an
    /// opening handshake missing: the user still reads the last result,
    /// or writes the next input) or before it ends (a closing handshake
    /// missing, relaxed, or on another thread block than the op).
    fn race_hint(&self, loc: Loc, a: &Access, b: &Access) -> Option<String> {
        let (op, user) = match (self.is_user(a.thread()), self.is_user(b.thread())) {
            (true, false) => (b, a),
            (false, true) => (a, b),
            _ => return None,
        };
        let rank = loc.place.rank;
        let by = &self.threads[op.by as usize];
        let what = if op.write { "write to" } else { "read of" };
        // The user writes the input before an execution and reads the
        // result after one: an op of that execution (or, for a read, a
        // later one) races it at the kernel's start.
        let at_start = match user.write {
            true => op.execution >= user.execution,
            false => op.execution > user.execution,
        };
        if at_start && by.rank != rank {
            return Some(format!(
                "nothing orders rank {}'s {what} rank {rank}'s buffer in execution {} after rank {rank}'s kernel of that execution starts: begin with a handshake that does: rank {rank} signals at its kernel's start that it is ready, and rank {} waits for that signal before the op (on a memory channel, `relaxed: true` is enough; port channels have no relaxed form)",
                by.rank, op.execution, by.rank
            ));
        }
        let kernel = format!("rank {rank}'s kernel of execution {} ends", op.execution);
        if by.rank == rank {
            // A proxy copying from the rank's own buffer: only a flush
            // there waits for it.
            return (op.thread != op.by).then(|| format!(
                "a port channel's proxy does its copies after the block goes on, and nothing waits for them before {kernel}: make the channel's last put before the kernel ends a `put_with_signal_and_flush` (a `flush` waits for them too, but does nothing on today's executor: W0503)"
            ));
        }
        // A tb_group's op is done by every block of the group, each its
        // part: a signal on one block orders that block's part only.
        let group = by.ops.op(op.op as usize).tbg.filter(|g| g.size > 1).map_or(
            String::new(),
            |g| format!(
                "; the op is part {} of a tb_group of {}, each block doing its own part, so every block of the group signals after its part",
                g.tb_id, g.size
            ),
        );
        Some(format!(
            "nothing orders rank {}'s {what} rank {rank}'s buffer before {kernel}: end with a handshake that does: rank {} signals after the op on the thread block that did it, block {} (not relaxed, `data_sync: before`), and rank {rank} waits for that signal (`data_sync: after`) before its kernel ends{group}",
            by.rank, by.rank, by.tb
        ))
    }

    pub(super) fn describe_access(&self, a: &Access) -> String {
        let verb = if a.write { "write" } else { "read" };
        if self.is_user(a.thread()) {
            let rank = a.thread() - self.users;
            // In place, the input is the output: the race is reported on
            // the output chunk.
            let input = match self.plan.collective.inplace {
                true => "input (in place, its output)",
                false => "input",
            };
            return match a.write {
                true => format!(
                    "the user's write of rank {rank}'s {input} before execution {}",
                    a.execution
                ),
                false => format!(
                    "the user's read of rank {rank}'s result after execution {}",
                    a.execution
                ),
            };
        }
        let th = &self.threads[a.by as usize];
        let op = th.ops.op(a.op as usize);
        let number = self.op_number(a.by as usize, a.op as usize);
        let proxy = if a.thread != a.by {
            " (done later by the port channel's proxy)"
        } else {
            ""
        };
        format!(
            "{verb} by {} (op {number}) on rank {} thread block {} in execution {}{proxy}",
            op.name.json(),
            th.rank,
            th.tb,
            a.execution
        )
    }

    pub(super) fn sync_epoch(&mut self, t: usize) {
        let th = &mut self.threads[t];
        th.epoch += 1;
        th.clock.set(t, th.epoch);
        th.clock.join_all(&std::mem::take(&mut th.pending));
    }
}

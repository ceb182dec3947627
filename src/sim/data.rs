//! The simulator's data ops: where a buffer reference lands (aliasing,
//! remote buffers, switch members, double scratch, group and pipeline
//! shares), who performs an access (the block or a port channel's proxy),
//! and the transfers and reductions themselves, each access checked for
//! races as it happens.

use super::clock::Clocks;
use super::value::Contents;
use super::*;

impl Sim<'_> {
    /// The share of its op's range that thread `t` handles, `size` chunks
    /// long, as indices into the range cut in parts: index e is part
    /// `e % parts` of the range's chunk `e / parts`. As the executor does
    /// it, a thread block group splits the op's whole range (all its chunks
    /// together, not each chunk), and a pipeline iteration takes the next
    /// piece of what the pipeline covers of that share from its start
    /// (`pipeline_cover`), for the ops that honour its offsets. Of a
    /// longer share the tail is never moved; past a shorter one, today's
    /// executor's unsigned size wraps and each iteration moves a whole
    /// unit beyond the op's range (W0511): that is run here as the share
    /// bounds it, as msclc's kernel does.
    pub(super) fn share(&self, t: usize, op: &Op, size: u32) -> std::ops::Range<u32> {
        let whole = 0..size * self.parts;
        let grouped = match op.tbg {
            Some(g) if g.size > 1 => split(whole, g.tb_id, g.size),
            _ => whole,
        };
        let th = &self.threads[t];
        match th.ops.iteration(th.pc) {
            // Packet ops are run as meant, the share cut in iterations
            // (today's executor runs them whole each time: W0503).
            Some(it) if !op.name.honours_pipeline_offsets() => split(grouped, it.index, it.of),
            Some(it) => {
                let (chunks, per) = it.covers;
                let covered = u128::from(chunks) * u128::from(self.parts);
                let covered = u32::try_from(covered.div_ceil(u128::from(per.max(1))));
                let piece = split(0..covered.unwrap_or(u32::MAX), it.index, it.of);
                let at = |p: u32| grouped.start.saturating_add(p).min(grouped.end);
                at(piece.start)..at(piece.end)
            }
            None => grouped,
        }
    }

    /// The locations of `share` in a reference's places (one per chunk).
    pub(super) fn locs<'a>(
        &self,
        places: &'a [Place],
        share: std::ops::Range<u32>,
    ) -> impl Iterator<Item = Loc> + 'a {
        let parts = self.parts;
        share.filter_map(move |e| {
            places.get((e / parts) as usize).map(|place| Loc {
                place: *place,
                part: e % parts,
            })
        })
    }

    /// Resolves a buffer reference of thread `th`'s op to places (one per chunk).
    pub(super) fn places(&self, th: &Thread, op: &Op, r: &BufRef) -> Vec<Place> {
        let rank = &self.plan.ranks[th.rank as usize];
        let (owner, kind) = match r.target {
            RefTarget::Local(kind) => (th.rank, kind),
            RefTarget::Remote { id, kind } => {
                let channel = op.channel.unwrap_or(ChannelKind::Memory);
                match rank.remote_buffer(th.tb, channel, id) {
                    Some(b) => (b.rank, kind),
                    None => return Vec::new(),
                }
            }
            RefTarget::Switch { .. } => return Vec::new(),
        };
        (r.index..r.index + r.size)
            .map(|chunk| self.scratch_half(th.execution, self.place(owner, kind, chunk)))
            .collect()
    }

    /// The members' places of a switch reference (all ranks of the group).
    pub(super) fn switch_places(&self, th: &Thread, r: &BufRef) -> Vec<Vec<Place>> {
        let RefTarget::Switch { id } = r.target else {
            return Vec::new();
        };
        let rank = &self.plan.ranks[th.rank as usize];
        let Some(decl) = rank.switch_channel(th.tb, id) else {
            return Vec::new();
        };
        decl.ranks
            .iter()
            .map(|m| {
                (r.index..r.index + r.size)
                    .map(|chunk| {
                        self.scratch_half(th.execution, self.place(*m, decl.buffer, chunk))
                    })
                    .collect()
            })
            .collect()
    }

    /// The packet locations an op reads (it blocks until they arrive).
    pub(super) fn packet_sources(&self, t: usize, op: &Op) -> Vec<Loc> {
        let th = &self.threads[t];
        op.packet_sources()
            .iter()
            .flat_map(|r| {
                let places = self.places(th, op, r);
                self.locs(&places, self.share(t, op, r.size))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Who performs thread `t`'s current data op: the block itself, or for
    /// a port transfer the channel's proxy (its thread, epoch and clock:
    /// after what the block did before pushing, and after the earlier
    /// transfers of the channel, which run in order).
    pub(super) fn accessor(&self, t: usize) -> (usize, u32, Clocks) {
        let th = &self.threads[t];
        match self.port_transfer {
            Some((proxy, epoch)) => {
                let mut clock = th.clock.clone();
                clock.set(proxy, epoch);
                (proxy, epoch, clock)
            }
            None => (t, th.epoch, th.clock.clone()),
        }
    }

    /// The access thread `t`'s op `op_index` makes, and the clock it is
    /// judged by.
    pub(super) fn access(&self, t: usize, op_index: usize, write: bool) -> (Access, Clocks) {
        let (thread, epoch, clock) = self.accessor(t);
        let access = Access {
            thread: thread as u32,
            epoch,
            by: t as u32,
            op: op_index as u32,
            execution: self.threads[t].execution,
            write,
        };
        (access, clock)
    }

    pub(super) fn read(
        &mut self,
        t: usize,
        op_index: usize,
        loc: Loc,
    ) -> Result<Option<Contents>, Verdict> {
        let (access, clock) = self.access(t, op_index, false);
        if let Some(v) = self.check(loc, access, &clock) {
            return Err(v);
        }
        self.recorded_read(t, loc);
        let cell = self.memory.entry(loc).or_default();
        // A packet slot is not checked (its flags order it), and only a
        // write, which clears the log, makes it an ordinary cell again: its
        // reads would never be looked at.
        if cell.packet.is_none() {
            cell.reads.push(access);
        }
        Ok(cell.value.clone())
    }

    /// `read` of a source `op` takes as plain data: a cell that holds
    /// packets (the last write there was one) is read so on the GPU as
    /// data words and flags mixed, at half the packets' offset: a wrong
    /// result, said of the two ops.
    fn read_plain(
        &mut self,
        t: usize,
        op_index: usize,
        loc: Loc,
    ) -> Result<Option<Contents>, Verdict> {
        let writer = self.memory.get(&loc).and_then(|cell| {
            cell.packet.as_ref()?;
            cell.last_write
        });
        let Some(writer) = writer else {
            return self.read(t, op_index, loc);
        };
        let place = loc.place;
        let (written, reader) = (
            self.threads[writer.by as usize]
                .ops
                .op(writer.op as usize)
                .name,
            self.threads[t].ops.op(op_index).name,
        );
        Err(Verdict::WrongResult(Box::new(WrongResult {
            text: format!(
                "execution {}: rank {} {} chunk {} holds packets ({} wrote them), which {} reads as plain data: on the GPU it reads the packets' data words and flags as data, at half their offset; read packets with unpack_packets or a packet reduce",
                self.threads[t].execution,
                place.rank,
                place.kind.name(),
                place.chunk,
                written.json(),
                reader.json()
            ),
            last_write: self.op_at(writer.by as usize, writer.op as usize),
            read_as_plain: self.op_at(t, op_index),
        })))
    }

    pub(super) fn write(
        &mut self,
        t: usize,
        op_index: usize,
        loc: Loc,
        value: Option<Contents>,
        packet: bool,
    ) -> Result<(), Verdict> {
        let (access, clock) = self.access(t, op_index, true);
        let execution = access.execution;
        if !packet {
            if let Some(v) = self.check(loc, access, &clock) {
                return Err(v);
            }
        }
        let event = self.recording_id(t);
        let packet = packet.then(|| {
            let th = &self.threads[t];
            Box::new(Packet {
                execution,
                clock: th.clock.exec.clone(),
                writer: t,
                epoch: th.epoch + 1,
                event,
            })
        });
        let cell = self.memory.entry(loc).or_default();
        cell.value = value;
        cell.packet = packet;
        cell.last_write = Some(access);
        cell.reads.clear();
        Ok(())
    }

    /// Data ops: read the sources, combine, write the destinations.
    pub(super) fn transfer(&mut self, t: usize, op: &Op) -> Result<(), Verdict> {
        use OpName::*;
        let op_index = self.threads[t].pc;
        // Each element is written after its packet was read, by the same
        // thread: the packets' writers come before this op.
        let sources = self.packet_sources(t, op);
        if !sources.is_empty() {
            let packets: Vec<&Packet> = sources
                .iter()
                .filter_map(|loc| self.memory.get(loc)?.packet.as_deref())
                .collect();
            let mut exec = self.threads[t].clock.exec.clone();
            exec.join_all(packets.iter().map(|p| &p.clock));
            let writers: Vec<u32> = match self.record {
                Some(_) => packets.iter().map(|p| p.event).collect(),
                None => Vec::new(),
            };
            for p in packets {
                exec.raise(p.writer, p.epoch);
            }
            self.threads[t].clock.exec = exec;
            for event in writers {
                self.recorded_needs(t, event, record::Release::Packet);
            }
        }
        let th = &self.threads[t];
        // A switch reduce that no broadcast follows (`glre`) names the
        // members' window it sums, and its destination, outside its
        // `src_buff` and `dst_buff` (it has neither).
        let window = op
            .group_reduce()
            .zip(op.channel_ids.first())
            .map(|(g, id)| BufRef {
                target: RefTarget::Switch { id: *id },
                index: g.buffer_offset,
                size: g.size,
                rank: None,
            });
        let switch_src = op
            .src
            .first()
            .or(window.as_ref())
            .map(|r| self.switch_places(th, r))
            .unwrap_or_default();
        let switch_dst = op
            .dst
            .first()
            .map(|r| self.switch_places(th, r))
            .unwrap_or_default();
        let src: Vec<Vec<Place>> = op.src.iter().map(|r| self.places(th, op, r)).collect();
        let dst: Vec<Vec<Place>> = op.dst.iter().map(|r| self.places(th, op, r)).collect();
        let reduces = op.name.is_reduction();
        // The sources and destinations from these on are packets.
        let first_packet_src = op.src.len() - op.packet_sources().len();
        let first_packet_dst = op.dst.len() - op.packet_destinations().len();
        let size = (op.src.first().or(op.dst.first()).or(window.as_ref())).map_or(0, |r| r.size);
        let parts = self.parts;
        for e in self.share(t, op, size) {
            let (chunk, part) = ((e / parts) as usize, e % parts);
            {
                let at = |p: &Vec<Place>| {
                    p.get(chunk).map(|place| Loc {
                        place: *place,
                        part,
                    })
                };
                // The value this op computes for this part.
                // (a switch reduce sums the members' buffers).
                let value = if reduces {
                    let operands = if switch_src.is_empty() {
                        &src
                    } else {
                        &switch_src
                    };
                    let mut values = Vec::with_capacity(operands.len());
                    // (A switch reduce's operands are its members' plain data.)
                    let packets_from = match switch_src.is_empty() {
                        true => first_packet_src,
                        false => usize::MAX,
                    };
                    for (i, operand) in operands.iter().enumerate() {
                        if let Some(loc) = at(operand) {
                            values.extend(match i >= packets_from {
                                true => self.read(t, op_index, loc)?,
                                false => self.read_plain(t, op_index, loc)?,
                            });
                        }
                    }
                    Contents::reduce_all(values, op.reduce_op.unwrap_or(ReduceOp::Sum))
                } else {
                    None
                };
                let value = match (&value, reduces) {
                    (None, false) if !switch_dst.is_empty() => match src.first().and_then(at) {
                        Some(loc) if first_packet_src > 0 => self.read_plain(t, op_index, loc)?,
                        Some(loc) => self.read(t, op_index, loc)?,
                        None => None,
                    },
                    _ => value,
                };
                // Where it goes.
                if !switch_dst.is_empty() {
                    for member in &switch_dst {
                        if let Some(loc) = at(member) {
                            self.write(
                                t,
                                op_index,
                                loc,
                                value.clone(),
                                op.name == GroupStorePackets,
                            )?;
                        }
                    }
                    continue;
                }
                if let (GroupLoadReduce, Some(g)) = (op.name, op.group_reduce()) {
                    let place = self.place(g.dst_rank, g.dst_kind, g.dst_index + chunk as u32);
                    self.write(t, op_index, Loc { place, part }, value.clone(), false)?;
                    continue;
                }
                for (i, d) in dst.iter().enumerate() {
                    let Some(loc) = at(d) else { continue };
                    // A plain transfer moves source i to destination i (fused
                    // transfers list pairs); a reduction sends its result.
                    let value = if reduces {
                        value.clone()
                    } else {
                        let from = if i < src.len() { i } else { 0 };
                        match src.get(from).and_then(at) {
                            Some(loc) if from >= first_packet_src => self.read(t, op_index, loc)?,
                            Some(loc) => self.read_plain(t, op_index, loc)?,
                            None => None,
                        }
                    };
                    let packet = i >= first_packet_dst;
                    self.write(t, op_index, loc, value, packet)?;
                }
            }
        }
        Ok(())
    }
}

/// Part `j` of `g` of `range`, as the executor cuts a byte range in units:
/// the first `len % g` parts get one unit more.
pub(super) fn split(range: std::ops::Range<u32>, j: u32, g: u32) -> std::ops::Range<u32> {
    let (len, g) = (range.end - range.start, g.max(1));
    let start = |j: u32| range.start + j * (len / g) + j.min(len % g);
    start(j)..start(j + 1)
}

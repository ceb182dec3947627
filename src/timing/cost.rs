//! What each op costs, whatever the message size: the bytes it moves
//! through each resource per byte of a chunk, what its own block must move
//! itself, and its fixed latency. The engine scales them by the chunk size.
//!
//! Resources are per GPU: its memory (bytes read plus written), its
//! NVLink out and in, its NIC out and in, and its SMs together. An op's
//! bytes go through the resources of the path they take:
//!
//! - a local buffer: the GPU's memory;
//! - a peer's buffer on another GPU of the node: the peer's memory, and
//!   NVLink out of the GPU the bytes leave and into the one they enter;
//!   on another node, the two NICs instead; on the same GPU (emulation),
//!   that GPU's memory only;
//! - a switch buffer (NVLS): a multimem load-reduce reads every member's
//!   memory over its NVLink out and brings the result in over the
//!   reader's; a multimem store goes out once and into every member. On a
//!   topology without NVLS (one GPU), each member is read or written in
//!   turn by the block.
//!
//! Packets (LL) carry their data with a flag in every other word: a packet
//! buffer takes twice its data's bytes.

use super::topology::{Link, Topology};
use crate::ir::{ChannelKind, Op, OpName, Plan, RefTarget};
use crate::sim::record::Event;

/// One of a GPU's resources, numbered `kind * gpus + gpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Memory = 0,
    NvLinkOut = 1,
    NvLinkIn = 2,
    NicOut = 3,
    NicIn = 4,
    /// All the GPU's SMs: more blocks than SMs share them.
    Sms = 5,
}

pub const RESOURCE_KINDS: usize = 6;

/// A resource of one GPU, as an index.
pub fn resource(kind: Resource, gpu: u32, gpus: u32) -> u32 {
    kind as u32 * gpus + gpu
}

/// What one op costs, per byte of a chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cost {
    /// Bytes through each resource it uses, per chunk byte.
    pub demands: Vec<(u32, f64)>,
    /// Bytes its block reads and writes itself, per chunk byte (0 for a
    /// port channel's transfer, which the proxy does).
    pub block: f64,
    /// The op's fixed time, microseconds.
    pub fixed_us: f64,
    /// Data bytes it delivers, per chunk byte (for the picture).
    pub payload: f64,
    /// A port channel op: its transfer or signal goes through the proxy.
    pub on_proxy: bool,
    /// A data op (else synchronisation).
    pub data: bool,
    /// It reads or writes packets: its block's pace depends on whether the
    /// buffers fit in the L2 (`Topology::l2_mb`), and `block` is in the
    /// terms of the pace while they do.
    pub packets: bool,
}

impl Cost {
    fn add(&mut self, kind: Resource, gpu: u32, gpus: u32, bytes: f64) {
        let r = resource(kind, gpu, gpus);
        match self.demands.iter_mut().find(|(at, _)| *at == r) {
            Some((_, b)) => *b += bytes,
            None => self.demands.push((r, bytes)),
        }
    }
}

/// The cost of a recorded event's op on `top`.
pub fn cost(plan: &Plan, top: &Topology, event: &Event, rank: u32, tb: u32) -> Cost {
    let op = event.op;
    let mut cost = Cost {
        fixed_us: top.latency.op,
        // On one GPU the block does a port channel's transfer itself (the
        // CUDA back end has no proxy): a memory copy like any other.
        on_proxy: event.proxy.is_some() && !top.one_gpu,
        ..Cost::default()
    };
    // A barrier lets its blocks go `barrier` after the last arrives: its
    // own time, from when all are there (the engine starts it then), so
    // that one a block ends with, or begins with, costs it too.
    if op.name == OpName::Barrier {
        cost.fixed_us += top.latency.barrier;
    }
    if op.name.moves_no_data() {
        return cost;
    }
    cost.data = true;
    cost.fixed_us += top.latency.memory;
    let gpus = gpu_count(plan, top);
    let me = top.gpu(rank);
    let peer = |id: u32| peer(plan, rank, tb, op, id);
    let members = |id: u32| {
        let switch = plan.ranks[rank as usize].switch_channel(tb, id);
        switch.map_or(&[][..], |s| &s.ranks[..])
    };
    let mut reads_remote = false;
    let mut multimem = false;
    let packets = packet_refs(op.name);
    for (i, r) in op.src.iter().enumerate() {
        let bytes = f64::from(r.size) * event.share * if packets.src(i) { 2.0 } else { 1.0 };
        match r.target {
            RefTarget::Local(_) => cost.add(Resource::Memory, me, gpus, bytes),
            RefTarget::Remote { id, .. } => {
                if let Some(q) = peer(id) {
                    reads_remote |= top.link(rank, q) != Link::Local;
                    carry(&mut cost, top, q, rank, q, gpus, bytes);
                }
            }
            RefTarget::Switch { id } => {
                let members = members(id);
                multimem |= top.nvls;
                for m in members {
                    if top.nvls {
                        cost.add(Resource::Memory, top.gpu(*m), gpus, bytes);
                        cost.add(Resource::NvLinkOut, top.gpu(*m), gpus, bytes);
                    } else {
                        carry(&mut cost, top, *m, rank, *m, gpus, bytes);
                        cost.block += bytes;
                    }
                }
                if top.nvls {
                    cost.add(Resource::NvLinkIn, me, gpus, bytes);
                }
            }
        }
        if !matches!(r.target, RefTarget::Switch { .. }) || top.nvls {
            cost.block += bytes;
        }
    }
    for (i, r) in op.dst.iter().enumerate() {
        let data = f64::from(r.size) * event.share;
        let bytes = data * if packets.dst(i) { 2.0 } else { 1.0 };
        cost.payload += data;
        match r.target {
            RefTarget::Local(_) => cost.add(Resource::Memory, me, gpus, bytes),
            RefTarget::Remote { id, .. } => {
                if let Some(q) = peer(id) {
                    carry(&mut cost, top, rank, q, q, gpus, bytes);
                }
            }
            RefTarget::Switch { id } => {
                let members = members(id);
                multimem |= top.nvls;
                if top.nvls {
                    cost.add(Resource::NvLinkOut, me, gpus, bytes);
                }
                for m in members {
                    if top.nvls {
                        cost.add(Resource::NvLinkIn, top.gpu(*m), gpus, bytes);
                        cost.add(Resource::Memory, top.gpu(*m), gpus, bytes);
                    } else {
                        carry(&mut cost, top, rank, *m, *m, gpus, bytes);
                        cost.block += bytes;
                    }
                }
            }
        }
        if !matches!(r.target, RefTarget::Switch { .. }) || top.nvls {
            cost.block += bytes;
        }
    }
    // Packets and reductions move at their own pace: in the block's terms,
    // as many more bytes as that pace is slower (or fewer, faster).
    if packets.any() {
        cost.block *= top.bandwidth.block / top.bandwidth.packet_block;
        cost.packets = true;
    } else if op.name.is_reduction() {
        cost.block *= top.bandwidth.block / top.bandwidth.reduce_block;
    }
    if cost.on_proxy {
        // The proxy's DMA moves the bytes; the block only pushed a request.
        cost.block = 0.0;
    } else {
        cost.add(Resource::Sms, me, gpus, cost.block);
    }
    if reads_remote {
        cost.fixed_us += top.latency.nvlink;
    }
    if multimem {
        cost.fixed_us += top.latency.nvlink + top.latency.multimem;
    }
    cost
}

/// The rank whose buffer an op of `rank`'s block `tb` reaches through its
/// remote buffer `id`.
fn peer(plan: &Plan, rank: u32, tb: u32, op: &Op, id: u32) -> Option<u32> {
    let channel = op.channel.unwrap_or(ChannelKind::Memory);
    let r = &plan.ranks[rank as usize];
    Some(r.remote_buffer(tb, channel, id)?.rank)
}

/// Bytes going from rank `from` to rank `to`, read from or written to the
/// buffer of `owner` (one of the two): the wires between them, and the
/// owner's memory. The other end's access is the op's other reference
/// (a read's destination, a write's source) and is counted there: a
/// remote read into registers is one memory access, not two.
#[allow(clippy::too_many_arguments)]
fn carry(cost: &mut Cost, top: &Topology, from: u32, to: u32, owner: u32, gpus: u32, bytes: f64) {
    let (a, b) = (top.gpu(from), top.gpu(to));
    match top.link(from, to) {
        Link::Local => {}
        Link::NvLink => {
            cost.add(Resource::NvLinkOut, a, gpus, bytes);
            cost.add(Resource::NvLinkIn, b, gpus, bytes);
        }
        Link::Network => {
            cost.add(Resource::NicOut, a, gpus, bytes);
            cost.add(Resource::NicIn, b, gpus, bytes);
        }
    }
    cost.add(Resource::Memory, top.gpu(owner), gpus, bytes);
}

/// GPUs the ranks of `plan` occupy on `top`.
pub fn gpu_count(plan: &Plan, top: &Topology) -> u32 {
    if top.one_gpu {
        1
    } else {
        (plan.ranks.len() as u32).max(1)
    }
}

/// Which of an op's references are packet buffers (twice their data):
/// those from an index on (`usize::MAX`: none).
struct PacketRefs {
    src_from: usize,
    dst_from: usize,
}

impl PacketRefs {
    fn src(&self, i: usize) -> bool {
        i >= self.src_from
    }
    fn dst(&self, i: usize) -> bool {
        i >= self.dst_from
    }
    /// Whether the op touches packets at all.
    fn any(&self) -> bool {
        self.src_from != usize::MAX || self.dst_from != usize::MAX
    }
}

/// As the executor reads and writes them (SEMANTICS.md §3.6): packet
/// reads take all sources, or for the reductions all but the first (the
/// local operand); packet writes go to every destination, or for the
/// reductions to all but the first (the raw result).
fn packet_refs(name: OpName) -> PacketRefs {
    use OpName::*;
    let src_from = match name {
        UnpackPackets | ReadPutPackets | GroupStorePackets => 0,
        ReducePackets | ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => 1,
        _ => usize::MAX,
    };
    let dst_from = match name {
        PutPackets | ReadPutPackets | CopyPackets | GroupStorePackets => 0,
        ReduceSendPackets | ReduceCopyPackets | ReduceCopySendPackets => 1,
        _ => usize::MAX,
    };
    PacketRefs { src_from, dst_from }
}

//! The MSCCL++ JSON execution plan, field for field as the reference
//! compiler writes it (SEMANTICS.md §2).

use crate::ir::*;
use serde_json::{json, Map, Value};

pub fn plan_to_json(plan: &Plan) -> Value {
    let o = &plan.options;
    json!({
        "name": plan.name,
        "collective": plan.collective.name,
        "protocol": if o.protocol == Protocol::LL { "LL" } else { "Simple" },
        "inplace": plan.collective.inplace,
        "reuse_resources": o.reuse_resources,
        "use_double_scratch_buffer": o.use_double_scratch_buffer,
        "buffer_alignment": o.buffer_alignment,
        "num_threads_per_block": o.num_threads_per_block,
        "min_message_size": o.min_message_size,
        "max_message_size": o.max_message_size,
        "gpus": plan.ranks.iter().enumerate().map(|(id, r)| rank_json(id, r)).collect::<Vec<_>>(),
    })
}

fn rank_json(id: usize, r: &RankPlan) -> Value {
    let mut channels = Vec::new();
    for (kind, peers) in [
        (ChannelKind::Memory, &r.memory_peers),
        (ChannelKind::Port, &r.port_peers),
    ] {
        if !peers.is_empty() {
            channels.push(json!({ "channel_type": kind.name(), "connected_to": peers }));
        }
    }
    for s in &r.switch_channels {
        channels.push(json!({
            "channel_type": "switch",
            "buffer_type": s.buffer.code(),
            "rank_groups": [{ "size": s.ranks.len(), "ranks": &s.ranks[..] }],
        }));
    }
    json!({
        "id": id,
        "input_chunks": r.input_chunks,
        "output_chunks": r.output_chunks,
        "scratch_chunks": r.scratch_chunks,
        "channels": channels,
        "remote_buffers": r.remote_buffers.iter().map(|b| json!({
            "rank": b.rank,
            "type": b.kind.code(),
            "access_channel_types": b.access.iter().map(|k| k.name()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "semaphores": r.semaphores.iter().map(|v| json!({ "init_value": v })).collect::<Vec<_>>(),
        "threadblocks": r.threadblocks.iter().enumerate().map(|(i, tb)| tb_json(i, tb)).collect::<Vec<_>>(),
    })
}

fn tb_json(id: usize, tb: &ThreadBlock) -> Value {
    json!({
        "id": id,
        "ops": tb.ops.iter().map(op_json).collect::<Vec<_>>(),
        "channels": tb.channels.iter().map(|(k, ids)| json!({ "channel_type": k.name(), "channel_ids": ids })).collect::<Vec<_>>(),
        "remote_buffer_refs": tb.remote_refs.iter().map(|(k, ids)| json!({
            "access_channel_type": k.name(),
            "remote_buffer_ids": ids,
        })).collect::<Vec<_>>(),
    })
}

fn buf_json(r: &BufRef) -> Value {
    let mut m = Map::new();
    match r.target {
        RefTarget::Local(kind) => {
            m.insert("type".into(), json!(kind.code()));
        }
        RefTarget::Remote { id, .. } => {
            m.insert("buffer_id".into(), json!(id));
        }
        RefTarget::Switch { id } => {
            m.insert("switch_channel_id".into(), json!(id));
        }
    }
    m.insert("index".into(), json!(r.index));
    m.insert("size".into(), json!(r.size));
    if let Some(rank) = r.rank {
        m.insert("rank".into(), json!(rank));
    }
    Value::Object(m)
}

/// Whether the reference compiler writes `channel_ids` for this op: for
/// synchronisation ops, gets and group reduces always, for data ops only on
/// port channels (memory-channel data ops address peers by remote buffer).
fn writes_channel_ids(op: &Op) -> bool {
    use OpName::*;
    matches!(
        op.name,
        Signal | Wait | RelaxedSignal | RelaxedWait | Flush | Get | GroupLoadReduce
    ) || (op.channel == Some(ChannelKind::Port) && !op.channel_ids.is_empty())
}

fn op_json(op: &Op) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(op.name.json()));
    if let Some(kind) = op.channel {
        m.insert("channel_type".into(), json!(kind.name()));
    }
    if writes_channel_ids(op) {
        m.insert("channel_ids".into(), json!(op.channel_ids));
    }
    if !op.src.is_empty() || !op.dst.is_empty() {
        m.insert(
            "src_buff".into(),
            Value::Array(op.src.iter().map(buf_json).collect()),
        );
        m.insert(
            "dst_buff".into(),
            Value::Array(op.dst.iter().map(buf_json).collect()),
        );
    }
    if let Some(t) = op.tbg {
        m.insert(
            "tbg_info".into(),
            json!({ "tb_id": t.tb_id, "tbg_size": t.size }),
        );
    }
    if let Some(r) = op.reduce_op {
        m.insert("reduce_op".into(), json!(r.name()));
    }
    if let Some((id, n)) = op.barrier {
        m.insert("barrier_id".into(), json!(id));
        m.insert("num_threadblocks".into(), json!(n));
    }
    if !op.semaphore_ids.is_empty() {
        m.insert("semaphore_ids".into(), json!(op.semaphore_ids));
    }
    if let Some(g) = op.group_reduce {
        m.insert("buffer_type".into(), json!(g.buffer.code()));
        m.insert("buffer_offset".into(), json!(g.buffer_offset));
        m.insert("size".into(), json!(g.size));
        m.insert(
            "dst_chunk".into(),
            json!({ "rank": g.dst_rank, "type": g.dst_kind.code(), "index": g.dst_index, "size": g.size }),
        );
    }
    if let Some(it) = &op.iter {
        m.insert(
            "iter_context".into(),
            json!({ "unit_size": it.unit_size, "num_chunks": it.num_chunks }),
        );
        m.insert(
            "ops".into(),
            Value::Array(op.body.iter().map(op_json).collect()),
        );
    }
    Value::Object(m)
}

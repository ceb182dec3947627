//! The timeline as a Chrome trace: the trace-event format's JSON object
//! form, which ui.perfetto.dev and chrome://tracing open. A rank is a
//! process, a thread block a thread, an op a complete event; the flows
//! that released a wait are arrows between them.
//!
//! Two readers matter and they differ: Perfetto's trace processor
//! (`importers/json/json_trace_parser_impl.cc`) and catapult's importer
//! behind chrome://tracing (`trace_event_importer.html`). Each choice below
//! says which rule of theirs it follows.
//!
//! Flows are the `s`/`f` flow events, which both readers call version 1,
//! and not version 2 (`bind_id` with `flow_in`/`flow_out` on the slice
//! itself): version 2 gives a slice one flow id, and an op may be let go
//! by several others (data and a signal) and let others go in turn. The
//! price: `s` and `f` bind by timestamp, hence the care below with where
//! they fall.

use serde_json::{json, Value};
use std::io::Write;

use super::timeline::{FlowKind, Slice, SliceKind, Timeline};

/// The timeline in Chrome's trace-event JSON object format, written to
/// `out` an event at a time: a trace of millions of ops is never held
/// whole (as JSON values it took twenty times its bytes).
pub fn write_chrome_trace(t: &Timeline, out: &mut dyn Write) -> std::io::Result<()> {
    let mut events = Events { out, first: true };
    events.out.write_all(b"{\"traceEvents\":[")?;
    metadata(t, &mut events)?;
    for s in &t.slices {
        events.push(complete(t, s))?;
    }
    for (id, f) in t.flows.iter().enumerate() {
        let (from, to) = (&t.slices[f.from], &t.slices[f.to]);
        let (pid, tid) = ids(t, from.track);
        // `s` binds to the slice that encloses its ts on its own thread
        // (Perfetto: the topmost open slice of the track; catapult:
        // `findSliceAtTs`). The release happens at the source's end; a
        // point just inside it binds there and nowhere else.
        events.push(json!({
            "ph": "s", "id": id, "name": flow_name(f.kind), "cat": flow_name(f.kind),
            "pid": pid, "tid": tid, "ts": inside(from, from.end_us),
        }))?;
        let (pid, tid) = ids(t, to.track);
        // `bp: "e"`: bind to the enclosing slice, not to the next one that
        // starts (the default, which would be the op after the wait).
        // Both readers key a flow on (id, cat, name), so all three repeat.
        // The target was let go when its waiting ended.
        events.push(json!({
            "ph": "f", "bp": "e", "id": id, "name": flow_name(f.kind),
            "cat": flow_name(f.kind), "pid": pid, "tid": tid,
            "ts": inside(to, to.start_us + to.waited_us),
        }))?;
    }
    for st in &t.stuck {
        let (pid, tid) = ids(t, st.track);
        events.push(json!({
            "ph": "i", "s": "t", "name": format!("stuck at {}", st.name), "cat": "deadlock",
            "pid": pid, "tid": tid, "ts": st.since_us, "args": { "op": st.op },
        }))?;
    }
    let rest = json!({
        "title": t.title,
        "topology": t.topology,
        "size_bytes": t.size_bytes,
        "end_us": t.end_us,
        "deadlock": !t.stuck.is_empty(),
    });
    let out = events.out;
    out.write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
    serde_json::to_writer(&mut *out, &rest)?;
    out.write_all(b"}\n")
}

/// The `traceEvents` list as it is written: each event after a comma but
/// the first.
struct Events<'o> {
    out: &'o mut dyn Write,
    first: bool,
}

impl Events<'_> {
    fn push(&mut self, event: Value) -> std::io::Result<()> {
        if !std::mem::take(&mut self.first) {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *self.out, &event)?;
        Ok(())
    }
}

/// The trace's pid and tid for a track: rank + 1 and block + 1. Perfetto
/// gives pid 0 and tid 0 the Linux kernel's meaning (the idle task: its
/// maintainers advise synthetic traces to start from 1, google/perfetto
/// issue 394), and would fold every rank's block 0 into one thread. The
/// names and sort indices still say rank N and tb N.
fn ids(t: &Timeline, track: usize) -> (u64, u64) {
    let k = &t.tracks[track];
    (u64::from(k.rank) + 1, u64::from(k.tb) + 1)
}

/// Names for the process and thread list. Metadata events carry no ts:
/// Perfetto rejects negative ones and needs none (google/perfetto issue
/// 2048). Perfetto reads only the names; the sort indices are catapult's,
/// and the pid/tid order already matches them for Perfetto.
fn metadata(t: &Timeline, events: &mut Events) -> std::io::Result<()> {
    let mut ranks: Vec<u32> = t.tracks.iter().map(|k| k.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    for rank in ranks {
        let pid = u64::from(rank) + 1;
        events.push(json!({
            "ph": "M", "name": "process_name", "pid": pid,
            "args": { "name": format!("rank {rank}") },
        }))?;
        events.push(json!({
            "ph": "M", "name": "process_sort_index", "pid": pid,
            "args": { "sort_index": rank },
        }))?;
    }
    for (i, k) in t.tracks.iter().enumerate() {
        let (pid, tid) = ids(t, i);
        events.push(json!({
            "ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
            "args": { "name": format!("tb {}", k.tb) },
        }))?;
        events.push(json!({
            "ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
            "args": { "sort_index": k.tb },
        }))?;
    }
    Ok(())
}

fn complete(t: &Timeline, s: &Slice) -> Value {
    let (pid, tid) = ids(t, s.track);
    let mut e = json!({
        "ph": "X", "name": s.name, "cat": kind_name(s.kind),
        "pid": pid, "tid": tid, "ts": s.start_us, "dur": shown_dur(s),
        "args": {
            "detail": s.detail, "bytes": s.bytes, "waited_us": s.waited_us,
            "critical": s.critical, "op": s.op,
        },
    });
    if s.critical {
        // A reserved colour name of catapult's colour scheme (red); Perfetto
        // ignores `cname` and colours by name, so `args.critical` is what
        // says it there.
        e["cname"] = json!("terrible");
    }
    e
}

/// A slice's duration as written: half a nanosecond short. Perfetto turns
/// ts and dur into nanoseconds each on its own, by truncation; an op ends
/// where the next begins, and a rounding that put the end one nanosecond
/// past that start would nest the next op inside this one (overlapping
/// complete events are not supported: Perfetto's FAQ). Short by half a
/// nanosecond, the truncated end can never pass the next start.
fn shown_dur(s: &Slice) -> f64 {
    let dur = (s.end_us - s.start_us).max(0.0);
    dur - (dur / 2.0).min(0.0005)
}

/// `at`, moved at least 2 ns (a quarter of the op, if less) inside the
/// slice as written, so that neither reader's rounding binds the flow to a
/// neighbour. A zero-length op has only its instant: flows there bind to it
/// only while no other op of its block starts at the same time.
fn inside(s: &Slice, at: f64) -> f64 {
    let dur = shown_dur(s);
    let margin = (dur / 4.0).min(0.002);
    at.clamp(s.start_us + margin, s.start_us + dur - margin)
}

pub(super) fn kind_name(k: SliceKind) -> &'static str {
    match k {
        SliceKind::Data => "data",
        SliceKind::Sync => "sync",
    }
}

pub(super) fn flow_name(k: FlowKind) -> &'static str {
    match k {
        FlowKind::Signal => "signal",
        FlowKind::Semaphore => "semaphore",
        FlowKind::Barrier => "barrier",
        FlowKind::Data => "data",
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::timing::timeline::{Flow, StuckAt, Track};

    fn slice(track: usize, op: usize, name: &str, kind: SliceKind, times: [f64; 3]) -> Slice {
        Slice {
            track,
            op,
            name: name.into(),
            detail: format!("{name} <op {op}> & co"),
            kind,
            start_us: times[0],
            end_us: times[1],
            waited_us: times[2],
            bytes: if kind == SliceKind::Data { 1 << 20 } else { 0 },
            critical: op == 0,
        }
    }

    /// Two ranks of two blocks: rank 0 tb 0 puts and signals, rank 1 tb 0
    /// waits for the signal and copies; rank 1 tb 1 never gets its signal.
    pub(crate) fn small() -> Timeline {
        let tracks = [(0, 0), (0, 1), (1, 0), (1, 1)]
            .map(|(rank, tb)| Track { rank, tb })
            .to_vec();
        let slices = vec![
            slice(0, 0, "put", SliceKind::Data, [0.0, 6.5, 0.0]),
            slice(0, 1, "signal", SliceKind::Sync, [6.5, 7.0, 0.0]),
            slice(1, 0, "copy", SliceKind::Data, [0.0, 3.0, 0.0]),
            slice(2, 0, "wait", SliceKind::Sync, [0.0, 7.5, 7.2]),
            slice(2, 1, "copy", SliceKind::Data, [7.5, 12.25, 0.0]),
        ];
        let flows = vec![
            Flow {
                from: 1,
                to: 3,
                kind: FlowKind::Signal,
            },
            Flow {
                from: 0,
                to: 4,
                kind: FlowKind::Data,
            },
        ];
        Timeline {
            title: "allgather <ring> & co".into(),
            topology: "h100-nvlink".into(),
            size_bytes: 64 << 20,
            tracks,
            slices,
            flows,
            end_us: 12.25,
            stuck: vec![StuckAt {
                track: 3,
                op: 0,
                name: "wait".into(),
                since_us: 0.5,
            }],
        }
    }

    fn parsed(t: &Timeline) -> (Value, Vec<Value>) {
        let mut text = Vec::new();
        write_chrome_trace(t, &mut text).expect("written");
        let doc: Value = serde_json::from_slice(&text).expect("valid JSON");
        let events = doc["traceEvents"].as_array().expect("traceEvents").clone();
        (doc, events)
    }

    fn num(e: &Value, key: &str) -> f64 {
        e[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing in {e}"))
    }

    #[test]
    fn every_op_is_a_complete_event_on_its_rank_and_block() {
        let t = small();
        let (_, events) = parsed(&t);
        let xs: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(xs.len(), t.slices.len());
        for (e, s) in xs.iter().zip(&t.slices) {
            let k = &t.tracks[s.track];
            assert_eq!(num(e, "pid"), f64::from(k.rank + 1), "{e}");
            assert_eq!(num(e, "tid"), f64::from(k.tb + 1), "{e}");
            assert_eq!(num(e, "ts"), s.start_us);
            let dur = num(e, "dur");
            assert!(dur <= s.end_us - s.start_us && dur > s.end_us - s.start_us - 0.001);
            assert_eq!(e["name"], s.name.as_str());
            assert_eq!(e["cat"], kind_name(s.kind));
            assert_eq!(e["args"]["detail"], s.detail.as_str());
            assert_eq!(e["args"]["waited_us"], s.waited_us);
            assert_eq!(e["args"]["op"], s.op);
            assert_eq!(e["args"]["critical"], s.critical);
            assert_eq!(e.get("cname").is_some(), s.critical, "{e}");
        }
    }

    #[test]
    fn flows_pair_up_and_land_inside_their_slices() {
        let t = small();
        let (_, events) = parsed(&t);
        let within = |e: &Value| {
            let (pid, tid, ts) = (num(e, "pid"), num(e, "tid"), num(e, "ts"));
            events
                .iter()
                .filter(|x| x["ph"] == "X" && num(x, "pid") == pid && num(x, "tid") == tid)
                .filter(|x| num(x, "ts") <= ts && ts <= num(x, "ts") + num(x, "dur"))
                .map(|x| x["name"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        let starts: Vec<&Value> = events.iter().filter(|e| e["ph"] == "s").collect();
        let ends: Vec<&Value> = events.iter().filter(|e| e["ph"] == "f").collect();
        assert_eq!((starts.len(), ends.len()), (t.flows.len(), t.flows.len()));
        for (f, flow) in t.flows.iter().enumerate() {
            let s: Vec<_> = starts.iter().filter(|e| e["id"] == f).collect();
            let e: Vec<_> = ends.iter().filter(|e| e["id"] == f).collect();
            assert_eq!((s.len(), e.len()), (1, 1), "flow {f}: one start, one end");
            let (s, e) = (s[0], e[0]);
            assert_eq!((&s["cat"], &s["name"]), (&e["cat"], &e["name"]));
            assert_eq!(s["cat"], flow_name(flow.kind));
            assert_eq!(e["bp"], "e");
            // Exactly one slice of the block encloses each end: the flow's.
            assert_eq!(within(s), [t.slices[flow.from].name.clone()], "{s}");
            assert_eq!(within(e), [t.slices[flow.to].name.clone()], "{e}");
        }
        // The signal's end is where the wait stopped waiting.
        let wait = &t.slices[3];
        assert_eq!(num(ends[0], "ts"), wait.start_us + wait.waited_us);
    }

    #[test]
    fn names_metadata_and_the_deadlock() {
        let t = small();
        let (doc, events) = parsed(&t);
        let meta = |name: &str, pid: u64, tid: Option<u64>| {
            events.iter().find(|e| {
                e["ph"] == "M"
                    && e["name"] == name
                    && e["pid"] == pid
                    && tid.is_none_or(|tid| e["tid"] == tid)
            })
        };
        assert_eq!(
            meta("process_name", 1, None).unwrap()["args"]["name"],
            "rank 0"
        );
        assert_eq!(
            meta("process_name", 2, None).unwrap()["args"]["name"],
            "rank 1"
        );
        assert_eq!(
            meta("process_sort_index", 2, None).unwrap()["args"]["sort_index"],
            1
        );
        assert_eq!(
            meta("thread_name", 2, Some(2)).unwrap()["args"]["name"],
            "tb 1"
        );
        assert_eq!(
            meta("thread_sort_index", 2, Some(2)).unwrap()["args"]["sort_index"],
            1
        );
        assert!(events
            .iter()
            .all(|e| e["ph"] != "M" || e.get("ts").is_none()));

        let stuck: Vec<&Value> = events.iter().filter(|e| e["ph"] == "i").collect();
        assert_eq!(stuck.len(), 1);
        assert_eq!(stuck[0]["name"], "stuck at wait");
        assert_eq!((&stuck[0]["s"], num(stuck[0], "ts")), (&json!("t"), 0.5));
        assert_eq!((num(stuck[0], "pid"), num(stuck[0], "tid")), (2.0, 2.0));

        assert_eq!(doc["displayTimeUnit"], "ns");
        let other = &doc["otherData"];
        assert_eq!(other["title"], "allgather <ring> & co");
        assert_eq!(other["topology"], "h100-nvlink");
        assert_eq!(other["size_bytes"], 64u64 << 20);
        assert_eq!(other["end_us"], 12.25);
        assert_eq!(other["deadlock"], true);

        let done = Timeline { stuck: vec![], ..t };
        assert_eq!(parsed(&done).0["otherData"]["deadlock"], false);
    }

    #[test]
    fn ends_that_round_badly_never_pass_the_next_start() {
        // Perfetto's conversion: each of ts and dur to integer nanoseconds
        // by truncation. An op of a whole number of nanoseconds from a
        // start of 1.1 ns steps, the next op from its end: some (0.011 +
        // 0.073 µs, say) would end a nanosecond past the next start if the
        // duration were written as it is.
        let ns = |us: f64| (us * 1000.0) as i64;
        for a in 0..1000 {
            for b in 1..100 {
                let (start, end) = (
                    f64::from(a) * 0.0011,
                    f64::from(a) * 0.0011 + f64::from(b) * 0.001,
                );
                let s = slice(0, 0, "x", SliceKind::Sync, [start, end, 0.0]);
                assert!(ns(start) + ns(shown_dur(&s)) <= ns(end), "{start} {end}");
            }
        }
    }
}

//! Reads an MSCCL++ JSON execution plan into the plan IR. Every problem is
//! reported with the JSON path of the value that is wrong
//! (`gpus[1].threadblocks[0].ops[3].src_buff[0].type`), since a plan has no
//! source lines to point at.

use crate::ir::*;
use json::Json;

/// A problem with a plan: where in the document, and what.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "at {}: {}", self.path, self.message)
        }
    }
}

impl PlanError {
    /// The problem as a diagnostic: the JSON path is its place.
    pub fn diagnostic(&self) -> crate::diag::Diagnostic {
        let d = crate::diag::Diagnostic::plain(crate::diag::Code::PlanFile, &self.message);
        match self.path.is_empty() {
            true => d,
            false => d.with_note(format!("at {}", self.path)),
        }
    }
}

type Res<T> = Result<T, PlanError>;

/// Parses `text` as a plan.
///
/// The document is read rank by rank: each element of `gpus` becomes a
/// JSON value, is read into the IR and dropped before the next is parsed,
/// so that a plan of a million thread blocks does not exist twice, once as
/// a tree of JSON values (ten times the text) and once as the IR. Problems
/// are reported as if the whole document had been parsed first: a syntax
/// error anywhere before any other problem, the top-level fields in order,
/// then the first rank's problem.
pub fn read_plan(text: &str) -> Res<Plan> {
    let not_json = |e: serde_json::Error| PlanError {
        path: String::new(),
        message: format!("not JSON: {e}"),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let doc = serde::Deserializer::deserialize_any(&mut de, stream::Top).map_err(not_json)?;
    de.end().map_err(not_json)?;
    let root = At::root(&doc.top);
    let plan = plan(&root, || match doc.gpus {
        stream::Gpus::Missing => root.key("gpus").map(|_| Vec::new()),
        stream::Gpus::NotList => root
            .child(&Json::Null, Step::Key("gpus"))
            .fail("expected a list"),
        stream::Gpus::Ranks(ranks) => Ok(ranks),
        stream::Gpus::Failed(e) => Err(e),
    })?;
    check_ranges(&plan)?;
    Ok(plan)
}

/// Parses `text` as a plan the plain way, the whole document first: what
/// [`read_plan`] must agree with.
#[cfg(test)]
fn read_plan_whole(text: &str) -> Res<Plan> {
    let doc: Json = serde_json::from_str(text).map_err(|e| PlanError {
        path: String::new(),
        message: format!("not JSON: {e}"),
    })?;
    let root = At::root(&doc);
    let plan = plan(&root, || {
        let gpus_at = root.key("gpus")?;
        let gpus = gpus_at.items()?;
        let mut ranks = Vec::with_capacity(gpus.len());
        for (i, gpu) in gpus.iter().enumerate() {
            ranks.push(gpu_rank(gpu, i)?);
        }
        Ok(ranks)
    })?;
    check_ranges(&plan)?;
    Ok(plan)
}

/// JSON values as the plan reader reads them: objects as lists of fields
/// (a plan's objects have a few fields each; a map per object cost more
/// than the plan itself), keys borrowed from the text where they can be.
/// Where fields repeat, the last counts, and a value prints as
/// `serde_json` prints it, as when plans were read into its values.
mod json {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde::Deserialize;
    use serde_json::Number;
    use std::borrow::Cow;
    use std::fmt;

    pub enum Json<'de> {
        Null,
        Bool(bool),
        Number(Number),
        String(Cow<'de, str>),
        Array(Vec<Json<'de>>),
        Object(Vec<(Cow<'de, str>, Json<'de>)>),
    }

    impl<'de> Json<'de> {
        /// Field `key` (its last occurrence).
        pub fn get(&self, key: &str) -> Option<&Json<'de>> {
            match self {
                Json::Object(fields) => fields.iter().rev().find(|(k, _)| k == key).map(|f| &f.1),
                _ => None,
            }
        }

        pub fn is_object(&self) -> bool {
            matches!(self, Json::Object(_))
        }

        pub fn as_array(&self) -> Option<&[Json<'de>]> {
            match self {
                Json::Array(items) => Some(items),
                _ => None,
            }
        }

        pub fn as_u64(&self) -> Option<u64> {
            match self {
                Json::Number(n) => n.as_u64(),
                _ => None,
            }
        }

        pub fn as_bool(&self) -> Option<bool> {
            match self {
                Json::Bool(b) => Some(*b),
                _ => None,
            }
        }

        pub fn as_str(&self) -> Option<&str> {
            match self {
                Json::String(s) => Some(s),
                _ => None,
            }
        }

        /// As a `serde_json` value (for printing).
        pub fn to_value(&self) -> serde_json::Value {
            use serde_json::Value;
            match self {
                Json::Null => Value::Null,
                Json::Bool(b) => Value::Bool(*b),
                Json::Number(n) => Value::Number(n.clone()),
                Json::String(s) => Value::String(s.to_string()),
                Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
                Json::Object(fields) => Value::Object(
                    fields
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_value()))
                        .collect(),
                ),
            }
        }
    }

    impl fmt::Display for Json<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{}", self.to_value())
        }
    }

    impl<'de> Deserialize<'de> for Json<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json<'de>, D::Error> {
            d.deserialize_any(JsonVisitor)
        }
    }

    struct JsonVisitor;

    impl<'de> Visitor<'de> for JsonVisitor {
        type Value = Json<'de>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }

        fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
            Ok(Json::Bool(b))
        }

        fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
            Ok(Json::Number(v.into()))
        }

        fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
            Ok(Json::Number(v.into()))
        }

        fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
            Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
        }

        fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
            Ok(Json::String(Cow::Owned(s.to_string())))
        }

        fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
            Ok(Json::String(Cow::Borrowed(s)))
        }

        fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
            Ok(Json::String(Cow::Owned(s)))
        }

        fn visit_unit<E>(self) -> Result<Json<'de>, E> {
            Ok(Json::Null)
        }

        fn visit_none<E>(self) -> Result<Json<'de>, E> {
            Ok(Json::Null)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
            Json::deserialize(d)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
            let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(Json::Array(items))
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
            let mut fields = Vec::new();
            while let Some(key) = map.next_key_seed(KeySeed)? {
                fields.push((key, map.next_value()?));
            }
            Ok(Json::Object(fields))
        }
    }

    /// An object's key, borrowed from the text unless it has escapes.
    pub struct KeySeed;

    impl<'de> DeserializeSeed<'de> for KeySeed {
        type Value = Cow<'de, str>;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
            d.deserialize_str(KeyVisitor)
        }
    }

    struct KeyVisitor;

    impl<'de> Visitor<'de> for KeyVisitor {
        type Value = Cow<'de, str>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a key")
        }

        fn visit_str<E>(self, s: &str) -> Result<Cow<'de, str>, E> {
            Ok(Cow::Owned(s.to_string()))
        }

        fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
            Ok(Cow::Borrowed(s))
        }

        fn visit_string<E>(self, s: String) -> Result<Cow<'de, str>, E> {
            Ok(Cow::Owned(s))
        }
    }
}

/// Reading the document's top level as it is parsed (see [`read_plan`]).
mod stream {
    use super::json::{Json, KeySeed};
    use super::{gpu_rank, At, PlanError, RankPlan, Step};
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::fmt;

    /// The top-level fields but `gpus` (`Null` if the document is not an
    /// object), and the ranks read from `gpus`.
    pub struct Document<'de> {
        pub top: Json<'de>,
        pub gpus: Gpus,
    }

    pub enum Gpus {
        Missing,
        NotList,
        Ranks(Vec<RankPlan>),
        /// The first rank's problem (the rest were parsed, not read).
        Failed(PlanError),
    }

    pub struct Top;

    impl<'de> Visitor<'de> for Top {
        type Value = Document<'de>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a plan")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document<'de>, A::Error> {
            let mut top = Vec::new();
            let mut gpus = Gpus::Missing;
            while let Some(key) = map.next_key_seed(KeySeed)? {
                if key == "gpus" {
                    gpus = map.next_value_seed(GpusSeed)?;
                } else {
                    let value: Json = map.next_value()?;
                    top.push((key, value));
                }
            }
            Ok(Document {
                top: Json::Object(top),
                gpus,
            })
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Document<'de>, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(not_an_object())
        }

        fn visit_bool<E>(self, _: bool) -> Result<Document<'de>, E> {
            Ok(not_an_object())
        }

        fn visit_i64<E>(self, _: i64) -> Result<Document<'de>, E> {
            Ok(not_an_object())
        }

        fn visit_u64<E>(self, _: u64) -> Result<Document<'de>, E> {
            Ok(not_an_object())
        }

        fn visit_f64<E>(self, _: f64) -> Result<Document<'de>, E> {
            Ok(not_an_object())
        }

        fn visit_str<E>(self, _: &str) -> Result<Document<'de>, E> {
            Ok(not_an_object())
        }

        fn visit_unit<E>(self) -> Result<Document<'de>, E> {
            Ok(not_an_object())
        }
    }

    fn not_an_object<'de>() -> Document<'de> {
        Document {
            top: Json::Null,
            gpus: Gpus::Missing,
        }
    }

    struct GpusSeed;

    impl<'de> DeserializeSeed<'de> for GpusSeed {
        type Value = Gpus;

        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Gpus, D::Error> {
            d.deserialize_any(GpusVisitor)
        }
    }

    struct GpusVisitor;

    impl<'de> Visitor<'de> for GpusVisitor {
        type Value = Gpus;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of ranks")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Gpus, A::Error> {
            let mut ranks = Vec::new();
            loop {
                // One rank's value at a time; after a problem, only parse.
                let i = ranks.len();
                let Some(value) = seq.next_element::<Json>()? else {
                    return Ok(Gpus::Ranks(ranks));
                };
                let gpus = At {
                    value: &Json::Null,
                    parent: None,
                    step: Step::Key("gpus"),
                };
                match gpu_rank(&gpus.child(&value, Step::Index(i)), i) {
                    Ok(rank) => ranks.push(rank),
                    Err(e) => {
                        while seq.next_element::<IgnoredAny>()?.is_some() {}
                        return Ok(Gpus::Failed(e));
                    }
                }
            }
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Gpus, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Gpus::NotList)
        }

        fn visit_bool<E>(self, _: bool) -> Result<Gpus, E> {
            Ok(Gpus::NotList)
        }

        fn visit_i64<E>(self, _: i64) -> Result<Gpus, E> {
            Ok(Gpus::NotList)
        }

        fn visit_u64<E>(self, _: u64) -> Result<Gpus, E> {
            Ok(Gpus::NotList)
        }

        fn visit_f64<E>(self, _: f64) -> Result<Gpus, E> {
            Ok(Gpus::NotList)
        }

        fn visit_str<E>(self, _: &str) -> Result<Gpus, E> {
            Ok(Gpus::NotList)
        }

        fn visit_unit<E>(self) -> Result<Gpus, E> {
            Ok(Gpus::NotList)
        }
    }
}

/// Every buffer reference lies within the buffer it names (the executor
/// does not check; SEMANTICS.md §5.7), on this rank, a peer or every member
/// of a switch channel.
fn check_ranges(plan: &Plan) -> Res<()> {
    let chunks = |rank: u32, kind: BufferKind| -> u64 {
        let r = &plan.ranks[rank as usize];
        match kind {
            BufferKind::Input => r.input_chunks,
            BufferKind::Output => r.output_chunks,
            BufferKind::Scratch => r.scratch_chunks,
        }
        .into()
    };
    // An op's place: (parent op's node or NONE, its index in its list);
    // its path is written out only for a problem.
    const NONE: usize = usize::MAX;
    let mut nodes: Vec<(usize, usize)> = Vec::new();
    let mut stack: Vec<(usize, &Op)> = Vec::new();
    for (g, rank) in plan.ranks.iter().enumerate() {
        for (t, tb) in rank.threadblocks.iter().enumerate() {
            nodes.clear();
            for (i, op) in tb.ops.iter().enumerate() {
                nodes.push((NONE, i));
                stack.push((nodes.len() - 1, op));
            }
            while let Some((node, op)) = stack.pop() {
                for (i, inner) in op.body().iter().enumerate() {
                    nodes.push((node, i));
                    stack.push((nodes.len() - 1, inner));
                }
                let path = || {
                    let mut indices = Vec::new();
                    let mut n = node;
                    while n != NONE {
                        indices.push(nodes[n].1);
                        n = nodes[n].0;
                    }
                    let mut path = format!("gpus[{g}].threadblocks[{t}]");
                    for i in indices.iter().rev() {
                        path.push_str(&format!(".ops[{i}]"));
                    }
                    path
                };
                for (key, refs) in [("src_buff", &op.src), ("dst_buff", &op.dst)] {
                    for (j, r) in refs.iter().enumerate() {
                        // Each buffer the reference lands in.
                        let check = |owner: u32, kind: BufferKind| -> Res<()> {
                            if owner as usize >= plan.ranks.len() {
                                return Err(PlanError {
                                    path: format!("{}.{key}[{j}]", path()),
                                    message: format!("rank {owner} is not in the plan"),
                                });
                            }
                            let end = u64::from(r.index) + u64::from(r.size);
                            let have = chunks(owner, kind);
                            if end > have {
                                return Err(PlanError {
                                    path: format!("{}.{key}[{j}]", path()),
                                    message: format!(
                                        "chunks {}..{end} of rank {owner}'s {} buffer, which has {have}",
                                        r.index,
                                        kind.name()
                                    ),
                                });
                            }
                            Ok(())
                        };
                        match r.target {
                            RefTarget::Local(kind) => check(g as u32, kind)?,
                            RefTarget::Remote { id, kind } => {
                                let channel = op.channel.unwrap_or(ChannelKind::Memory);
                                let global = tb.remote_buffer_ids(channel)[id as usize];
                                check(rank.remote_buffers[global as usize].rank, kind)?;
                            }
                            RefTarget::Switch { id } => {
                                match tb.channel_ids(ChannelKind::Switch).get(id as usize) {
                                    Some(&c) => {
                                        let decl = &rank.switch_channels[c as usize];
                                        for m in decl.ranks.iter() {
                                            check(*m, decl.buffer)?;
                                        }
                                    }
                                    None => {
                                        return Err(PlanError {
                                            path: format!(
                                                "{}.{key}[{j}].switch_channel_id",
                                                path()
                                            ),
                                            message: format!(
                                                "the thread block has no switch channel {id}"
                                            ),
                                        })
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// A value and where it is in the document: its parent and the key or
/// index that leads from there. The path is written out only for a
/// problem (a plan has millions of values, a problem one).
#[derive(Clone, Copy)]
struct At<'a> {
    value: &'a Json<'a>,
    parent: Option<&'a At<'a>>,
    step: Step<'a>,
}

#[derive(Clone, Copy)]
enum Step<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> At<'a> {
    fn root(value: &'a Json<'a>) -> At<'a> {
        At {
            value,
            parent: None,
            step: Step::Root,
        }
    }

    /// `gpus[1].threadblocks[0].ops[5]`.
    fn path(&self) -> String {
        let mut out = self.parent.map_or_else(String::new, At::path);
        match self.step {
            Step::Root => {}
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
        out
    }

    fn fail<T>(&self, message: impl Into<String>) -> Res<T> {
        Err(PlanError {
            path: self.path(),
            message: message.into(),
        })
    }

    fn key<'s>(&'s self, key: &'s str) -> Res<At<'s>> {
        match self.value.get(key) {
            Some(value) => Ok(self.child(value, Step::Key(key))),
            None if self.value.is_object() => self.fail(format!("missing field `{key}`")),
            None => self.fail("expected an object"),
        }
    }

    fn opt<'s>(&'s self, key: &'s str) -> Option<At<'s>> {
        self.value
            .get(key)
            .map(|value| self.child(value, Step::Key(key)))
    }

    fn child<'s>(&'s self, value: &'s Json<'s>, step: Step<'s>) -> At<'s> {
        At {
            value,
            parent: Some(self),
            step,
        }
    }

    fn items(&self) -> Res<Vec<At<'_>>> {
        let Some(list) = self.value.as_array() else {
            return self.fail("expected a list");
        };
        Ok(list
            .iter()
            .enumerate()
            .map(|(i, value)| self.child(value, Step::Index(i)))
            .collect())
    }

    fn u64(&self) -> Res<u64> {
        match self.value.as_u64() {
            Some(v) => Ok(v),
            None => self.fail(format!(
                "expected a non-negative integer, found {}",
                self.value
            )),
        }
    }

    fn u32(&self) -> Res<u32> {
        let v = self.u64()?;
        u32::try_from(v).or_else(|_| self.fail(format!("{v} is too large")))
    }

    fn bool(&self) -> Res<bool> {
        match self.value.as_bool() {
            Some(v) => Ok(v),
            None => self.fail(format!("expected true or false, found {}", self.value)),
        }
    }

    fn str(&self) -> Res<&'a str> {
        match self.value.as_str() {
            Some(v) => Ok(v),
            None => self.fail(format!("expected a string, found {}", self.value)),
        }
    }

    fn u32s<C: FromIterator<u32>>(&self) -> Res<C> {
        self.items()?.iter().map(At::u32).collect()
    }

    /// A list of ids of `what`, each below `count`.
    fn ids_below(&self, count: usize, what: &str) -> Res<Ids> {
        let values: Ids = self.u32s()?;
        match values.iter().find(|v| **v as usize >= count) {
            Some(bad) => self.fail(format!("{what} {bad} but the rank has {count}")),
            None => Ok(values),
        }
    }

    /// One of `choices`, by name.
    fn one_of<T: Copy>(&self, what: &str, choices: &[(&str, T)]) -> Res<T> {
        let s = self.str()?;
        match choices.iter().find(|(name, _)| *name == s) {
            Some((_, v)) => Ok(*v),
            None => {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                self.fail(format!(
                    "unknown {what} \"{}\" (expected one of: {})",
                    crate::diag::escaped(s),
                    names.join(", ")
                ))
            }
        }
    }
}

const BUFFER_KINDS: [(&str, BufferKind); 3] = [
    ("i", BufferKind::Input),
    ("o", BufferKind::Output),
    ("s", BufferKind::Scratch),
];
const CHANNEL_KINDS: [(&str, ChannelKind); 3] = [
    ("memory", ChannelKind::Memory),
    ("port", ChannelKind::Port),
    ("switch", ChannelKind::Switch),
];
const REDUCE_OPS: [(&str, ReduceOp); 3] = [
    ("sum", ReduceOp::Sum),
    ("min", ReduceOp::Min),
    ("max", ReduceOp::Max),
];
const COLLECTIVES: [&str; 6] = [
    "allgather",
    "allreduce",
    "reducescatter",
    "alltoall",
    "sendrecv",
    "test",
];

/// The plan, its ranks read by `gpus` where the top-level field `gpus` is
/// read (so that problems come in document order).
fn plan(doc: &At, gpus: impl FnOnce() -> Res<Vec<RankPlan>>) -> Res<Plan> {
    let collective_at = doc.key("collective")?;
    let name = collective_at.str()?;
    let Some(collective_name) = COLLECTIVES.iter().find(|c| **c == name) else {
        return collective_at.fail(format!(
            "unknown collective \"{}\" (expected one of: {})",
            crate::diag::escaped(name),
            COLLECTIVES.join(", ")
        ));
    };
    let protocol = doc.key("protocol")?.one_of(
        "protocol",
        &[("Simple", Protocol::Simple), ("LL", Protocol::LL)],
    )?;
    let options = Options {
        protocol,
        reuse_resources: doc.key("reuse_resources")?.bool()?,
        use_double_scratch_buffer: doc.key("use_double_scratch_buffer")?.bool()?,
        num_threads_per_block: doc.key("num_threads_per_block")?.u32()?,
        buffer_alignment: match doc.opt("buffer_alignment") {
            Some(a) => a.u32()?,
            None => Options::default().buffer_alignment,
        },
        min_message_size: doc.key("min_message_size")?.u64()?,
        max_message_size: doc.key("max_message_size")?.u64()?,
        ..Options::default()
    };
    let ranks = gpus()?;
    let first = ranks.first();
    let collective = Collective {
        name: collective_name,
        num_ranks: ranks.len() as u32,
        chunk_factor: 1,
        inplace: doc.key("inplace")?.bool()?,
        input_chunks: first.map_or(0, |r| r.input_chunks),
        output_chunks: first.map_or(0, |r| r.output_chunks),
    };
    // What the collective's result is defined from (`Plan::expected_result`):
    // an AllGather gathers each rank's input, an AllToAll splits it in one
    // part per rank.
    let (ins, n) = (collective.input_chunks, collective.num_ranks);
    let splits = match *collective_name {
        "allgather" => ins > 0,
        "alltoall" => ins > 0 && ins.checked_rem(n) == Some(0),
        _ => true,
    };
    if !splits {
        return doc.key("gpus")?.fail(format!(
            "an {name} plan's ranks need input chunks{}: the first has {ins}",
            if *collective_name == "alltoall" {
                format!(", a positive multiple of the {n} ranks")
            } else {
                String::new()
            }
        ));
    }
    Ok(Plan {
        name: doc.key("name")?.str()?.to_string(),
        collective,
        options,
        ranks,
        loop_contexts: Vec::new(),
    })
}

/// Chunks a buffer may have: as many as the compiler allows scratch.
const MAX_CHUNKS: u32 = 1 << 24;

fn chunk_count(at: &At) -> Res<u32> {
    let n = at.u32()?;
    if n > MAX_CHUNKS {
        return at.fail(format!("{n} chunks; at most {MAX_CHUNKS} are supported"));
    }
    Ok(n)
}

/// Element `i` of `gpus`: its id must be `i`.
fn gpu_rank(gpu: &At, i: usize) -> Res<RankPlan> {
    let id = gpu.key("id")?;
    if id.u64()? != i as u64 {
        return id.fail(format!(
            "gpu ids must be 0, 1, 2, ... in order; this one should be {i}"
        ));
    }
    rank(gpu)
}

fn rank(gpu: &At) -> Res<RankPlan> {
    let mut r = RankPlan {
        input_chunks: chunk_count(&gpu.key("input_chunks")?)?,
        output_chunks: chunk_count(&gpu.key("output_chunks")?)?,
        scratch_chunks: chunk_count(&gpu.key("scratch_chunks")?)?,
        ..RankPlan::default()
    };
    for ch in gpu.key("channels")?.items()? {
        match ch
            .key("channel_type")?
            .one_of("channel type", &CHANNEL_KINDS)?
        {
            ChannelKind::Memory => r
                .memory_peers
                .extend(ch.key("connected_to")?.u32s::<Vec<u32>>()?),
            ChannelKind::Port => r
                .port_peers
                .extend(ch.key("connected_to")?.u32s::<Vec<u32>>()?),
            ChannelKind::Switch => {
                let groups_at = ch.key("rank_groups")?;
                let groups = groups_at.items()?;
                let [group] = groups.as_slice() else {
                    return ch
                        .key("rank_groups")?
                        .fail("expected exactly one rank group");
                };
                let ranks: Vec<u32> = group.key("ranks")?.u32s()?;
                r.switch_channels.push(SwitchChannelDecl {
                    buffer: ch
                        .key("buffer_type")?
                        .one_of("buffer type", &BUFFER_KINDS)?,
                    ranks: ranks.into(),
                });
            }
        }
    }
    for b in gpu.key("remote_buffers")?.items()? {
        let access_at = b.key("access_channel_types")?;
        let access = access_at.items()?;
        r.remote_buffers.push(RemoteBuffer {
            rank: b.key("rank")?.u32()?,
            kind: b.key("type")?.one_of("buffer type", &BUFFER_KINDS)?,
            access: access
                .iter()
                .map(|a| a.one_of("channel type", &CHANNEL_KINDS))
                .collect::<Res<_>>()?,
        });
    }
    if let Some(sems) = gpu.opt("semaphores") {
        for s in sems.items()? {
            r.semaphores.push(s.key("init_value")?.u64()? as i64);
        }
    }
    let tbs_at = gpu.key("threadblocks")?;
    let tbs = tbs_at.items()?;
    r.threadblocks = vec![ThreadBlock::default(); tbs.len()];
    for tb in &tbs {
        let id = tb.key("id")?;
        let index = id.u32()? as usize;
        if index >= tbs.len() {
            return id.fail(format!(
                "thread block id {index} but the rank has {} thread blocks",
                tbs.len()
            ));
        }
        r.threadblocks[index] = threadblock(tb, &r)?;
    }
    Ok(r)
}

fn threadblock(tb: &At, rank: &RankPlan) -> Res<ThreadBlock> {
    let mut block = ThreadBlock::default();
    for ch in tb.key("channels")?.items()? {
        let kind = ch
            .key("channel_type")?
            .one_of("channel type", &CHANNEL_KINDS)?;
        let count = match kind {
            ChannelKind::Memory => rank.memory_peers.len(),
            ChannelKind::Port => rank.port_peers.len(),
            ChannelKind::Switch => rank.switch_channels.len(),
        };
        let what = format!("{} channel", kind.name());
        let values = ch.key("channel_ids")?.ids_below(count, &what)?;
        block.channels.push((kind, values));
    }
    for refs in tb.key("remote_buffer_refs")?.items()? {
        let kind = refs
            .key("access_channel_type")?
            .one_of("channel type", &CHANNEL_KINDS)?;
        let values = refs
            .key("remote_buffer_ids")?
            .ids_below(rank.remote_buffers.len(), "remote buffer")?;
        block.remote_refs.push((kind, values));
    }
    block.ops = tb
        .key("ops")?
        .items()?
        .iter()
        .map(|op| read_op(op, rank, &block))
        .collect::<Res<_>>()?;
    // Collected through a `Result`, the list grew by doubling: a plan of
    // millions of blocks keeps what it holds, not what it grew to.
    block.ops.shrink_to_fit();
    Ok(block)
}

fn read_op(at: &At, rank: &RankPlan, tb: &ThreadBlock) -> Res<Op> {
    let mut op = Op::new(
        at.key("name")?.one_of("operation", OpName::NAMES)?,
        Default::default(),
    );
    if let Some(c) = at.opt("channel_type") {
        op.channel = Some(c.one_of("channel type", &CHANNEL_KINDS)?);
    }
    if let Some(ids) = at.opt("channel_ids") {
        op.channel_ids = ids.u32s()?;
    }
    let channel = op.channel;
    for (key, list) in [("src_buff", &mut op.src), ("dst_buff", &mut op.dst)] {
        if let Some(refs) = at.opt(key) {
            let refs = refs.items()?;
            list.reserve_exact(refs.len());
            for r in refs {
                list.push(buf_ref(&r, channel, rank, tb)?);
            }
        }
    }
    if op.name.needs_buffers() && (op.src.is_empty() || op.dst.is_empty()) {
        let missing = if op.src.is_empty() {
            "src_buff"
        } else {
            "dst_buff"
        };
        return at.fail(format!(
            "a `{}` op moves data from its src_buff to its dst_buff, and this one has no {missing} entry",
            op.name.json()
        ));
    }
    if let Some(t) = at.opt("tbg_info") {
        let size_at = t.key("tbg_size")?;
        let size = size_at.u32()?;
        if size == 0 || size > MAX_THREAD_BLOCKS {
            return size_at.fail(format!(
                "a thread block group has 1 to {MAX_THREAD_BLOCKS} blocks"
            ));
        }
        let id_at = t.key("tb_id")?;
        let tb_id = id_at.u32()?;
        if tb_id >= size {
            return id_at.fail(format!("part {tb_id} of a group of {size}"));
        }
        op.tbg = Some(TbgInfo { tb_id, size });
    }
    if let Some(r) = at.opt("reduce_op") {
        op.reduce_op = Some(r.one_of("reduce op", &REDUCE_OPS)?);
    }
    if let Some(id) = at.opt("barrier_id") {
        op.barrier = Some((id.u32()?, at.key("num_threadblocks")?.u32()?));
    }
    if let Some(ids) = at.opt("semaphore_ids") {
        op.extra_mut().semaphore_ids = ids.u32s()?;
    }
    if let Some(offset) = at.opt("buffer_offset") {
        let chunk = at.key("dst_chunk")?;
        op.extra_mut().group_reduce = Some(GroupReduce {
            buffer: at
                .key("buffer_type")?
                .one_of("buffer type", &BUFFER_KINDS)?,
            buffer_offset: offset.u32()?,
            size: at.key("size")?.u32()?,
            dst_rank: chunk.key("rank")?.u32()?,
            dst_kind: chunk.key("type")?.one_of("buffer type", &BUFFER_KINDS)?,
            dst_index: chunk.key("index")?.u32()?,
        });
    }
    if let Some(context) = at.opt("iter_context") {
        op.extra_mut().iter = Some(IterContext {
            unit_size: context.key("unit_size")?.u64()?,
            num_chunks: context.key("num_chunks")?.u32()?,
        });
        op.extra_mut().body = at
            .key("ops")?
            .items()?
            .iter()
            .map(|inner| read_op(inner, rank, tb))
            .collect::<Res<_>>()?;
    }
    Ok(op)
}

fn buf_ref(
    at: &At,
    channel: Option<ChannelKind>,
    rank: &RankPlan,
    tb: &ThreadBlock,
) -> Res<BufRef> {
    let target = if let Some(t) = at.opt("type") {
        RefTarget::Local(t.one_of("buffer type", &BUFFER_KINDS)?)
    } else if let Some(id) = at.opt("buffer_id") {
        let local = id.u32()?;
        let table = channel.map_or(&[][..], |kind| tb.remote_buffer_ids(kind));
        let Some(&global) = table.get(local as usize) else {
            return id.fail(format!(
                "the thread block has {} remote buffer(s) for this op's channel type",
                table.len()
            ));
        };
        RefTarget::Remote {
            id: local,
            kind: rank.remote_buffers[global as usize].kind,
        }
    } else if let Some(id) = at.opt("switch_channel_id") {
        RefTarget::Switch { id: id.u32()? }
    } else {
        return at.fail("a buffer reference needs `type`, `buffer_id` or `switch_channel_id`");
    };
    Ok(BufRef {
        target,
        index: at.key("index")?.u32()?,
        size: at.key("size")?.u32()?,
        rank: at.opt("rank").map(|r| r.u32()).transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The reader's JSON values look up and print as `serde_json`'s do.
    #[test]
    fn json_values_read_and_print_as_serde_json_values() {
        let text = r#"{"b": [1, -2, 3.5, 1e300, "x\"y", null, true], "a": {"k": 1, "k": {"z": 0, "y": []}},
            "a\u0062": "c", "n": 18446744073709551615}"#;
        let mine: Json = serde_json::from_str(text).unwrap();
        let theirs: Value = serde_json::from_str(text).unwrap();
        assert_eq!(mine.to_string(), theirs.to_string());
        for key in ["a", "b", "ab", "n", "k", "missing"] {
            assert_eq!(
                mine.get(key).map(|v| v.to_string()),
                theirs.get(key).map(|v| v.to_string()),
                "{key}"
            );
        }
        let (a, b) = (mine.get("a").unwrap(), theirs.get("a").unwrap());
        assert_eq!(a.get("k").unwrap().to_string(), b["k"].to_string());
        assert_eq!(mine.get("n").unwrap().as_u64(), theirs["n"].as_u64());
        let list = mine.get("b").unwrap().as_array().unwrap();
        let want = theirs["b"].as_array().unwrap();
        for (x, y) in list.iter().zip(want) {
            assert_eq!(x.as_u64(), y.as_u64());
            assert_eq!(x.as_str(), y.as_str());
            assert_eq!(x.as_bool(), y.as_bool());
            assert_eq!(x.is_object(), y.is_object());
        }
    }

    /// Values that stand in for a field: wrong types, and the values the
    /// reader checks (ids, sizes).
    fn replacements() -> Vec<Value> {
        vec![
            Value::Null,
            Value::Bool(true),
            Value::from(0),
            Value::from(1),
            Value::from(u64::from(u32::MAX) + 1),
            Value::from(-1),
            Value::from(1.5),
            Value::from("x"),
            Value::Array(Vec::new()),
            serde_json::json!({}),
        ]
    }

    /// Every field of `v` (its path as keys and indices), depth first.
    fn fields(v: &Value, path: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
        match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Value::from(i));
                    out.push(path.clone());
                    fields(item, path, out);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    path.push(Value::from(k.clone()));
                    out.push(path.clone());
                    fields(item, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    fn at<'a>(mut v: &'a mut Value, path: &[Value]) -> &'a mut Value {
        for step in path {
            v = match (v, step) {
                (Value::Array(items), Value::Number(i)) => &mut items[i.as_u64().unwrap() as usize],
                (Value::Object(map), Value::String(k)) => map.get_mut(k).unwrap(),
                _ => unreachable!(),
            };
        }
        v
    }

    fn agree(text: &str, what: &str) {
        assert_eq!(read_plan(text), read_plan_whole(text), "{what}");
    }

    /// Read rank by rank, a plan reads as the whole document does: the same
    /// plan, or the same first problem, for plans with a field replaced,
    /// removed or duplicated, and for truncated and odd documents.
    #[test]
    fn reading_rank_by_rank_agrees_with_reading_the_whole() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/conformance/single_node/allreduce_pkt.n4.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let base: Value = serde_json::from_str(&text).unwrap();
        agree(&text, "as is");
        let mut all = Vec::new();
        fields(&base, &mut Vec::new(), &mut all);
        for (n, field) in all.iter().enumerate() {
            // Every field near the top, every 13th deeper down.
            if field.len() > 3 && n % 13 != 0 {
                continue;
            }
            for r in replacements() {
                let mut plan = base.clone();
                *at(&mut plan, field) = r.clone();
                agree(&plan.to_string(), &format!("{field:?} = {r}"));
            }
            let (last, parent) = field.split_last().unwrap();
            let mut plan = base.clone();
            match (at(&mut plan, parent), last) {
                (Value::Array(items), Value::Number(i)) => {
                    items.remove(i.as_u64().unwrap() as usize);
                }
                (Value::Object(map), Value::String(k)) => {
                    map.remove(k);
                }
                _ => unreachable!(),
            }
            agree(&plan.to_string(), &format!("{field:?} removed"));
        }
        // A second `gpus` (the last one counts), and a broken one before it.
        let top = text.trim_start().strip_prefix('{').unwrap();
        agree(&format!("{{\"gpus\": [1], {top}"), "gpus twice");
        agree(&format!("{{\"gpus\": 3, {top}"), "gpus twice");
        let gpus_last = format!(
            "{}, \"gpus\": [{{}}]}}",
            text.trim_end().strip_suffix('}').unwrap()
        );
        agree(&gpus_last, "bad gpus last");
        // Cut short, trailing text, not an object.
        for cut in [1, 10, text.len() / 3, text.len() / 2, text.len() - 1] {
            agree(&text[..cut], &format!("cut at {cut}"));
        }
        agree(&format!("{text} x"), "trailing text");
        agree(&format!("{text} {{}}"), "two documents");
        for odd in [
            "",
            "null",
            "[]",
            "[1, {}]",
            "7",
            "\"plan\"",
            "{}",
            "{\"gpus\": []}",
        ] {
            agree(odd, odd);
        }
    }
}

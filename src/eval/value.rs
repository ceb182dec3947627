//! Runtime values of the generator language.

use crate::ir::DataSync;
use crate::ir::{BufferKind, Protocol, ReduceOp, ReplicationPolicy};
use std::fmt;
use std::rc::Rc;

/// A run of chunks of one rank's buffer (the DSL's Chunk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chunk {
    pub rank: u32,
    pub kind: BufferKind,
    pub index: u32,
    pub size: u32,
}

/// A rank's buffer, or a scratch allocation in it (the DSL's Buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferVal {
    pub rank: u32,
    pub kind: BufferKind,
    /// First chunk of this buffer in the rank's buffer of `kind`.
    pub offset: u32,
    pub size: u32,
}

/// A memory or port channel from `src` to `dst`, with its id among `src`'s
/// channels of that type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChannelVal {
    pub id: u32,
    pub src: u32,
    pub dst: u32,
}

/// A switch (NVLS) channel over a group of ranks.
#[derive(Debug)]
pub struct SwitchVal {
    pub ranks: Vec<u32>,
    /// The channel's id on each member rank.
    pub ids: std::collections::BTreeMap<u32, u32>,
    pub buffer: BufferKind,
    /// The end of the largest window already checked to fit every member's
    /// buffer (buffers only grow), so that N ops over N ranks cost N, not N².
    pub checked_end: std::cell::Cell<u64>,
}

impl SwitchVal {
    pub fn id_on(&self, rank: u32) -> Option<u32> {
        self.ids.get(&rank).copied()
    }
}

impl PartialEq for SwitchVal {
    fn eq(&self, other: &SwitchVal) -> bool {
        self.ranks == other.ranks && self.ids == other.ids && self.buffer == other.buffer
    }
}

impl Eq for SwitchVal {}

impl std::hash::Hash for SwitchVal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.ranks, &self.ids, self.buffer).hash(state)
    }
}

/// A collective as declared with `allreduce(..)` and friends: the plan's own record.
pub use crate::ir::Collective as CollectiveVal;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// No value: what a call of a method returns, and an argument left out.
    Unit,
    Int(i64),
    Bool(bool),
    Str(Rc<str>),
    Range(i64, i64),
    List(Rc<[Value]>),
    Tuple(Rc<[Value]>),
    Map(Rc<MapVal>),
    Rank(u32),
    Buffer(BufferVal),
    Chunk(Chunk),
    MemoryChannel(ChannelVal),
    PortChannel(ChannelVal),
    SwitchChannel(Rc<SwitchVal>),
    SwitchView(Rc<SwitchVal>, u32),
    TbGroup(Rc<Vec<u32>>),
    Semaphore {
        rank: u32,
        id: u32,
    },
    Collective(Rc<CollectiveVal>),
    Protocol(Protocol),
    Sync(DataSync),
    ReduceOp(ReduceOp),
    BufferType(BufferKind),
    Policy(ReplicationPolicy),
    /// `none`: a data-sync setting or a replication policy, as the context wants.
    NoneConst,
}

impl From<crate::vocab::Constant> for Value {
    fn from(c: crate::vocab::Constant) -> Value {
        use crate::vocab::Constant as C;
        match c {
            C::Protocol(p) => Value::Protocol(p),
            C::Sync(s) => Value::Sync(s),
            C::ReduceOp(op) => Value::ReduceOp(op),
            C::BufferType(kind) => Value::BufferType(kind),
            C::Policy(p) => Value::Policy(p),
            C::None => Value::NoneConst,
        }
    }
}

/// An insertion-ordered map (iteration follows insertion, like Python's dict)
/// with hashed lookups: programs index maps of N² channels in loops.
#[derive(Debug, Default)]
pub struct MapVal {
    pub entries: Vec<(Value, Value)>,
    /// Each entry's key hash ([`Key::hash`]) and position in `entries`:
    /// growing the table rehashes from the stored hashes, without reading
    /// the keys again (a miss in memory each, in a map of N² channels).
    index: hashbrown::HashTable<(u64, u32)>,
}

/// A key as a lookup gives it: a value, or the items of a tuple not yet
/// built (`channels[(peer, gpu)]` looks up its pair without allocating it).
#[derive(Clone, Copy)]
pub enum Key<'a> {
    Value(&'a Value),
    Tuple(&'a [Value]),
}

impl Key<'_> {
    fn hash(self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        match self {
            // A tuple hashes as its items, whichever way it comes.
            Key::Value(Value::Tuple(items)) => items[..].hash(&mut h),
            Key::Tuple(items) => items.hash(&mut h),
            Key::Value(v) => v.hash(&mut h),
        }
        h.finish()
    }

    fn matches(self, key: &Value) -> bool {
        match (self, key) {
            (Key::Value(v), key) => v == key,
            (Key::Tuple(items), Value::Tuple(k)) => items == &k[..],
            (Key::Tuple(_), _) => false,
        }
    }
}

impl MapVal {
    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.lookup(Key::Value(key))
    }

    pub fn lookup(&self, key: Key<'_>) -> Option<&Value> {
        let entries = &self.entries;
        let hash = key.hash();
        self.index
            .find(hash, |&(h, i)| h == hash && key.matches(&entries[i as usize].0))
            .map(|&(_, i)| &entries[i as usize].1)
    }
}

impl PartialEq for MapVal {
    fn eq(&self, other: &MapVal) -> bool {
        self.entries == other.entries
    }
}

impl Eq for MapVal {}

impl std::hash::Hash for MapVal {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.entries.hash(state)
    }
}

/// Builds maps in time linear in their size (a later value for a key
/// replaces the earlier one in place, as in Python).
#[derive(Default)]
pub struct MapBuilder {
    map: MapVal,
}

impl MapBuilder {
    pub fn new() -> MapBuilder {
        MapBuilder::default()
    }

    pub fn insert(&mut self, key: Value, value: Value) {
        let map = &mut self.map;
        let hash = Key::Value(&key).hash();
        let entries = &map.entries;
        match map.index.find(hash, |&(h, i)| h == hash && entries[i as usize].0 == key) {
            Some(&(_, i)) => map.entries[i as usize].1 = value,
            None => {
                // Positions fit in u32: maps stop at MAX_ELEMENTS entries.
                let i = map.entries.len() as u32;
                map.entries.push((key, value));
                map.index.insert_unique(hash, (hash, i), |&(h, _)| h);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.map.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.entries.is_empty()
    }

    pub fn finish(self) -> MapVal {
        self.map
    }
}

impl Value {
    pub fn as_int(&self) -> i64 {
        match self {
            Value::Int(v) => *v,
            _ => 0,
        }
    }

    pub fn as_bool(&self) -> bool {
        matches!(self, Value::Bool(true))
    }

    pub fn is_unit(&self) -> bool {
        matches!(self, Value::Unit)
    }
}

impl Value {
    /// The value as text, or `None` where it passes `max` bytes: a list
    /// nested in itself n times prints 2^n items, so formatting stops at
    /// the bound instead of running out of memory.
    pub fn text_within(&self, max: usize) -> Option<String> {
        let mut out = Bounded {
            text: String::new(),
            max,
        };
        fmt::write(&mut out, format_args!("{self}")).ok()?;
        Some(out.text)
    }

    /// The value as a message shows it: in full up to 80 bytes, else its
    /// start and an ellipsis.
    pub fn brief(&self) -> String {
        const MOST: usize = 80;
        let mut out = Bounded {
            text: String::new(),
            max: MOST,
        };
        if fmt::write(&mut out, format_args!("{self}")).is_err() {
            out.text.push('…');
        }
        out.text
    }
}

/// A text that refuses to grow past `max` bytes (cut at a char boundary).
struct Bounded {
    text: String,
    max: usize,
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.max - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        let mut cut = room;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        self.text.push_str(&s[..cut]);
        Err(fmt::Error)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn seq(
            f: &mut fmt::Formatter<'_>,
            items: &[Value],
            open: &str,
            close: &str,
        ) -> fmt::Result {
            write!(f, "{open}")?;
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{v}")?;
            }
            write!(f, "{close}")
        }
        match self {
            Value::Unit => write!(f, "()"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(s) => write!(f, "{s}"),
            Value::Range(a, b) => write!(f, "{a}..{b}"),
            Value::List(items) => seq(f, items, "[", "]"),
            Value::Tuple(items) => seq(f, items, "(", ")"),
            Value::Map(m) => {
                write!(f, "{{")?;
                for (i, (k, v)) in m.entries.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                write!(f, "}}")
            }
            Value::Rank(r) => write!(f, "rank({r})"),
            Value::Buffer(b) => write!(
                f,
                "rank({}).{}[{}..{}]",
                b.rank,
                b.kind.name(),
                b.offset,
                b.offset + b.size
            ),
            Value::Chunk(c) => write!(
                f,
                "rank({}).{}[{}..{}]",
                c.rank,
                c.kind.name(),
                c.index,
                c.index + c.size
            ),
            Value::MemoryChannel(c) => write!(f, "memory_channel({}, {})", c.dst, c.src),
            Value::PortChannel(c) => write!(f, "port_channel({}, {})", c.dst, c.src),
            Value::SwitchChannel(s) => write!(f, "switch_channel({:?})", s.ranks),
            Value::SwitchView(s, r) => write!(f, "switch_channel({:?}).at_rank({r})", s.ranks),
            Value::TbGroup(tbs) => write!(f, "tb_group({tbs:?})"),
            Value::Semaphore { rank, id } => write!(f, "semaphore {id} of rank {rank}"),
            Value::Collective(c) => write!(f, "{}({})", c.name, c.num_ranks),
            Value::Protocol(p) => write!(f, "{}", if *p == Protocol::LL { "LL" } else { "Simple" }),
            Value::Sync(s) => write!(
                f,
                "{}",
                match (s.before, s.after) {
                    (true, true) => "both",
                    (true, false) => "before",
                    (false, true) => "after",
                    (false, false) => "none",
                }
            ),
            Value::ReduceOp(op) => write!(f, "{}", op.name()),
            Value::BufferType(k) => write!(f, "{}", k.name()),
            Value::Policy(p) => write!(
                f,
                "{}",
                if *p == ReplicationPolicy::None {
                    "none"
                } else {
                    "interleaved"
                }
            ),
            Value::NoneConst => write!(f, "none"),
        }
    }
}

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

#[derive(Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// No value: what a call of a method returns, and an argument left out.
    Unit,
    Int(i64),
    /// An int past `i64::MAX`, up to `u64::MAX` (the largest message
    /// size, the default of `max_message_size`): ints run from `i64::MIN`
    /// to `u64::MAX`, as the plans' fields do, and one that fits an `i64`
    /// is always an `Int` ([`Value::int`] makes them), so that equal ints
    /// have one form.
    Big(u64),
    Bool(bool),
    Str(Rc<str>),
    Range(i64, i64),
    List(Rc<[Value]>),
    /// A tuple, but never one of two ints: that is a `Pair`.
    Tuple(Rc<[Value]>),
    /// A tuple of two ints, `(peer, gpu)`, without an allocation: the key
    /// of every all-pairs channel map. Made only by [`Value::tuple`], so
    /// that equal tuples have one form.
    Pair(i64, i64),
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

/// Written out, not derived, so that the values read most (ints, pairs,
/// chunks, channels) are copied where they are read: a clone returned
/// through memory, as a call returns it, costs a store-forwarding stall
/// at the read after it on x86, a third of the time of `peer != gpu`.
impl Clone for Value {
    #[inline(always)]
    fn clone(&self) -> Value {
        match self {
            Value::Int(i) => Value::Int(*i),
            Value::Bool(b) => Value::Bool(*b),
            Value::Pair(a, b) => Value::Pair(*a, *b),
            Value::Chunk(c) => Value::Chunk(*c),
            Value::MemoryChannel(c) => Value::MemoryChannel(*c),
            Value::PortChannel(c) => Value::PortChannel(*c),
            Value::Rank(r) => Value::Rank(*r),
            _ => self.clone_rest(),
        }
    }
}

impl Value {
    #[inline(never)]
    fn clone_rest(&self) -> Value {
        match self {
            Value::Unit => Value::Unit,
            Value::Int(i) => Value::Int(*i),
            Value::Big(v) => Value::Big(*v),
            Value::Bool(b) => Value::Bool(*b),
            Value::Str(s) => Value::Str(s.clone()),
            Value::Range(lo, hi) => Value::Range(*lo, *hi),
            Value::List(items) => Value::List(items.clone()),
            Value::Tuple(items) => Value::Tuple(items.clone()),
            Value::Pair(a, b) => Value::Pair(*a, *b),
            Value::Map(m) => Value::Map(m.clone()),
            Value::Rank(r) => Value::Rank(*r),
            Value::Buffer(b) => Value::Buffer(*b),
            Value::Chunk(c) => Value::Chunk(*c),
            Value::MemoryChannel(c) => Value::MemoryChannel(*c),
            Value::PortChannel(c) => Value::PortChannel(*c),
            Value::SwitchChannel(s) => Value::SwitchChannel(s.clone()),
            Value::SwitchView(s, i) => Value::SwitchView(s.clone(), *i),
            Value::TbGroup(tbs) => Value::TbGroup(tbs.clone()),
            Value::Semaphore { rank, id } => Value::Semaphore {
                rank: *rank,
                id: *id,
            },
            Value::Collective(c) => Value::Collective(c.clone()),
            Value::Protocol(p) => Value::Protocol(*p),
            Value::Sync(s) => Value::Sync(*s),
            Value::ReduceOp(op) => Value::ReduceOp(*op),
            Value::BufferType(kind) => Value::BufferType(*kind),
            Value::Policy(p) => Value::Policy(*p),
            Value::NoneConst => Value::NoneConst,
        }
    }
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

pub use super::map::{Key, MapBuilder, MapVal};

/// A tuple's items: those of a `Tuple`, or the two ints of a `Pair`.
pub enum TupleItems<'a> {
    Shared(&'a [Value]),
    Pair([Value; 2]),
}

impl std::ops::Deref for TupleItems<'_> {
    type Target = [Value];
    fn deref(&self) -> &[Value] {
        match self {
            TupleItems::Shared(items) => items,
            TupleItems::Pair(items) => items,
        }
    }
}

impl Value {
    /// The tuple of `items`: a `Pair` when they are two ints.
    pub fn tuple(items: &[Value]) -> Value {
        match items {
            [Value::Int(a), Value::Int(b)] => Value::Pair(*a, *b),
            _ => Value::Tuple(Rc::from(items)),
        }
    }

    /// The items of a tuple, whichever its form; `None` for any other value.
    pub fn tuple_items(&self) -> Option<TupleItems<'_>> {
        match self {
            Value::Tuple(items) => Some(TupleItems::Shared(items)),
            Value::Pair(a, b) => Some(TupleItems::Pair([Value::Int(*a), Value::Int(*b)])),
            _ => None,
        }
    }

    /// The int `v`, or `None` outside the ints (`i64::MIN` to `u64::MAX`).
    pub fn int(v: i128) -> Option<Value> {
        if let Ok(small) = i64::try_from(v) {
            Some(Value::Int(small))
        } else {
            u64::try_from(v).ok().map(Value::Big)
        }
    }

    /// The int this is, widened; `None` for any other value.
    pub fn wide_int(&self) -> Option<i128> {
        match self {
            Value::Int(v) => Some((*v).into()),
            Value::Big(v) => Some((*v).into()),
            _ => None,
        }
    }

    /// Whether this is an int past `i64::MAX`, or a list holding one.
    pub fn holds_big(&self) -> bool {
        match self {
            Value::Big(_) => true,
            Value::List(items) => items.iter().any(Value::holds_big),
            _ => false,
        }
    }

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
    /// How many values `self` is made of, itself and every element, key
    /// and value inside it, counted up to `limit`: what comparing or
    /// hashing it walks. A part held in several places counts in each, as
    /// the walk visits it in each: a list that holds one list twice,
    /// doubled in a loop, is small in memory and has astronomically many
    /// parts. Each list, tuple and map held is counted once, so the count
    /// takes time in the values there are, not in the parts.
    pub fn parts_up_to(&self, limit: u64) -> u64 {
        /// Where a list's, tuple's or map's values are held: one place
        /// for every value that shares them.
        fn shared(v: &Value) -> Option<*const ()> {
            match v {
                Value::List(items) | Value::Tuple(items) => Some(items.as_ptr() as *const ()),
                Value::Map(m) => Some(Rc::as_ptr(m) as *const ()),
                _ => None,
            }
        }
        type Counted = rustc_hash::FxHashMap<*const (), u64>;
        /// The parts of `item`, held in a list, tuple or map.
        fn part(item: &Value, limit: u64, counted: &mut Counted) -> u64 {
            let Some(at) = shared(item) else {
                return 1;
            };
            if let Some(n) = counted.get(&at) {
                return *n;
            }
            let n = walk(item, limit, counted);
            counted.insert(at, n);
            n
        }
        fn walk(v: &Value, limit: u64, counted: &mut Counted) -> u64 {
            let mut count = 1u64;
            match v {
                Value::List(items) | Value::Tuple(items) => {
                    for item in items.iter() {
                        if count >= limit {
                            break;
                        }
                        count = count.saturating_add(part(item, limit, counted));
                    }
                }
                Value::Map(m) => {
                    for (key, value) in &m.entries {
                        if count >= limit {
                            break;
                        }
                        let both =
                            part(key, limit, counted).saturating_add(part(value, limit, counted));
                        count = count.saturating_add(both);
                    }
                }
                _ => {}
            }
            count.min(limit)
        }
        walk(self, limit, &mut rustc_hash::FxHashMap::default())
    }

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
        /// A value inside a list, tuple or map: a string as its literal,
        /// so that `["a, b"]` and `["a", "b"]` read apart.
        fn element(f: &mut fmt::Formatter<'_>, v: &Value) -> fmt::Result {
            match v {
                Value::Str(s) => {
                    write!(f, "\"")?;
                    for c in s.chars() {
                        match c {
                            '"' => write!(f, "\\\"")?,
                            '\\' => write!(f, "\\\\")?,
                            '\n' => write!(f, "\\n")?,
                            '\t' => write!(f, "\\t")?,
                            c => write!(f, "{c}")?,
                        }
                    }
                    write!(f, "\"")
                }
                v => write!(f, "{v}"),
            }
        }
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
                element(f, v)?;
            }
            write!(f, "{close}")
        }
        match self {
            Value::Unit => write!(f, "()"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Big(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(s) => write!(f, "{s}"),
            Value::Range(a, b) => write!(f, "{a}..{b}"),
            Value::List(items) => seq(f, items, "[", "]"),
            Value::Tuple(items) => seq(f, items, "(", ")"),
            Value::Pair(a, b) => write!(f, "({a}, {b})"),
            Value::Map(m) => {
                write!(f, "{{")?;
                for (i, (k, v)) in m.entries.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    element(f, k)?;
                    write!(f, ": ")?;
                    element(f, v)?;
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

#[cfg(test)]
mod tests {
    use super::Value;
    use std::rc::Rc;

    /// `str` of a list or tuple writes the strings in it as literals, so
    /// that `["a, b"]` and `["a", "b"]` read apart; a string alone is its
    /// text.
    #[test]
    fn strings_inside_containers_are_written_as_literals() {
        let s = |t: &str| Value::Str(Rc::from(t));
        assert_eq!(s("a").to_string(), "a");
        let list = Value::List(Rc::from(vec![s("a, b"), s("q\"\n\\")]));
        assert_eq!(list.to_string(), r#"["a, b", "q\"\n\\"]"#);
        let tuple = Value::Tuple(Rc::from(vec![s("a"), Value::Int(1), s("b")]));
        assert_eq!(tuple.to_string(), r#"("a", 1, "b")"#);
    }
}

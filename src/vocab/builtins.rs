//! The builtin functions and methods, declared once.
//!
//! `builtin_table!` is the one list of them. It hands that list to a macro
//! of the caller's choosing, which turns it into what the caller needs: here
//! the `Builtin` enum and the signatures the type checker checks calls
//! against; in `eval/args.rs` a typed argument record per parameter list and
//! the dispatch enum the evaluator matches on. A parameter is named, typed
//! and defaulted in one place, and every stage reads it by that name.
//!
//! The table has two parts. `shapes` are parameter lists, each with a
//! name; `builtins` name a shape each, so builtins that take the same
//! arguments (`copy`, `copy_packets`, `unpack_packets`, ...) share the code
//! that reads them. A parameter is `name: type`, required, or
//! `name: type = default`, where the default is an integer, a boolean, a
//! named constant or `absent` (may be left out; the evaluator sees `None`).
//! Types are written as in the language (`[chunk]` is a list of chunks).

use super::{Default, Param, Receiver, Type};

/// Calls `$then!` with the table of builtins (see the module's comment).
macro_rules! builtin_table {
    ($then:ident) => {
        $then! {
            shapes {
                OfRank(rank: int);
                Scratch(rank: int, size: int);
                Channel(dst_rank: int, src_rank: int);
                SwitchChannel(rank_list: [int], buffer_type: buffer_type);
                TbList(tb_list: [int]);
                Semaphore(rank: int, initial_value: int = 0);
                Collective(num_ranks: int, chunk_factor: int = 1, inplace: bool = false);
                TestCollective(num_ranks: int, input_size: int, output_size: int);
                AnyValue(value: any);
                TwoInts(a: wide_int, b: wide_int);
                Assert(condition: bool, message: str);
                // `tb` and `tb_group`: exactly one must be given.
                Transfer(dst_chunk: chunk, src_chunk: chunk, tb: int = absent,
                         tb_group: tb_group = absent);
                OneBlockTransfer(dst_chunk: chunk, src_chunk: chunk, tb: int);
                RankReduce(src_chunk: chunk, other_chunks: [chunk], tb: int = absent,
                           tb_group: tb_group = absent, dst_chunk: chunk = absent,
                           reduce_op: reduce_op = sum, packet: bool = false);
                ChannelReduce(local_src_chunk: chunk, remote_src_chunks: [chunk],
                              tb: int = absent, tb_group: tb_group = absent,
                              local_dst_chunk: chunk = absent, reduce_op: reduce_op = sum);
                RelaxableSync(tb: int, data_sync: sync_type = both, relaxed: bool = false);
                BlockSync(tb: int, data_sync: sync_type = both);
                SwitchReduce(rank: int, buffer_offset: int, size: int, dst_chunk: chunk,
                             tb: int, reduce_op: reduce_op = sum);
                ViewReduce(buffer_offset: int, size: int, dst_chunk: chunk, tb: int,
                           reduce_op: reduce_op = sum);
                SwitchBroadcast(rank: int, src_chunk: chunk, buffer_offset: int, size: int,
                                tb: int);
                ViewBroadcast(src_chunk: chunk, buffer_offset: int, size: int, tb: int);
            }
            builtins {
                Rank: Free "rank" OfRank -> rank,
                    "The rank with this id.";
                Scratch: Free "scratch" Scratch -> buffer,
                    "A new run of `size` chunks in the rank's scratch buffer.";
                MemoryChannel: Free "memory_channel" Channel -> memory_channel,
                    "A new memory channel from `src_rank` to `dst_rank`; a rank's k-th channel to a peer pairs with the peer's k-th channel back.";
                PortChannel: Free "port_channel" Channel -> port_channel,
                    "A new port (proxy) channel from `src_rank` to `dst_rank`.";
                SwitchChannel: Free "switch_channel" SwitchChannel -> switch_channel,
                    "An NVLS switch channel over these ranks' buffers of one type.";
                TbGroup: Free "tb_group" TbList -> tb_group,
                    "A group of thread blocks an operation is split over.";
                Semaphore: Free "semaphore" Semaphore -> semaphore,
                    "A semaphore on a rank, shared by its thread blocks.";
                AllGather: Free "allgather" Collective -> collective,
                    "AllGather over `num_ranks` ranks: input c chunks, output N*c.";
                AllReduce: Free "allreduce" Collective -> collective,
                    "AllReduce over `num_ranks` ranks: input and output N*c chunks.";
                ReduceScatter: Free "reducescatter" Collective -> collective,
                    "ReduceScatter over `num_ranks` ranks: input N*c chunks, output c.";
                AllToAll: Free "alltoall" Collective -> collective,
                    "AllToAll over `num_ranks` ranks: input and output N*c chunks.";
                SendRecv: Free "sendrecv" Collective -> collective,
                    "SendRecv over `num_ranks` ranks: input and output c chunks.";
                TestCollective: Free "test_collective" TestCollective -> collective,
                    "A collective with any buffer sizes, for tests.";
                Len: Free "len" AnyValue -> int,
                    "The length of a list, tuple, map, range or string.";
                Min: Free "min" TwoInts -> int,
                    "The smaller of two integers.";
                Max: Free "max" TwoInts -> int,
                    "The larger of two integers.";
                Str: Free "str" AnyValue -> str,
                    "A value as text.";
                // A program's own checks of its params, as a Python DSL
                // program raises (a message size too small for the number
                // of instances, say).
                Assert: Free "assert" Assert -> unit,
                    "Stops compilation with `message` at the call when `condition` is false.";
                RankCopy: Rank "copy" Transfer -> unit,
                    "Copies `src_chunk` to `dst_chunk` on this rank.";
                RankCopyPackets: Rank "copy_packets" Transfer -> unit,
                    "Copies `src_chunk` as LL packets into `dst_chunk` (in scratch).";
                RankUnpackPackets: Rank "unpack_packets" Transfer -> unit,
                    "Unpacks LL packets from `src_chunk` (in scratch) into `dst_chunk`.";
                RankReduce: Rank "reduce" RankReduce -> unit,
                    "Reduces `other_chunks` into `src_chunk` (or into `dst_chunk`).";
                RankBarrier: Rank "barrier" TbList -> unit,
                    "Synchronises these thread blocks of the rank.";
                MemSignal: MemoryChannel "signal" RelaxableSync -> unit,
                    "Signals the peer's paired channel.";
                MemWait: MemoryChannel "wait" RelaxableSync -> unit,
                    "Waits for a signal from the peer's paired channel.";
                MemGet: MemoryChannel "get" Transfer -> unit,
                    "Reads `src_chunk` from the peer into `dst_chunk` here.";
                MemPut: MemoryChannel "put" Transfer -> unit,
                    "Writes `src_chunk` here into `dst_chunk` on the peer.";
                MemPutPackets: MemoryChannel "put_packets" Transfer -> unit,
                    "Writes `src_chunk` as LL packets into the peer's scratch `dst_chunk`.";
                MemReadPutPackets: MemoryChannel "read_put_packets" Transfer -> unit,
                    "Forwards LL packets from scratch `src_chunk` to the peer's scratch `dst_chunk`.";
                MemReduce: MemoryChannel "reduce" ChannelReduce -> unit,
                    "Reduces the peer's `remote_src_chunks` into `local_src_chunk` (or `local_dst_chunk`).";
                PortSignal: PortChannel "signal" BlockSync -> unit,
                    "Signals the peer through the proxy.";
                PortWait: PortChannel "wait" BlockSync -> unit,
                    "Waits for a signal from the peer.";
                PortFlush: PortChannel "flush" BlockSync -> unit,
                    "Waits until this channel's puts have left the source buffer.";
                PortPut: PortChannel "put" OneBlockTransfer -> unit,
                    "Writes `src_chunk` here into `dst_chunk` on the peer, through the proxy.";
                PortPutWithSignal: PortChannel "put_with_signal" OneBlockTransfer -> unit,
                    "A put followed by a signal, in one proxy request.";
                PortPutWithSignalAndFlush: PortChannel "put_with_signal_and_flush" OneBlockTransfer -> unit,
                    "A put, a signal and a flush, in one proxy request.";
                PortPutPackets: PortChannel "put_packets" OneBlockTransfer -> unit,
                    "Writes `src_chunk` as LL packets into the peer's scratch `dst_chunk`.";
                // The one port transfer the DSL also splits over a thread block group.
                PortReadPutPackets: PortChannel "read_put_packets" Transfer -> unit,
                    "Forwards LL packets from scratch `src_chunk` to the peer's scratch `dst_chunk`.";
                SwitchAtRank: SwitchChannel "at_rank" OfRank -> switch_view,
                    "The switch channel as seen from one of its ranks.";
                SwitchReduce: SwitchChannel "reduce" SwitchReduce -> unit,
                    "Rank `rank` reduces the members' buffers over the switch into `dst_chunk`.";
                SwitchBroadcast: SwitchChannel "broadcast" SwitchBroadcast -> unit,
                    "Rank `rank` stores `src_chunk` into every member's buffer over the switch.";
                SwitchBroadcastPackets: SwitchChannel "broadcast_packets" SwitchBroadcast -> unit,
                    "Rank `rank` stores `src_chunk` as LL packets into every member's buffer.";
                ViewReduce: SwitchView "reduce" ViewReduce -> unit,
                    "Reduces the members' buffers over the switch into `dst_chunk`.";
                ViewBroadcast: SwitchView "broadcast" ViewBroadcast -> unit,
                    "Stores `src_chunk` into every member's buffer over the switch.";
                ViewBroadcastPackets: SwitchView "broadcast_packets" ViewBroadcast -> unit,
                    "Stores `src_chunk` as LL packets into every member's buffer.";
                // As in the reference DSL, acquire and release sync the
                // thread block on both sides by default.
                SemAcquire: Semaphore "acquire" BlockSync -> unit,
                    "Waits until the semaphore is above zero, then decrements it.";
                SemRelease: Semaphore "release" BlockSync -> unit,
                    "Increments the semaphore.";
            }
        }
    };
}
pub(crate) use builtin_table;

/// The type a table's type word stands for.
macro_rules! vocab_type {
    ([$item:tt]) => {
        Type::List(Box::new(vocab_type!($item)))
    };
    (unit) => {
        Type::Unit
    };
    (any) => {
        Type::Any
    };
    (int) => {
        Type::Int
    };
    // An int read in full, past i64::MAX too (the Rust side's i128).
    (wide_int) => {
        Type::Int
    };
    (bool) => {
        Type::Bool
    };
    (str) => {
        Type::Str
    };
    (rank) => {
        Type::Rank
    };
    (buffer) => {
        Type::Buffer
    };
    (chunk) => {
        Type::Chunk
    };
    (memory_channel) => {
        Type::MemoryChannel
    };
    (port_channel) => {
        Type::PortChannel
    };
    (switch_channel) => {
        Type::SwitchChannel
    };
    (switch_view) => {
        Type::SwitchView
    };
    (tb_group) => {
        Type::TbGroup
    };
    (semaphore) => {
        Type::Semaphore
    };
    (collective) => {
        Type::Collective
    };
    (reduce_op) => {
        Type::ReduceOp
    };
    (sync_type) => {
        Type::SyncType
    };
    (buffer_type) => {
        Type::BufferType
    };
}

/// A parameter's `Default` from the table's `= ...` (none: required).
macro_rules! vocab_default {
    ($ty:tt) => {
        Default::Required
    };
    ($ty:tt absent) => {
        Default::Absent
    };
    (int $value:literal) => {
        Default::Int($value)
    };
    (bool $value:literal) => {
        Default::Bool($value)
    };
    ($ty:tt $constant:ident) => {
        Default::Const(stringify!($constant))
    };
}

/// The vocabulary's side of the table: `Builtin`, and the signatures.
macro_rules! declare_signatures {
    (
        shapes { $($shape:ident ( $($param:ident : $ty:tt $(= $default:tt)?),* $(,)? );)* }
        builtins { $($builtin:ident : $receiver:ident $name:literal $uses:ident -> $ret:tt, $doc:literal;)* }
    ) => {
        /// Every builtin function and method.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Builtin {
            $($builtin,)*
        }

        /// The parameter lists, by shape name.
        #[allow(non_snake_case)]
        struct Shapes {
            $($shape: Vec<Param>,)*
        }

        impl Shapes {
            fn new() -> Shapes {
                Shapes {
                    $($shape: vec![$(Param {
                        name: stringify!($param),
                        ty: vocab_type!($ty),
                        default: vocab_default!($ty $($default)?),
                    }),*],)*
                }
            }
        }

        /// The builtin `name` called on `receiver`, if there is one.
        pub fn signature(receiver: Receiver, name: &str) -> Option<Signature> {
            signatures()
                .into_iter()
                .find(|s| s.receiver == receiver && s.name == name)
        }

        /// The table of all builtins.
        pub fn signatures() -> Vec<Signature> {
            let shapes = Shapes::new();
            vec![$(Signature {
                builtin: Builtin::$builtin,
                receiver: Receiver::$receiver,
                name: $name,
                params: shapes.$uses.clone(),
                ret: vocab_type!($ret),
                doc: $doc,
            },)*]
        }
    };
}

builtin_table!(declare_signatures);

/// A builtin's name, receiver, parameters and result.
#[derive(Debug)]
pub struct Signature {
    pub builtin: Builtin,
    pub receiver: Receiver,
    pub name: &'static str,
    pub params: Vec<Param>,
    pub ret: Type,
    /// One line for a reader: what the builtin does.
    pub doc: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call finds one builtin by its receiver and name, and reads one
    /// argument per parameter name.
    #[test]
    fn builtins_and_their_parameters_are_unambiguous() {
        let sigs = signatures();
        let mut seen = std::collections::HashSet::new();
        for sig in &sigs {
            assert!(
                seen.insert((sig.receiver, sig.name)),
                "{:?} `{}` is declared twice",
                sig.receiver,
                sig.name
            );
            let mut names: Vec<&str> = sig.params.iter().map(|p| p.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(
                names.len(),
                sig.params.len(),
                "`{}` repeats a parameter",
                sig.name
            );
            assert!(
                sig.doc.ends_with('.'),
                "`{}` needs a line of documentation",
                sig.name
            );
        }
    }

    /// An op on a thread block group takes `tb` or `tb_group`: both may be
    /// left out (the evaluator requires exactly one).
    #[test]
    fn tb_and_tb_group_are_optional_together() {
        for sig in signatures() {
            let default_of = |name| {
                sig.params
                    .iter()
                    .find(|p| p.name == name)
                    .map(|p| p.default)
            };
            if default_of("tb_group").is_some() {
                assert_eq!(default_of("tb"), Some(Default::Absent), "`{}`", sig.name);
                assert_eq!(
                    default_of("tb_group"),
                    Some(Default::Absent),
                    "`{}`",
                    sig.name
                );
            }
        }
    }
}

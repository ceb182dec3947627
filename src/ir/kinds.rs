//! The kinds a plan names: buffers, channels, data syncs, reduce
//! operations, protocols, replication policies and the ops themselves
//! (`OpName`, with the JSON names the executor reads).

/// Which of a rank's buffers a chunk lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferKind {
    Input,
    Output,
    Scratch,
}

impl BufferKind {
    /// The one-letter code the executor reads.
    pub const fn code(self) -> &'static str {
        match self {
            BufferKind::Input => "i",
            BufferKind::Output => "o",
            BufferKind::Scratch => "s",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BufferKind::Input => "input",
            BufferKind::Output => "output",
            BufferKind::Scratch => "scratch",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ChannelKind {
    Memory,
    Port,
    Switch,
}

impl ChannelKind {
    pub const fn name(self) -> &'static str {
        match self {
            ChannelKind::Memory => "memory",
            ChannelKind::Port => "port",
            ChannelKind::Switch => "switch",
        }
    }
}

/// Where a thread block synchronises its own threads around an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct DataSync {
    pub before: bool,
    pub after: bool,
}

impl DataSync {
    pub const NONE: DataSync = DataSync {
        before: false,
        after: false,
    };
    pub const BOTH: DataSync = DataSync {
        before: true,
        after: true,
    };
    pub const BEFORE: DataSync = DataSync {
        before: true,
        after: false,
    };
    pub const AFTER: DataSync = DataSync {
        before: false,
        after: true,
    };

    pub fn union(self, other: DataSync) -> DataSync {
        DataSync {
            before: self.before || other.before,
            after: self.after || other.after,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Min,
    Max,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    Simple,
    LL,
}

impl Protocol {
    /// The name as plans and programs spell it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "Simple",
            Protocol::LL => "LL",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplicationPolicy {
    Interleaved,
    None,
}

/// Declares `OpName` from one table of variants and JSON spellings, so the
/// enum, its spelling and the reverse lookup cannot drift apart.
macro_rules! op_names {
    ($($variant:ident => $json:literal,)*) => {
        /// The op names of the MSCCL++ executor (SEMANTICS.md §2.7).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum OpName {
            $($variant,)*
        }

        impl OpName {
            /// Every op with its JSON spelling.
            pub const NAMES: &'static [(&'static str, OpName)] = &[$(($json, OpName::$variant),)*];

            /// The name as the JSON plan spells it.
            pub fn json(self) -> &'static str {
                match self {
                    $(OpName::$variant => $json,)*
                }
            }
        }
    };
}

op_names! {
    Nop => "nop",
    Barrier => "barrier",
    Signal => "signal",
    Wait => "wait",
    RelaxedSignal => "rlxsignal",
    RelaxedWait => "rlxwait",
    Flush => "flush",
    Put => "put",
    PutWithSignal => "pws",
    PutWithSignalAndFlush => "pwsf",
    PutPackets => "ppkt",
    ReadPutPackets => "rppkt",
    Get => "get",
    Copy => "copy",
    CopyPackets => "cpkt",
    UnpackPackets => "upkt",
    Reduce => "re",
    ReduceSend => "res",
    ReadReduce => "rre",
    ReadReduceSend => "rres",
    ReducePackets => "repkt",
    ReduceSendPackets => "respkt",
    ReduceCopyPackets => "recpkt",
    ReduceCopySendPackets => "recspkt",
    GroupLoadReduce => "glre",
    GroupLoadReduceStore => "glres",
    GroupStore => "gstore",
    GroupStorePackets => "gstorepkt",
    SemAcquire => "sem_acquire",
    SemRelease => "sem_release",
    Pipeline => "pipeline",
}

impl OpName {
    pub fn is_signal(self) -> bool {
        matches!(self, OpName::Signal | OpName::RelaxedSignal)
    }

    pub fn is_wait(self) -> bool {
        matches!(self, OpName::Wait | OpName::RelaxedWait)
    }

    /// Whether the op moves no data of its own: synchronization, and the
    /// pipeline that holds other ops.
    pub fn moves_no_data(self) -> bool {
        use OpName::*;
        matches!(
            self,
            Nop | Barrier
                | Signal
                | Wait
                | RelaxedSignal
                | RelaxedWait
                | Flush
                | SemAcquire
                | SemRelease
                | Pipeline
        )
    }

    /// Whether the op takes data from its `src_buff` to its `dst_buff`, and
    /// so needs at least one of each. (A switch reduce that no broadcast
    /// follows, `glre`, names its chunks otherwise.)
    pub fn needs_buffers(self) -> bool {
        !self.moves_no_data() && self != OpName::GroupLoadReduce
    }

    /// Whether the op reads or writes packets (LL protocol data with flags).
    pub fn is_packet(self) -> bool {
        use OpName::*;
        matches!(
            self,
            PutPackets
                | ReadPutPackets
                | CopyPackets
                | UnpackPackets
                | ReducePackets
                | ReduceSendPackets
                | ReduceCopyPackets
                | ReduceCopySendPackets
                | GroupStorePackets
        )
    }

    /// Whether, inside a pipeline, the executor runs the op on each
    /// iteration's piece of its range (offset `i * unit_size`): the ops
    /// that move data other than by packets. The others (synchronization,
    /// packet ops) run the same every iteration (SEMANTICS.md §3.5).
    pub fn honours_pipeline_offsets(self) -> bool {
        !self.moves_no_data() && !self.is_packet()
    }

    /// Whether the op combines its sources with a reduce operation.
    pub fn is_reduction(self) -> bool {
        use OpName::*;
        matches!(
            self,
            Reduce
                | ReduceSend
                | ReadReduce
                | ReadReduceSend
                | ReducePackets
                | ReduceSendPackets
                | ReduceCopyPackets
                | ReduceCopySendPackets
                | GroupLoadReduce
                | GroupLoadReduceStore
        )
    }
}

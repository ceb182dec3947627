//! The kinds of problem msclc reports, each with a stable code that
//! docs/errors.md explains with an example and its fix. A code names a
//! kind, not a message: messages may be reworded, codes stay.

macro_rules! codes {
    ($($variant:ident $id:literal: $title:literal;)*) => {
        /// The kind of a diagnostic (`error[E0103]`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($variant,)*
        }

        impl Code {
            /// Every code, in the order docs/errors.md lists them.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// `E0103`: an E for errors, a W for warnings.
            pub fn id(self) -> &'static str {
                match self {
                    $(Code::$variant => $id,)*
                }
            }

            /// 2 when msclc could not do what was asked (E08xx), else 1:
            /// the program or plan is wrong.
            pub fn exit_status(self) -> u8 {
                if self.id().starts_with("E08") {
                    2
                } else {
                    1
                }
            }

            /// What kind of problem it is, in a few words.
            pub fn title(self) -> &'static str {
                match self {
                    $(Code::$variant => $title,)*
                }
            }
        }
    };
}

codes! {
    // The text.
    Syntax "E0001": "the text does not parse";
    Literal "E0002": "a malformed literal";
    Nesting "E0003": "nested too deep";
    Import "E0004": "an import that cannot be loaded";
    // Names and types.
    UnknownName "E0101": "a name, type or function that does not exist";
    UseBeforeLet "E0102": "a variable used before its `let` ran";
    TypeMismatch "E0103": "a value of the wrong type";
    Arguments "E0104": "arguments that do not fit the parameters";
    NoSuchMember "E0105": "no such method or field";
    Misplaced "E0106": "a definition or statement where it cannot be";
    ParamValues "E0107": "a param's values that are not a list of literals";
    CommentDivision "W0108": "a `//` comment that reads as the rest of a division";
    // Values.
    Index "E0201": "an index or key that is not there";
    Arithmetic "E0202": "integer overflow, division by zero or a bad shift";
    Assertion "E0203": "the program's own assertion fails";
    // The collective.
    Program "E0301": "the `program` block is missing or wrong";
    OutOfRange "E0302": "a rank, thread block or count outside its range";
    ChunkBounds "E0303": "a chunk outside its buffer";
    ChunkSizes "E0304": "chunks of different sizes that must match";
    WrongPlace "E0305": "a chunk or rank the operation cannot use";
    ThreadBlock "E0306": "no thread block, or two ways to give one";
    Pipeline "E0307": "a pipeline that cannot be";
    SignalWait "E0308": "signals without waits, or waits without signals";
    PlanFile "E0309": "a JSON plan that is not a plan";
    // What msclc allows.
    Limit "E0401": "more than msclc allows";
    // Warnings: the plan is written, and will not run as meant.
    ChannelPair "W0501": "a signal its wait will never see";
    ExecutorLimit "W0502": "more than the MSCCL++ executor holds";
    ExecutorBug "W0503": "a plan that meets a bug of today's executor";
    Residency "W0504": "more thread blocks than the GPU holds at once";
    NodeMemoryChannel "W0505": "a memory channel between nodes of the topology";
    SemaphoreBalance "W0506": "a semaphore a launch does not leave as it found it";
    UnknownOp "W0507": "an op the MSCCL++ executor does not run";
    EmptySizeRange "W0508": "a message size range that holds no size";
    PipelineCoverage "W0509": "a pipeline that covers fewer chunks than its ops move";
    PortPacketSource "W0510": "a port channel's packet put from a buffer that holds no packets";
    PipelineOverrun "W0511": "a pipeline that runs past its ops' ranges";
    // What running the plan finds.
    WrongResult "E0601": "a wrong result";
    Deadlock "E0602": "a deadlock";
    DataRace "E0603": "a data race";
    KernelStuck "E0604": "a kernel that stopped waiting on the GPU";
    // The CUDA back end.
    NoCudaForm "E0605": "a plan the CUDA back end cannot write";
    NoCandidate "E0606": "no candidate of `msclc tune` that verifies at a size";
    // What msclc could not do (exit status 2).
    Unreadable "E0801": "a file msclc cannot read or write";
    Define "E0802": "a `-D` that sets no param";
    Options "E0803": "options that do not go together";
    Ranks "E0804": "no param gives the `--nranks` asked";
    Memory "E0805": "a simulation larger than `--max-memory`";
    Device "E0806": "no GPU, CUDA driver or NVRTC to run on";
    Topology "E0807": "a topology `--timing` cannot use";
    NoSize "E0808": "no message size `msclc run` or `sim --timing` can run the plan at";
    NotOurs "E0809": "a folder holding files msclc did not write, which it would replace or remove";
    OutOfMemory "E0810": "more memory than the machine lets msclc have";
    // A bug in msclc.
    Internal "E0999": "an internal error (a bug in msclc: please report it)";
}

impl Code {
    /// Whether a warning of this code means the MSCCL++ executor does not
    /// run the plan as written: a limit crossed (it refuses the plan, or
    /// overwrites memory), an op it does not know, or a pipeline it runs
    /// past its ops' ranges.
    pub fn executor_refuses(self) -> bool {
        matches!(
            self,
            Code::ExecutorLimit | Code::UnknownOp | Code::PipelineOverrun
        )
    }

    /// Whether a warning of this code means the MSCCL++ executor does not
    /// run the plan as the simulator ran it: it refuses it
    /// ([`Code::executor_refuses`]), meets one of its bugs (it sums where
    /// the plan takes the max, its `flush` does nothing, ...), or hangs a
    /// later launch on a semaphore a launch runs down. `msclc sim` says so
    /// in the verdict line of a plan that verifies, the line `--quiet`
    /// keeps.
    pub fn executor_runs_otherwise(self) -> bool {
        self.executor_refuses() || matches!(self, Code::ExecutorBug | Code::SemaphoreBalance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            let id = code.id();
            assert!(seen.insert(id), "{id} twice");
            assert!(
                id.len() == 5
                    && (id.starts_with('E') || id.starts_with('W'))
                    && id[1..].chars().all(|c| c.is_ascii_digit()),
                "{id}"
            );
            assert!(!code.title().is_empty());
        }
    }
}

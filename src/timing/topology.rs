//! The machines a plan's time is predicted for: how ranks map to GPUs and
//! nodes, how fast each resource moves bytes, and how long each kind of
//! step takes to be seen by another GPU. Built-ins for H100 systems, or a
//! JSON file that starts from one and changes what differs.
//!
//! Every constant says where it comes from; docs/timing.md has the table.

use serde_json::{Map, Value};

/// What one H100 block moves of raw data read and packets written while
/// they fit the L2, in GB/s (`packet_block`, measured): past the L2, the
/// memory's share of a packet op costs this over `packet_block_past_l2`
/// more (`engine::time`).
pub const H100_PACKET_BLOCK: f64 = 80.0;

/// One machine model.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub name: String,
    /// GPUs in one node: ranks `n*k .. n*(k+1)` share node `k`'s NVSwitch.
    pub gpus_per_node: u32,
    /// Every rank on one GPU, as `msclc run` runs them: a peer's buffer is
    /// the same GPU's memory, and all ranks share its SMs and bandwidth.
    pub one_gpu: bool,
    /// Whether the NVSwitch does multimem (NVLS) loads and stores.
    pub nvls: bool,
    /// Streaming multiprocessors per GPU: blocks beyond these share SMs.
    pub sms: u32,
    /// The GPU's L2 cache, MB (10^6 bytes): packets move at one pace while
    /// the buffers of a GPU's ranks fit in it, and at another past it.
    pub l2_mb: f64,
    pub bandwidth: Bandwidth,
    pub latency: Latency,
}

/// GB/s (10^9 bytes per second).
#[derive(Debug, Clone, PartialEq)]
pub struct Bandwidth {
    /// Device memory, bytes read plus bytes written.
    pub memory: f64,
    /// What one thread block (one SM) copies, bytes read plus written: a
    /// block cannot fill a link alone.
    pub block: f64,
    /// What one block moves, bytes read plus written, in an op that
    /// reduces (two or more loads for each store: more accesses in flight
    /// than a copy's one).
    pub reduce_block: f64,
    /// What one block moves, bytes read plus written, in an op that reads
    /// or writes LL packets (16-byte volatile accesses carrying 8 bytes
    /// with their flags), while the buffers fit in the L2 (`l2_mb`).
    pub packet_block: f64,
    /// The same once they do not.
    pub packet_block_past_l2: f64,
    /// NVLink out of one GPU, and into it (each direction).
    pub nvlink: f64,
    /// The network out of one GPU, and into it: its own NIC.
    pub nic: f64,
}

/// Microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    /// From the launch until every block runs its first op.
    pub launch: f64,
    /// The least time from one launch to the next when they are issued one
    /// by one, as nccl-tests and `msclc run` time them: the host's cost of
    /// issuing a launch, which a short kernel does not hide (0: none).
    pub launch_interval: f64,
    /// What any op costs its block beyond moving bytes: decode, index
    /// arithmetic, the block's own synchronisation.
    pub op: f64,
    /// What an op that moves data costs beyond that: its first loads come
    /// back from memory before its first stores go out.
    pub memory: f64,
    /// A store to another GPU of the node (a signal, a packet, a put's
    /// last bytes) until its reader sees it; a load from one, back.
    pub nvlink: f64,
    /// The same for two ranks on one GPU (a flag in its own memory).
    pub local: f64,
    /// A port channel request: from the block's FIFO push until the host
    /// proxy starts the transfer, and from the transfer's end until the
    /// block's flush sees it.
    pub proxy: f64,
    /// An RDMA write to another node until it lands.
    pub nic: f64,
    /// A barrier of a rank's blocks, from the last arrival.
    pub barrier: f64,
    /// A multimem load-reduce or store through the NVSwitch (NVLS), over
    /// and above an NVLink access.
    pub multimem: f64,
}

/// How two ranks reach each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// The same GPU.
    Local,
    /// Two GPUs of one node, through NVLink and the NVSwitch.
    NvLink,
    /// Two nodes, through their NICs.
    Network,
}

impl Topology {
    /// The GPU `rank` runs on.
    pub fn gpu(&self, rank: u32) -> u32 {
        if self.one_gpu {
            0
        } else {
            rank
        }
    }

    pub fn link(&self, from: u32, to: u32) -> Link {
        if self.gpu(from) == self.gpu(to) {
            Link::Local
        } else if from / self.gpus_per_node.max(1) == to / self.gpus_per_node.max(1) {
            Link::NvLink
        } else {
            Link::Network
        }
    }

    /// How long a store from `from` takes to be seen at `to`.
    pub fn latency(&self, from: u32, to: u32) -> f64 {
        match self.link(from, to) {
            Link::Local => self.latency.local,
            Link::NvLink => self.latency.nvlink,
            Link::Network => self.latency.nic,
        }
    }
}

/// The built-in topologies, by name.
pub const BUILT_IN: &[&str] = &["h100-nvlink", "h100-nvls", "h100-ib", "emulated-h100"];

/// A built-in topology (`BUILT_IN`), by name.
pub fn built_in(name: &str) -> Option<Topology> {
    let mut t = h100(name);
    match name {
        "h100-nvlink" => {}
        "h100-nvls" => t.nvls = true,
        "h100-ib" => {}
        "emulated-h100" => emulated_h100(&mut t),
        _ => return None,
    }
    Some(t)
}

/// `msclc run` on one H100 (all ranks on GPU 0), measured on an H100 80GB
/// HBM3 (docs/timing.md, "Measured on the machine"): what differs from a
/// node of eight.
fn emulated_h100(t: &mut Topology) {
    t.one_gpu = true;
    // An empty kernel in a CUDA graph, 0.77-0.94 us a launch (1-132
    // blocks; micro-launch-and-copy.txt), plus what issuing launches one
    // by one adds to a kernel that outlasts the issue: 0.92-1.09 us
    // (benches/results' semaphore, barrier, signal_wait and put tests
    // against the same commands with --graph; docs/timing.md).
    t.latency.launch = 1.85;
    // The unit tests whose kernels are shortest (copy, reduce, copy_packet,
    // tbg_copy at 1-8 KB: 1.5-2.7 us a launch in a graph) take 3.35-4.56 us
    // a launch one by one, median 3.7: the host issues no faster.
    t.latency.launch_interval = 3.7;
    // The op cost and a flag's latency between blocks of one GPU, fitted
    // (least squares of the log error) to the unit-test tables of
    // benches/results alone, the sync-only all-pairs tables among them;
    // the collectives' tables judge them (docs/timing.md).
    t.latency.op = 0.4;
    t.latency.local = 0.6;
    // Fitted with op and local to the unit-test tables measured with
    // --graph (the kernel alone: the launch interval hides a short kernel
    // one by one), which give op and local as the tables above do.
    t.latency.memory = 0.75;
    // The same: one block of 512 or 1024 threads copies 96.5-97.0 GB/s
    // (read plus write), whatever the unrolling.
    t.bandwidth.block = 97.0;
    // The same: 132 blocks of 1024 threads copy 2780-2796 GB/s (read plus
    // write); a device-to-device copy reaches 2.98-3.03 TB/s
    // (torch-copy-and-allreduce.txt).
    t.bandwidth.memory = 2790.0;
    // benches/results/u_reduce.txt: reduce_test, one block of 1024 threads
    // reducing two 32 MiB chunks into a third, 845.8 us for 96 MiB read
    // plus written: 119 GB/s (114-118 GB/s at 4-16 MB).
    t.bandwidth.reduce_block = 119.0;
}

/// An HGX/DGX H100 node (8 H100 SXM5 GPUs on NVSwitch gen 3, NVLink 4,
/// one ConnectX-7 400 Gb/s NIC per GPU). Sources, as docs/timing.md cites
/// them in full:
fn h100(name: &str) -> Topology {
    Topology {
        name: name.to_string(),
        // DGX H100: 8 GPUs per node.
        gpus_per_node: 8,
        one_gpu: false,
        nvls: false,
        // H100 SXM5 datasheet: 132 SMs, 50 MB of L2.
        sms: 132,
        l2_mb: 50.0,
        bandwidth: Bandwidth {
            // CUDA's bandwidthTest, device to device on H100 SXM5, counting
            // read plus write: 2.3-2.5 TB/s past the L2's reach (the
            // datasheet's 3.35 TB/s is the peak).
            memory: 2400.0,
            // NCCL's per-channel cap for Hopper (tuning.cc,
            // perChMaxRingLL128Bws, 36.7 GB/s; a channel is one block),
            // bytes in and out: twice that.
            block: 73.4,
            // Not measured apart from a copy's on this machine: the same.
            reduce_block: 73.4,
            // Measured on an H100 80GB HBM3 (benches/results:
            // copy_packet_test and put_packet_test, one block of 1024
            // threads): raw data read plus packets written at 77-82 GB/s
            // while input and packets fit the L2 (1-8 MB of data) ...
            packet_block: H100_PACKET_BLOCK,
            // ... and 57-60 GB/s past it (32-64 MB).
            packet_block_past_l2: 60.0,
            // Measured one-way peer-to-peer copy between two H100s,
            // 371-377 GB/s (NVIDIA/nccl issue #1264); the datasheet's
            // 450 GB/s per direction is the signalling rate.
            nvlink: 375.0,
            // ConnectX-7 at 400 Gb/s is 50 GB/s; NVIDIA's figure for NCCL
            // over one is 46-48 GB/s.
            nic: 47.0,
        },
        latency: Latency {
            // An 8-byte allreduce takes about 2.3 us end to end on H800 and
            // H200 (NVIDIA/nccl issue #1940): a launch costs less.
            launch: 2.0,
            // Not modelled: what the executor's host issues between
            // launches was not measured on a cluster.
            launch_interval: 0.0,
            // Assumed: an op's decode, index arithmetic and __syncthreads.
            op: 0.1,
            // Not modelled apart from `op` on a cluster (measured on one
            // GPU only: emulated_h100).
            memory: 0.0,
            // NCCL's hwLat for an NVLink step with LL (tuning.cc): 0.6 us.
            nvlink: 0.6,
            // Assumed: a flag in the GPU's own L2, half an NVLink step.
            local: 0.3,
            // MSCCL++'s port channel takes ~20.5 us for a 1 KB round trip
            // where a memory channel takes 4.1-6.5 us: ~15 us more, over
            // two crossings of the proxy (request, then completion).
            proxy: 7.5,
            // NCCL's hwLat for a network step with LL (tuning.cc): 2.7 us.
            nic: 2.7,
            // Assumed: a barrier of a rank's blocks is an atomic counter in
            // L2 and a spin, about two local flag latencies.
            barrier: 0.6,
            // Assumed: one more hop, through the NVSwitch, per multimem
            // access (NCCL's NVLS latencies are per algorithm, not per op).
            multimem: 0.6,
        },
    }
}

/// Reads a topology from JSON text (docs/timing.md has the format): either
/// every field, or `"base": "<built-in>"` and the fields that differ.
pub fn from_json(name: &str, text: &str) -> Result<Topology, String> {
    // A byte-order mark some editors write, skipped as a plan's is.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(top) = value else {
        return Err("a topology is a JSON object".into());
    };
    let mut t = match top.get("base") {
        None => None,
        Some(Value::String(base)) => Some(built_in(base).ok_or_else(|| {
            format!(
                "`base`: `{base}` is not a built-in topology ({})",
                BUILT_IN.join(", ")
            )
        })?),
        Some(_) => return Err("`base` is the name of a built-in topology".into()),
    };
    let mut missing = Vec::new();
    let has_base = t.is_some();
    let base = t.take().unwrap_or_else(|| h100(name));
    let mut fields = Fields::new(&top, "", &mut missing, has_base);
    fields.known(&[
        "base",
        "name",
        "gpus_per_node",
        "one_gpu",
        "nvls",
        "sms",
        "l2_mb",
        "bandwidth_gbps",
        "latency_us",
    ])?;
    let gpus_per_node = fields.count("gpus_per_node", base.gpus_per_node)?;
    let one_gpu = fields.flag("one_gpu", base.one_gpu)?;
    let nvls = fields.flag("nvls", base.nvls)?;
    let sms = fields.count("sms", base.sms)?;
    let l2_mb = fields.at_least_zero("l2_mb", base.l2_mb)?;
    let bw_map = section(&top, "bandwidth_gbps")?;
    let mut bw = Fields::new(&bw_map, "bandwidth_gbps.", &mut missing, has_base);
    bw.known(&[
        "memory",
        "block",
        "reduce_block",
        "packet_block",
        "packet_block_past_l2",
        "nvlink",
        "nic",
    ])?;
    let b = &base.bandwidth;
    let bandwidth = Bandwidth {
        memory: bw.positive("memory", b.memory)?,
        block: bw.positive("block", b.block)?,
        reduce_block: bw.positive("reduce_block", b.reduce_block)?,
        packet_block: bw.positive("packet_block", b.packet_block)?,
        packet_block_past_l2: bw.positive("packet_block_past_l2", b.packet_block_past_l2)?,
        nvlink: bw.positive("nvlink", b.nvlink)?,
        nic: bw.positive("nic", b.nic)?,
    };
    let lat_map = section(&top, "latency_us")?;
    let mut lat = Fields::new(&lat_map, "latency_us.", &mut missing, has_base);
    lat.known(&[
        "launch",
        "launch_interval",
        "op",
        "memory",
        "nvlink",
        "local",
        "proxy",
        "nic",
        "barrier",
        "multimem",
    ])?;
    let l = &base.latency;
    // Every collective takes a launch at least: with none, a plan of
    // synchronization only would take no time, and no bandwidth be had.
    // (From a picosecond: a time of less has no bandwidth to print.)
    let launch = lat.at_least_zero("launch", l.launch)?;
    if launch < 1e-6 {
        return Err(
            "`latency_us.launch` must be at least 0.000001 (every collective takes a launch)"
                .into(),
        );
    }
    let latency = Latency {
        launch,
        launch_interval: lat.added_later("launch_interval", l.launch_interval)?,
        op: lat.at_least_zero("op", l.op)?,
        memory: lat.added_later("memory", l.memory)?,
        nvlink: lat.at_least_zero("nvlink", l.nvlink)?,
        local: lat.at_least_zero("local", l.local)?,
        proxy: lat.at_least_zero("proxy", l.proxy)?,
        nic: lat.at_least_zero("nic", l.nic)?,
        barrier: lat.at_least_zero("barrier", l.barrier)?,
        multimem: lat.at_least_zero("multimem", l.multimem)?,
    };
    let name = match top.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("`name` is a string".into()),
        None => name.to_string(),
    };
    // (It heads each table, a comment line: a line break or a terminal's
    // escape would break the table or the terminal.)
    if name.trim().is_empty() {
        return Err("`name` is empty: give the machine a name (it heads each table), or leave it out for the file's".into());
    }
    if name
        .chars()
        .any(|c| c.is_control() || crate::diag::shown::hidden(c))
    {
        return Err(format!(
            "the name `{}` holds a control character or one a terminal does not show (a bidirectional override, a zero-width space): give a `name` of printable text",
            crate::diag::escaped(&name)
        ));
    }
    let topology = Topology {
        name,
        gpus_per_node,
        one_gpu,
        nvls,
        sms,
        l2_mb,
        bandwidth,
        latency,
    };
    if !missing.is_empty() {
        return Err(format!(
            "missing {}; give them, or `\"base\": \"h100-nvlink\"` (or another built-in) to start from",
            missing.join(", ")
        ));
    }
    Ok(topology)
}

/// An object's section (`bandwidth_gbps`), empty when absent.
fn section(top: &Map<String, Value>, key: &str) -> Result<Map<String, Value>, String> {
    match top.get(key) {
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(format!("`{key}` is an object")),
        None => Ok(Map::new()),
    }
}

/// The bandwidths (GB/s) and latencies (µs) the model computes with:
/// within these, a time stays a normal number.
const MODELLED: std::ops::RangeInclusive<f64> = 1e-6..=1e9;

/// The fields of one JSON object, each with the value a base gives it;
/// without a base, the absent ones are noted as missing.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    /// `bandwidth_gbps.`, to name a missing field.
    prefix: &'a str,
    missing: &'a mut Vec<String>,
    has_base: bool,
}

impl<'a> Fields<'a> {
    fn new(
        map: &'a Map<String, Value>,
        prefix: &'a str,
        missing: &'a mut Vec<String>,
        has_base: bool,
    ) -> Fields<'a> {
        Fields {
            map,
            prefix,
            missing,
            has_base,
        }
    }

    /// `key` as the file names it: `bandwidth_gbps.nic`.
    fn named(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn absent(&mut self, key: &str) {
        if !self.has_base {
            self.missing.push(format!("`{}{key}`", self.prefix));
        }
    }

    /// Refuses a misspelt field rather than ignoring it.
    fn known(&self, names: &[&str]) -> Result<(), String> {
        match self.map.keys().find(|k| !names.contains(&k.as_str())) {
            Some(k) => Err(format!(
                "unknown field `{}` (known here: {})",
                self.named(k),
                names.join(", ")
            )),
            None => Ok(()),
        }
    }

    fn number(&mut self, key: &str) -> Result<Option<f64>, String> {
        match self.map.get(key) {
            None => {
                self.absent(key);
                Ok(None)
            }
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| format!("`{}` is a number", self.named(key))),
        }
    }

    /// A bandwidth (GB/s): more than 0, and within what a time computed
    /// from it can hold (a bandwidth of 1e-310 made an op's time overflow
    /// to nothing, 0 made it infinite).
    fn positive(&mut self, key: &str, base: f64) -> Result<f64, String> {
        match self.number(key)? {
            Some(x) if x <= 0.0 => Err(format!("`{}` must be more than 0", self.named(key))),
            Some(x) if !(MODELLED.contains(&x)) => Err(format!(
                "`{}` is {x:e}; the model takes {:e} to {:e}",
                self.named(key),
                MODELLED.start(),
                MODELLED.end()
            )),
            other => Ok(other.unwrap_or(base)),
        }
    }

    /// A latency (µs): 0 or more, and within what a time can hold.
    fn at_least_zero(&mut self, key: &str, base: f64) -> Result<f64, String> {
        match self.number(key)? {
            Some(x) if x < 0.0 => Err(format!("`{}` cannot be negative", self.named(key))),
            Some(x) if x > *MODELLED.end() => Err(format!(
                "`{}` is {x:e}; the model takes at most {:e}",
                self.named(key),
                MODELLED.end()
            )),
            other => Ok(other.unwrap_or(base)),
        }
    }

    /// A field that files written before it was added leave out, even
    /// without `base`: `base` (that of `h100`) when absent.
    fn added_later(&mut self, key: &str, base: f64) -> Result<f64, String> {
        if self.map.contains_key(key) {
            self.at_least_zero(key, base)
        } else {
            Ok(base)
        }
    }

    fn count(&mut self, key: &str, base: u32) -> Result<u32, String> {
        match self.number(key)? {
            Some(x) if x < 1.0 || x.fract() != 0.0 || x > 1e6 => Err(format!(
                "`{}` is a whole number from 1 to 1000000",
                self.named(key)
            )),
            Some(x) => Ok(x as u32),
            None => Ok(base),
        }
    }

    fn flag(&mut self, key: &str, base: bool) -> Result<bool, String> {
        match self.map.get(key) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("`{}` is true or false", self.named(key))),
            None => {
                self.absent(key);
                Ok(base)
            }
        }
    }
}

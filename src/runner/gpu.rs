//! Running a plan's kernel on the GPU through cudarc: every rank's buffers
//! in the memory of one device, one grid holding every rank's thread blocks.

use super::table::{Row, Table};
use super::{nvrtc, RunError, RunOptions};
use crate::back::cuda::{self, SyncLayout};
use crate::ir::Plan;
use crate::measure::workload::{Found, Workload};
use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    PushKernelArg,
};
use std::sync::Arc;

/// The kernel's one argument, laid out as the prelude's `MsclArgs`.
#[repr(C)]
#[derive(Clone, Copy)]
struct MsclArgs {
    bufs: u64,
    sync: u64,
    chunk: u64,
    soff: u64,
    budget: u64,
    flag: u32,
}

// SAFETY: plain integers in the C layout the kernel declares.
unsafe impl DeviceRepr for MsclArgs {}

/// The prelude's `MsclFill`: every rank's input, made on the GPU.
#[repr(C)]
#[derive(Clone, Copy)]
struct MsclFill {
    bufs: u64,
    elements: u64,
    ranks: u32,
    seed: u32,
}

// SAFETY: as MsclArgs.
unsafe impl DeviceRepr for MsclFill {}

/// The prelude's `MsclCheck`: every rank's output checked on the GPU.
#[repr(C)]
#[derive(Clone, Copy)]
struct MsclCheck {
    bufs: u64,
    entries: u64,
    found: u64,
    nentries: u64,
    per_chunk: u64,
    ranks: u32,
    seed: u32,
}

// SAFETY: as MsclArgs.
unsafe impl DeviceRepr for MsclCheck {}

/// The grid of the fill and the check: enough blocks to fill the GPU,
/// each going through the elements in strides.
const HELPER_GRID: LaunchConfig = LaunchConfig {
    grid_dim: (1024, 1, 1),
    block_dim: (256, 1, 1),
    shared_mem_bytes: 0,
};

/// What the driver said of a call that failed, after `what`: its words
/// and the error's name, and what to do where that is known.
fn driver_error(what: &str) -> impl Fn(cudarc::driver::DriverError) -> String + '_ {
    move |e| {
        use sys::cudaError_enum as E;
        let words = e.error_string().map(|w| w.to_string_lossy().into_owned());
        let hint = match e.0 {
            E::CUDA_ERROR_NO_DEVICE => {
                ": the driver sees no GPU (`nvidia-smi` lists what it sees; CUDA_VISIBLE_DEVICES may hide them)"
            }
            E::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
            | E::CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE => {
                ": update the NVIDIA driver (its kernel module and library together)"
            }
            _ => "",
        };
        match words {
            Ok(words) => format!("{what}: {words} ({:?}){hint}", e.0),
            Err(_) => format!("{what}: {:?}{hint}", e.0),
        }
    }
}

/// Runs `f`, which calls the driver through cudarc; where the driver
/// library lacks a function cudarc calls (an old driver, or a library of
/// libcuda's name that is not NVIDIA's), cudarc panics: that is said as
/// an error here, not a crash.
fn with_driver<T>(f: impl FnOnce() -> Result<T, RunError>) -> Result<T, RunError> {
    fn missing_symbol(payload: &(dyn std::any::Any + Send)) -> Option<String> {
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())?;
        let rest = text.strip_prefix("Missing symbol ")?;
        Some(rest.split(':').next().unwrap_or(rest).to_string())
    }
    let previous: Arc<dyn Fn(&std::panic::PanicHookInfo) + Send + Sync> =
        Arc::from(std::panic::take_hook());
    let other = previous.clone();
    // Quiet for the missing function alone: any other panic is a bug,
    // reported as ever.
    std::panic::set_hook(Box::new(move |info| {
        if missing_symbol(info.payload()).is_none() {
            other(info)
        }
    }));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(Box::new(move |info| previous(info)));
    match result {
        Ok(result) => result,
        Err(payload) => match missing_symbol(payload.as_ref()) {
            Some(function) => Err(format!(
                "the NVIDIA driver library (libcuda.so) has no `{function}`, which `msclc run` calls: the driver is too old for this msclc (update it), or the library is not NVIDIA's"
            )
            .into()),
            None => std::panic::resume_unwind(payload),
        },
    }
}

/// Runs `plan` per `opts`, writing the table to `out`; Ok(true) when every
/// checked size came out right.
pub fn run(plan: &Plan, opts: &RunOptions, out: &mut dyn std::io::Write) -> Result<bool, RunError> {
    // What cannot run anywhere is said before looking for a GPU.
    if plan.ranks.iter().all(|r| r.threadblocks.is_empty()) {
        let mut problem = crate::diag::Diagnostic::plain(
            crate::diag::Code::NoCudaForm,
            "the plan has no thread block on any rank: there is no kernel to launch (`msclc sim` checks what such a plan leaves in the buffers)",
        );
        if plan.ranks.len() == 1 {
            problem = problem.with_note(
                "help: a collective of one rank has no peer to move data to: give --nranks 2 or more",
            );
        }
        return Err(RunError::Problem(problem));
    }
    let senders = crate::measure::workload::sendrecv_senders(plan);
    let workloads: Vec<(u64, Result<Workload, String>)> =
        crate::measure::sizes(plan, opts.min_size, opts.max_size)
            .map(|size| {
                (
                    size,
                    Workload::new(plan, opts.dtype, size, senders.as_deref()),
                )
            })
            .collect();
    if let Some((size, Err(why))) = workloads
        .last()
        .filter(|_| workloads.iter().all(|(_, w)| w.is_err()))
    {
        return Err(RunError::Problem(crate::measure::no_size_runs(
            opts.min_size,
            opts.max_size,
            *size,
            why,
        )));
    }
    // An op with no CUDA form is the plan's, whatever the GPU.
    let source = cuda::generate(plan)?;
    // SAFETY: only tries to open the library.
    if !unsafe { sys::is_culib_present() } {
        return Err("no NVIDIA driver found (libcuda.so): `msclc run` needs a GPU and its driver (then NVRTC, to compile the kernel); `msclc sim` checks a plan on the CPU".into());
    }
    with_driver(|| on_gpu(plan, opts, out, &workloads, &source))
}

/// The rest of [`run`], once the plan is known to run at some size and
/// the driver library is there: the GPU found, the kernel compiled and
/// launched at each size.
fn on_gpu(
    plan: &Plan,
    opts: &RunOptions,
    out: &mut dyn std::io::Write,
    workloads: &[(u64, Result<Workload, String>)],
    source: &str,
) -> Result<bool, RunError> {
    let count = CudaContext::device_count().map_err(driver_error("cannot query CUDA devices"))?;
    if count < 1 {
        return Err(
            "no CUDA GPU found: `msclc run` needs one; `msclc sim` checks a plan on the CPU".into(),
        );
    }
    let ctx = CudaContext::new(0).map_err(driver_error("cannot open GPU 0"))?;
    let name = ctx
        .name()
        .map_err(driver_error("cannot read the GPU's name"))?;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(driver_error("cannot read the compute capability"))?;
    let arch = format!("sm_{major}{minor}");
    let sm = u32::try_from(major * 10 + minor).unwrap_or(0);
    if let Err(why) = cuda::arch_supports(sm, opts.dtype) {
        return Err(RunError::Problem(crate::diag::Diagnostic::plain(
            crate::diag::Code::Device,
            format!("GPU 0, {name}: {why}"),
        )));
    }
    let compiled = nvrtc::compile(
        source,
        &arch,
        &[cuda::dtype_define(opts.dtype)],
        opts.cache.as_deref(),
    )?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
        .map_err(driver_error("cannot load the compiled kernel"))?;
    let kernel = module
        .load_function(cuda::KERNEL)
        .map_err(driver_error("the compiled module lacks its kernel"))?;
    let fill = module
        .load_function("mscl_fill")
        .map_err(driver_error("the compiled module lacks mscl_fill"))?;
    let check = module
        .load_function("mscl_check")
        .map_err(driver_error("the compiled module lacks mscl_check"))?;
    let blocks: u32 = plan.ranks.iter().map(|r| r.threadblocks.len() as u32).sum();
    let wanted = plan.options.num_threads_per_block;
    let threads = resident_width(&ctx, &kernel, blocks, wanted)?;

    let stream = if opts.graph {
        // A capture needs a stream of its own (the default one cannot be
        // captured), and everything runs on that one stream, in order:
        // cudarc's events between streams are not wanted (and an event
        // recorded before a capture cannot be waited for inside it).
        // SAFETY: no slice is used on a second stream.
        unsafe { ctx.disable_event_tracking() };
        ctx.new_stream()
            .map_err(driver_error("cannot create a stream"))?
    } else {
        ctx.default_stream()
    };
    let layout = SyncLayout::new(plan);
    let sync = stream
        .clone_htod(&layout.initial_words())
        .map_err(driver_error("cannot allocate the synchronization words"))?;
    // The check's entries are the same at every size.
    let runnable: Vec<&Workload> = workloads
        .iter()
        .filter_map(|(_, w)| w.as_ref().ok())
        .collect();
    let entries = match runnable.first().and_then(|w| w.check_entries()) {
        Some(e) if !e.is_empty() => Some((
            stream
                .clone_htod(&e)
                .map_err(driver_error("cannot copy the check to the GPU"))?,
            e.len() as u64 / 4,
        )),
        _ => None,
    };
    let mut bufs = Buffers::for_largest(&stream, &runnable, plan.ranks.len())?;
    let mut gpu = Gpu {
        ctx: ctx.clone(),
        stream,
        kernel,
        fill,
        check,
        entries,
        plan,
        layout,
        sync,
        flag: 0,
        budget: opts.timeout,
        graph: opts.graph,
        config: LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        },
    };
    let narrower = if threads < wanted {
        format!(" (the plan's {wanted} do not fit: its meaning does not depend on the width)")
    } else {
        String::new()
    };
    let launches = if opts.graph {
        "time per launch of the timed launches captured in one CUDA graph"
    } else {
        "time per launch of the timed launches issued one by one"
    };
    let mode = format!(
        "single-GPU emulation: all {} ranks on GPU 0 ({name}, {arch}), {blocks} blocks of {threads} threads{narrower} in one cooperative grid; kernel {}; {launches}",
        plan.ranks.len(),
        if compiled.from_cache { "from the cache" } else { "compiled by NVRTC" }
    );
    let mut table = Table::new(plan, opts, &mode);
    table.header(out);
    let mut all_right = true;
    for (size, workload) in workloads {
        match workload {
            Err(why) => table.skip(out, *size, why),
            Ok(w) => {
                let row = gpu.measure(w, opts, &mut bufs)?;
                all_right &= row.wrong.unwrap_or(0) == 0;
                table.row(out, w, &row);
            }
        }
    }
    table.footer(out, all_right);
    Ok(all_right)
}

/// Threads per block for a grid whose blocks must all be resident at once
/// (ranks wait for each other inside one launch): the plan's width, or the
/// widest multiple of 32 below it at which the grid fits this GPU.
fn resident_width(
    ctx: &Arc<CudaContext>,
    kernel: &CudaFunction,
    blocks: u32,
    wanted: u32,
) -> Result<u32, String> {
    let sms = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(driver_error("cannot read the multiprocessor count"))? as u32;
    let mut threads = wanted;
    loop {
        let per_sm = kernel
            .occupancy_max_active_blocks_per_multiprocessor(threads, 0, None)
            .map_err(driver_error("cannot query occupancy"))?;
        if blocks <= per_sm * sms {
            return Ok(threads);
        }
        if threads <= 32 {
            return Err(format!(
                "the plan needs {blocks} thread blocks resident at once, and this GPU holds {} even at 32 threads per block ({per_sm} per multiprocessor x {sms}); run fewer ranks or fewer thread blocks per rank",
                per_sm * sms
            ));
        }
        threads = narrower(threads);
    }
}

/// The next width `resident_width` tries below `threads`: the widest
/// multiple of 32 under it (one warp less), 32 at the least.
fn narrower(threads: u32) -> u32 {
    ((threads - 1) / 32 * 32).max(32)
}

struct Gpu<'p> {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernel: CudaFunction,
    /// The prelude's input maker and output check.
    fill: CudaFunction,
    check: CudaFunction,
    /// The check's entries on the GPU, and how many; `None` when the
    /// collective defines no result.
    entries: Option<(CudaSlice<u32>, u64)>,
    plan: &'p Plan,
    layout: SyncLayout,
    sync: CudaSlice<u64>,
    /// Launches so far: the packet flag of the next is one more.
    flag: u32,
    /// How long one wait may spin.
    budget: std::time::Duration,
    /// Time launches captured in a CUDA graph (`--graph`).
    graph: bool,
    config: LaunchConfig,
}

/// Every rank's buffers on the device, allocated once for the largest
/// size (a smaller size uses their starts), and the roofline copy's.
struct Buffers {
    users: Vec<CudaSlice<u8>>,
    scratch: Vec<CudaSlice<u8>>,
    copy_src: CudaSlice<u8>,
    copy_dst: CudaSlice<u8>,
    /// What the check found (`Found::words`).
    found: CudaSlice<u64>,
}

impl Buffers {
    fn for_largest(
        stream: &Arc<CudaStream>,
        runnable: &[&Workload],
        ranks: usize,
    ) -> Result<Buffers, String> {
        let alloc = driver_error("cannot allocate device memory");
        let most = |f: &dyn Fn(&Workload) -> u64| runnable.iter().map(|w| f(w)).max().unwrap_or(0);
        let mut users = Vec::new();
        let mut scratch = Vec::new();
        for r in 0..ranks {
            let user = most(&|w| w.ranks[r].user_bytes).max(16) as usize;
            users.push(stream.alloc_zeros::<u8>(user).map_err(&alloc)?);
            let s = most(&|w| w.scratch_bytes).max(16) as usize;
            scratch.push(stream.alloc_zeros::<u8>(s).map_err(&alloc)?);
        }
        let copy = most(&|w| w.output_bytes * ranks as u64).max(16) as usize;
        Ok(Buffers {
            users,
            scratch,
            copy_src: stream.alloc_zeros::<u8>(copy).map_err(&alloc)?,
            copy_dst: stream.alloc_zeros::<u8>(copy).map_err(&alloc)?,
            found: stream
                .alloc_zeros::<u64>(Found::words(ranks))
                .map_err(&alloc)?,
        })
    }
}

impl Gpu<'_> {
    fn measure(
        &mut self,
        w: &Workload,
        opts: &RunOptions,
        bufs: &mut Buffers,
    ) -> Result<Row, RunError> {
        // The pointer table of this size: input and output where the
        // workload puts them in each rank's allocation.
        let mut pointers = Vec::new();
        for (r, b) in w.ranks.iter().enumerate() {
            let base = bufs.users[r].device_ptr(&self.stream).0;
            pointers.extend([
                base + b.input_offset,
                base + b.output_offset,
                bufs.scratch[r].device_ptr(&self.stream).0,
            ]);
        }
        let table = self
            .stream
            .clone_htod(&pointers)
            .map_err(driver_error("cannot copy to the GPU"))?;
        let table_ptr = table.device_ptr(&self.stream).0;
        let ranks = w.ranks.len() as u32;

        // Correctness: fresh inputs made on the GPU, one launch, every
        // rank's result checked there; only the counts come back.
        let seed = self.flag + 1;
        let fill = MsclFill {
            bufs: table_ptr,
            elements: w.input_elements(),
            ranks,
            seed,
        };
        self.helper(&self.fill.clone(), &fill)?;
        self.launch(w, table_ptr)?;
        self.finished()?;
        let (wrong, first_wrong) = match &self.entries {
            Some((entries, nentries)) => {
                self.stream
                    .memset_zeros(&mut bufs.found)
                    .map_err(driver_error("cannot clear the check's counts"))?;
                let check = MsclCheck {
                    bufs: table_ptr,
                    entries: entries.device_ptr(&self.stream).0,
                    found: bufs.found.device_ptr(&self.stream).0,
                    nentries: *nentries,
                    per_chunk: w.chunk_elements(),
                    ranks,
                    seed,
                };
                self.helper(&self.check.clone(), &check)?;
                let words = self
                    .stream
                    .clone_dtoh(&bufs.found)
                    .map_err(driver_error("cannot copy from the GPU"))?;
                let found = Found::read(&words, ranks as usize);
                (Some(found.total()), found.first)
            }
            None => (None, Vec::new()),
        };

        // Timing: warm-up launches, then `iters` launches between events.
        for _ in 0..opts.warmup {
            self.launch(w, table_ptr)?;
        }
        let seconds = self.time(opts.iters, |g| g.launch(w, table_ptr))?;
        self.finished()?;

        // The roofline: one device-to-device copy of every rank's output.
        let bytes = (w.output_bytes * w.ranks.len() as u64).max(16) as usize;
        let (src, dst) = (&bufs.copy_src, &mut bufs.copy_dst);
        let copy_seconds = self.time(opts.iters, |g| {
            g.stream
                .memcpy_dtod(&src.slice(..bytes), &mut dst.slice_mut(..bytes))
                .map_err(driver_error("device copy failed"))
        })?;
        Ok(Row {
            seconds,
            copy_seconds,
            wrong,
            first_wrong,
        })
    }

    /// Runs the fill or the check over the whole GPU, and waits for it.
    fn helper<A: DeviceRepr>(&self, function: &CudaFunction, args: &A) -> Result<(), String> {
        let mut launch = self.stream.launch_builder(function);
        launch.arg(args);
        // SAFETY: the helper takes one struct of the layout `A` mirrors;
        // its pointers are live device allocations sized by the workload.
        unsafe { launch.launch(HELPER_GRID) }.map_err(driver_error("cannot launch a check"))?;
        Ok(())
    }

    fn launch(&mut self, w: &Workload, table: u64) -> Result<(), String> {
        self.flag += 1;
        let args = MsclArgs {
            bufs: table,
            sync: self.sync.device_ptr(&self.stream).0,
            chunk: w.chunk,
            soff: w.scratch_offset(self.flag),
            budget: self.budget.as_nanos().min(u64::MAX as u128) as u64,
            flag: self.flag,
        };
        let mut launch = self.stream.launch_builder(&self.kernel);
        launch.arg(&args);
        // SAFETY: the kernel takes one MsclArgs; its pointers are live
        // device allocations sized by the workload. Cooperative: a grid
        // that cannot be resident at once is refused, not left to hang.
        unsafe { launch.launch_cooperative(self.config) }
            .map_err(driver_error("cannot launch the kernel"))?;
        Ok(())
    }

    /// Waits for the launches so far; a spin that gave up is the error.
    fn finished(&mut self) -> Result<(), RunError> {
        self.stream
            .synchronize()
            .map_err(driver_error("the kernel failed"))?;
        let words = self
            .stream
            .clone_dtoh(&self.sync)
            .map_err(driver_error("cannot copy from the GPU"))?;
        let budget_ms = self.budget.as_millis() as u64;
        match cuda::report::read(self.plan, &self.layout, &words, budget_ms) {
            Some(gave_up) => Err(RunError::Stuck(Box::new(gave_up))),
            None => Ok(()),
        }
    }

    /// Seconds per call of `f`, over `iters` calls between two events.
    /// With `--graph` the calls are captured into one CUDA graph first and
    /// the events time the graph's launch, so the host's cost of issuing
    /// each launch (about 1 us on an H100, docs/cuda.md) is left out, as
    /// nccl-tests' `-G` leaves it out. Each graph is launched once: every
    /// launch in it has its own packet flag.
    fn time(
        &mut self,
        iters: u32,
        mut f: impl FnMut(&mut Self) -> Result<(), String>,
    ) -> Result<f64, String> {
        let iters = iters.max(1);
        let graph = if self.graph {
            self.stream
                .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
                .map_err(driver_error("cannot capture launches in a CUDA graph"))?;
            let captured = (0..iters).try_for_each(|_| f(self));
            // The capture ends whatever happened, or the stream stays in it.
            let graph = self
                .stream
                .end_capture(sys::CUgraphInstantiate_flags(0))
                .map_err(driver_error("cannot make the captured CUDA graph"));
            captured?;
            let graph = graph?.ok_or("the capture made no CUDA graph")?;
            graph
                .upload()
                .map_err(driver_error("cannot upload the CUDA graph"))?;
            Some(graph)
        } else {
            None
        };
        let event = || {
            self.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_error("cannot create an event"))
        };
        let (start, stop) = (event()?, event()?);
        start
            .record(&self.stream)
            .map_err(driver_error("cannot record an event"))?;
        match &graph {
            Some(graph) => graph
                .launch()
                .map_err(driver_error("cannot launch the CUDA graph"))?,
            None => {
                for _ in 0..iters {
                    f(self)?;
                }
            }
        }
        stop.record(&self.stream)
            .map_err(driver_error("cannot record an event"))?;
        self.stream
            .synchronize()
            .map_err(driver_error("the kernel failed"))?;
        let ms = start
            .elapsed_ms(&stop)
            .map_err(driver_error("cannot read the timer"))?;
        Ok(f64::from(ms) / 1000.0 / f64::from(iters))
    }
}

#[cfg(test)]
mod tests {
    use super::narrower;

    /// A grid that does not fit is tried one warp narrower each time, so
    /// that one fitting at 992 threads runs at 992, not at 512.
    #[test]
    fn widths_step_down_a_warp_at_a_time() {
        assert_eq!(narrower(1024), 992);
        assert_eq!(narrower(100), 96);
        assert_eq!(narrower(96), 64);
        assert_eq!(narrower(64), 32);
        assert_eq!(narrower(33), 32);
    }
}

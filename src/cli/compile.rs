//! `msclc FILE` and `msclc compile FILE`: a program (or a JSON plan) to
//! an MSCCL++ JSON execution plan or CUDA source.

use super::input::{is_plan, read_checked_plan, Compile};
use super::options::{parse_define, DtypeArg, LimitArgs, WarningArgs};
use super::outcome::{fail, fail_in, report, wrong};
use clap::Args;
use msclc::diag::{Code, Diagnostic};
use msclc::driver;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct CompileArgs {
    /// The .mscl program (`-`: read from standard input), or a .json
    /// execution plan, for `--emit ops`, `--emit cuda` or `--emit cubin`.
    #[arg(required = true, value_hint = clap::ValueHint::FilePath)]
    pub(crate) input: Option<PathBuf>,
    /// Sets a `param` the program declares (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Where to write the plan (standard output when omitted, or `-`).
    #[arg(short, long, value_name = "OUT")]
    pub(crate) output: Option<PathBuf>,
    /// Indent the JSON for reading (plans are compact by default: large ones
    /// write twice as fast and take half the space). JSON only.
    #[arg(long)]
    pub(crate) pretty: bool,
    /// What to write: the MSCCL++ JSON execution plan; its ops listed to
    /// read, per rank and thread block, each with the program line and
    /// loop values that made it; CUDA source specialized for the plan (all
    /// ranks on one GPU); or that source compiled by NVRTC to a cubin for
    /// `--arch` (no GPU needed; the cubin `msclc run` loads, through the
    /// same cache).
    #[arg(long, value_enum, default_value = "json")]
    pub(crate) emit: Emit,
    /// The GPU architecture a cubin is for: sm_80 (A100), sm_90 (H100,
    /// H200), sm_100 (B200), ...
    #[arg(long, value_name = "SM", required_if_eq("emit", "cubin"), value_parser = parse_arch)]
    pub(crate) arch: Option<String>,
    /// The element type a cubin is compiled for (float32 when not given).
    #[arg(long, value_enum)]
    pub(crate) dtype: Option<DtypeArg>,
    /// Compile the cubin afresh and keep no copy: skip the cubin cache
    /// ($MSCLC_CACHE_DIR, else $XDG_CACHE_HOME/msclc, else ~/.cache/msclc).
    #[arg(long)]
    pub(crate) no_cache: bool,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    #[command(flatten)]
    pub(crate) warnings: WarningArgs,
    /// Print how long each stage took (read, parse, check, evaluate,
    /// passes, warnings unless -q, write) on standard error.
    #[arg(long)]
    pub(crate) timings: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Emit {
    Json,
    Ops,
    Cuda,
    Cubin,
}

/// `sm_90`, `sm_100a`: what NVRTC's `--gpu-architecture` takes for a cubin.
fn parse_arch(text: &str) -> Result<String, String> {
    let number = arch_digits(text);
    let well_formed =
        number.len() >= 2 && !number.starts_with('0') && number.chars().all(|c| c.is_ascii_digit());
    match number.parse::<u32>() {
        Ok(sm) if well_formed => {
            msclc::back::cuda::arch_supports(sm, msclc::ir::Dtype::Float32)?;
            Ok(text.to_string())
        }
        _ => Err(format!(
            "`{text}` is not a GPU architecture: sm_80, sm_90, sm_100, ..."
        )),
    }
}

/// The digits of an architecture's name (`90` of `sm_90a`).
fn arch_digits(arch: &str) -> &str {
    let digits = arch.strip_prefix("sm_").unwrap_or("");
    digits.trim_end_matches(['a', 'f'])
}

/// The number of an architecture `parse_arch` accepted (90 for sm_90a).
fn arch_number(arch: &str) -> u32 {
    arch_digits(arch).parse().unwrap_or(u32::MAX)
}

pub(crate) fn exec(args: &CompileArgs) -> ExitCode {
    let Some(input) = &args.input else {
        return fail(Diagnostic::plain(Code::Options, "no input file given"));
    };
    // `-o -` is standard output, as `msclc fmt -` reads standard input.
    let output = args.output.as_deref().filter(|o| o.as_os_str() != "-");
    if args.pretty && args.emit != Emit::Json {
        return fail(Diagnostic::plain(
            Code::Options,
            "--pretty indents JSON plans; listings, CUDA source and cubins are written as they are (leave out --pretty)",
        ));
    }
    // `-o -` sends it down a pipe, not onto a terminal.
    let to_terminal = output.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdout());
    if args.emit == Emit::Cubin && (args.output.is_none() || to_terminal) {
        return fail(Diagnostic::plain(
            Code::Options,
            "a cubin is binary: name the file to write with -o (msclc FILE --emit cubin --arch sm_90 -o kernel.cubin), or send it down a pipe with -o -",
        ));
    }
    // The CUDA source is the same for every element type: NVRTC is told
    // which when it compiles the cubin.
    if args.emit != Emit::Cubin && (args.arch.is_some() || args.dtype.is_some() || args.no_cache) {
        return fail(Diagnostic::plain(
            Code::Options,
            "--arch, --dtype and --no-cache are for --emit cubin (CUDA source serves every element type; a listing has none)",
        ));
    }
    let example = match args.emit {
        Emit::Json => "plan.json",
        Emit::Ops => "plan.txt",
        Emit::Cuda => "plan.cu",
        Emit::Cubin => "kernel.cubin",
    };
    let outputs: Vec<_> = output.iter().map(|o| ("-o", *o, example)).collect();
    if let Err(d) = super::input::distinct_outputs(&outputs, &[input]) {
        return fail(d);
    }
    let (plan, mut timings, sources) = if is_plan(input) {
        match read_checked_plan(
            input,
            (&args.define, &args.limits),
            Compile::Plain,
            &args.warnings,
        ) {
            Ok(plan) => (plan, driver::Timings::default(), None),
            Err(code) => return code,
        }
    } else {
        let (defines, limits) = (&args.define, args.limits.limits());
        let c = match args.emit {
            // Only written: the writer makes the instances, a rank at a time.
            Emit::Json => args
                .warnings
                .compile_leaving_instances(input, defines, limits),
            Emit::Ops | Emit::Cuda | Emit::Cubin => args.warnings.compile(input, defines, limits),
        };
        match c.result {
            Ok(_) if args.warnings.report(&c) => return wrong(),
            Ok(plan) => (plan, c.timings, Some(c.sources)),
            Err(diags) => return report(&c.sources, &diags),
        }
    };
    if let Err(d) = super::input::outputs_spare_imports(&outputs, sources.as_ref()) {
        return fail(d);
    }
    let cuda = match args.emit {
        Emit::Json | Emit::Ops => None,
        Emit::Cuda | Emit::Cubin => {
            match timings.time("cuda", || msclc::back::cuda::generate(&plan)) {
                Ok(source) => Some(source.into_bytes()),
                Err(e) => return fail_in(sources.as_ref(), input, e),
            }
        }
    };
    let image = match (&cuda, args.emit, &args.arch) {
        (Some(source), Emit::Cubin, Some(arch)) => {
            let dtype: msclc::ir::Dtype = args.dtype.unwrap_or(DtypeArg::Float32).into();
            if let Err(why) = msclc::back::cuda::arch_supports(arch_number(arch), dtype) {
                return fail(Diagnostic::plain(Code::Options, why));
            }
            // What `msclc run` refuses at every size, the cubin it would
            // load is refused for.
            if let Some(why) = msclc::measure::workload::reductions_cut_elements(&plan, dtype) {
                return fail(Diagnostic::plain(
                    Code::Options,
                    format!(
                        "no cubin for {} data: {why} (`msclc run` refuses the plan at every size)",
                        dtype.nccl_name()
                    ),
                ));
            }
            let cache = if args.no_cache {
                None
            } else {
                msclc::runner::cache::default_dir()
            };
            let source = String::from_utf8_lossy(source);
            let define = msclc::back::cuda::dtype_define(dtype);
            match timings.time("nvrtc", || {
                msclc::runner::nvrtc::compile(&source, arch, &[define], cache.as_deref())
            }) {
                Ok(compiled) => Some(compiled.cubin),
                Err(why) => return fail(Diagnostic::plain(Code::Device, why)),
            }
        }
        _ => cuda,
    };
    let write = |out: &mut dyn Write| match (&image, args.emit) {
        (Some(bytes), _) => out.write_all(bytes).and_then(|()| out.flush()),
        (None, Emit::Ops) => msclc::back::listing::write_listing(&plan, sources.as_ref(), out),
        (None, _) => write_plan_to(&plan, args.pretty, out),
    };
    let written = timings.time("write", || match output {
        Some(path) => msclc::files::write_output_with(path, write),
        None => write(&mut std::io::stdout().lock()),
    });
    // The process ends next and the system takes its memory back at once:
    // freeing a large plan op by op would take a tenth of its compile.
    std::mem::forget(plan);
    if args.timings {
        tell!("{}", timings.report());
    }
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let target = output.map_or("standard output".into(), |p| p.display().to_string());
            fail(Diagnostic::plain(
                Code::Unreadable,
                format!("cannot write {target}: {e}"),
            ))
        }
    }
}

pub(crate) fn write_plan_to(
    plan: &msclc::ir::Plan,
    pretty: bool,
    mut out: impl Write,
) -> std::io::Result<()> {
    // No buffer: the writer gathers its text into large writes itself.
    msclc::back::json::write_plan(plan, pretty, &mut out)?;
    out.write_all(b"\n")?;
    out.flush()
}

//! `msclc tune`: the parallelism of a program chosen for every message
//! size, and the plan set written (docs/tuning.md).

use super::options::{count, parse_define, DtypeArg, LimitArgs};
use super::outcome::{fail, rendered, report};
use clap::Args;
use msclc::diag::{Code, Diagnostic};
use msclc::tune::{self, report};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct TuneArgs {
    /// The .mscl program (`-`: read from standard input): its params
    /// that list their values (`param tbg: int in [1, 2, 4] = 1`) vary.
    pub(crate) input: PathBuf,
    /// Sets a `param` the program declares (repeatable): set, it does not
    /// vary.
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Varies a param over these values (repeatable), in place of the
    /// values it lists or where it lists none.
    #[arg(long, value_name = "NAME=V1,V2,..", value_parser = parse_vary)]
    pub(crate) vary: Vec<(String, Vec<String>)>,
    /// Number of ranks: sets the program's param that decides it, as
    /// `msclc sim --nranks` does.
    #[arg(long, value_name = "N", value_parser = count::<u32>("a number of ranks", 1, u32::MAX as u64))]
    pub(crate) nranks: Option<u32>,
    /// The machine to tune for: a built-in topology (h100-nvlink,
    /// h100-nvls, h100-ib, emulated-h100) or a JSON file (docs/timing.md).
    #[arg(long, value_name = "TOPOLOGY")]
    pub(crate) timing: String,
    /// The message sizes the plan set covers, MIN to MAX (K, M, G
    /// suffixes); sizes double from MIN.
    #[arg(long, allow_hyphen_values = true, value_name = "MIN:MAX", value_parser = msclc::runner::parse_size_range)]
    pub(crate) size: (u64, u64),
    /// Element type of the data (`float` and `half`, as nccl-tests names them, are float32 and float16).
    #[arg(long, value_enum, default_value = "float32")]
    pub(crate) dtype: DtypeArg,
    /// Where to write the plans, their index (index.json) and the picture
    /// (busbw.svg); without it, only the table is printed.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub(crate) output: Option<PathBuf>,
    /// Candidates to try at most: past it, the defaults, each single
    /// change from them, and the rest drawn at random.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = count::<u64>("a number of candidates", 1, u64::MAX))]
    pub(crate) max_candidates: u64,
    /// A candidate within PCT percent of the fastest at a size counts as
    /// fastest there: fewer plans, each at most that much slower.
    #[arg(long, value_name = "PCT", default_value_t = 0.0, value_parser = parse_percent)]
    pub(crate) within: f64,
    /// Print no progress bar.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
}

/// `NAME=V1,V2,..`.
fn parse_vary(s: &str) -> Result<(String, Vec<String>), String> {
    let (name, values) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=V1,V2,.."))?;
    let values: Vec<String> = values.split(',').map(str::trim).map(String::from).collect();
    if name.is_empty() || values.iter().any(String::is_empty) {
        return Err(format!(
            "`{s}` is not NAME=V1,V2,.. (a name, and values between commas)"
        ));
    }
    Ok((name.to_string(), values))
}

pub(crate) fn exec(args: &TuneArgs) -> ExitCode {
    if let Err(refused) = super::input::refuse_plan(&args.input, "tune") {
        return refused;
    }
    let topology = match msclc::timing::load_topology(&args.timing) {
        Ok(t) => t,
        Err(d) => return fail(d),
    };
    // Said before the tuning, which may take minutes; of the plans' names
    // once they are known.
    if let Some(dir) = &args.output {
        // Elsewhere `-o -` is standard output, which cannot hold a folder.
        if dir.as_os_str() == "-" {
            return fail(Diagnostic::plain(
                Code::Options,
                "-o -: tune writes a folder (its plans, index and picture), which standard output cannot hold: name a folder (-o tuned)",
            ));
        }
        if dir.exists() && !dir.is_dir() {
            return fail(Diagnostic::plain(
                Code::Unreadable,
                format!(
                    "-o {}: a file, not a folder (tune writes its plans, index and picture in a folder)",
                    dir.display()
                ),
            ));
        }
        if let Err(refused) = refuse_strangers(dir, RESULTS.map(String::from).into_iter(), &[]) {
            return refused;
        }
    }
    let made = match args.output.as_deref().map(make_folder).transpose() {
        Ok(made) => made.unwrap_or_default(),
        Err(d) => return fail(d),
    };
    let code = tune_and_write(args, &topology);
    if code != ExitCode::SUCCESS {
        // Nothing was written: the folders made for it go again.
        for folder in &made {
            let _ = std::fs::remove_dir(folder);
        }
    }
    code
}

/// Makes the folder `-o` names, with those above it that are not there,
/// before the tuning, which may take minutes: a folder that cannot be
/// made (a file in its path, no permission) is said before any work.
/// Returns the folders made, the deepest first.
fn make_folder(dir: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let made: Vec<PathBuf> = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .take_while(|a| std::fs::symlink_metadata(a).is_err())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir).map_err(|e| {
        Diagnostic::plain(
            Code::Unreadable,
            format!(
                "-o {}: cannot make the folder: {e}; name a folder that can be made (or is there)",
                dir.display()
            ),
        )
    })?;
    Ok(made)
}

/// Tunes, reports and writes the results of `args`.
fn tune_and_write(args: &TuneArgs, topology: &msclc::timing::topology::Topology) -> ExitCode {
    let bar = (!args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
        indicatif::ProgressBar::new(0).with_style(
            indicatif::ProgressStyle::with_template(
                "tuning {bar:30} {pos}/{len} candidates, {eta} left",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        )
    });
    // Not on a terminal (a log, a CI job): a line every ten seconds, so
    // that a long tuning shows it is alive and how far it is.
    let done = std::sync::Mutex::new((0usize, std::time::Instant::now()));
    let progress = |candidates: usize| match &bar {
        Some(bar) => {
            bar.set_length(candidates as u64);
            bar.inc(1);
        }
        None if !args.quiet => {
            let mut done = done.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            done.0 += 1;
            if done.1.elapsed() >= std::time::Duration::from_secs(10) {
                done.1 = std::time::Instant::now();
                tell!("tuning: {} of {candidates} candidates tried\n", done.0);
            }
        }
        None => {}
    };
    let request = tune::Request {
        path: &args.input,
        fixed: &args.define,
        vary: &args.vary,
        nranks: args.nranks,
        topology,
        dtype: args.dtype.into(),
        span: args.size,
        max_candidates: usize::try_from(args.max_candidates).unwrap_or(usize::MAX),
        within: args.within / 100.0,
        limits: args.limits.limits(),
        progress: &progress,
    };
    let tuned = tune::tune(&request);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut tuned = match tuned {
        Ok(t) => t,
        // E0606 exits 1 (the program is wrong), E08xx 2.
        Err((sources, diags)) => return report(&sources, &diags),
    };
    // The plans, compiled again (only the table's times were kept).
    let mut plans = Vec::new();
    for k in 0..tuned.segments.len() {
        match tune::compiled(&request, &tuned.defines(&args.define, &tuned.segments[k])) {
            Ok(mut plan) => {
                // Within the program's own sizes too: the first and last
                // ranges reach the span's ends, which may lie past them
                // (the sizes timed lie within both).
                let (min, max) = tuned.ranges[k];
                let own = &mut plan.options;
                own.min_message_size = own.min_message_size.max(min.into());
                own.max_message_size = own.max_message_size.min(max.into());
                tuned.ranges[k] = (own.min_message_size as u64, own.max_message_size as u64);
                plans.push(plan);
            }
            Err(why) => {
                return fail(Diagnostic::plain(
                    Code::Internal,
                    format!("a chosen candidate no longer compiles: {why}"),
                ))
            }
        }
    }
    let name = plans.first().map_or("plan".to_string(), |p| p.name.clone());
    let title = format!(
        "{} on {}, {}, {}, {} to {}",
        msclc::driver::source_name(&args.input),
        topology.name,
        msclc::units::count(plans.first().map_or(0, |p| p.ranks.len() as u64), "rank"),
        msclc::ir::Dtype::from(args.dtype).nccl_name(),
        msclc::units::short_bytes(args.size.0),
        msclc::units::short_bytes(args.size.1)
    );
    say!("{}", report::table(&tuned, &title));
    // The program's own sizes may stop short of the span's ends: what no
    // plan serves, the runtime serves otherwise; said, not left to find.
    let first = tuned.ranges.first().map_or(args.size.0, |r| r.0);
    let last = tuned.ranges.last().map_or(args.size.1, |r| r.1);
    if first > args.size.0 {
        sayln!(
            "# no plan serves {} to {} B: the program's sizes start at {first} B (its min_message_size)",
            args.size.0,
            first - 1
        );
    }
    if last < args.size.1 {
        sayln!(
            "# no plan serves {} to {} B: the program's sizes stop at {last} B (its max_message_size)",
            last + 1,
            args.size.1
        );
    }
    // A range that starts at 2 GiB or more is one the executor misreads.
    let misread: Vec<Diagnostic> = plans
        .iter()
        .enumerate()
        .filter_map(|(k, plan)| {
            let file = report::file_name(&name, &tuned, k);
            let file = match &args.output {
                Some(dir) => dir.join(file),
                None => PathBuf::from(file),
            };
            msclc::passes::executor_limits::misread_min_message_size(plan).map(|w| w.in_plan(&file))
        })
        .collect();
    if !misread.is_empty() {
        tell!("{}", rendered(None, &args.input, &misread));
    }
    let Some(dir) = &args.output else {
        sayln!("# no -o DIR: nothing written");
        return ExitCode::SUCCESS;
    };
    let plan_files = (0..plans.len()).map(|k| report::file_name(&name, &tuned, k));
    let earlier = earlier_plans(dir);
    let files = plan_files.chain(RESULTS.map(String::from));
    if let Err(refused) = refuse_strangers(dir, files, &earlier) {
        return refused;
    }
    match write(dir, &tuned, &plans, (&name, &title), &earlier, args) {
        Ok(files) => {
            sayln!("# wrote, in {}:", dir.display());
            for f in files {
                sayln!("#   {f}");
            }
            ExitCode::SUCCESS
        }
        Err((path, e)) => fail(Diagnostic::plain(
            Code::Unreadable,
            format!("cannot write {}: {e}", path.display()),
        )),
    }
}

/// The files tune writes beside its plans.
const RESULTS: [&str; 2] = ["index.json", "busbw.svg"];

/// An E0809 error if any of `files` in `dir` is there but not one tune
/// wrote: a user's own `index.json`, say, or a link to a file elsewhere.
/// Tune replaces its own earlier results (a plan, its index, its
/// picture), nothing else.
fn refuse_strangers(
    dir: &Path,
    files: impl Iterator<Item = String>,
    listed: &[String],
) -> Result<(), ExitCode> {
    // A link is not tune's to write through: the file it names is
    // outside what tune was given. A plan is tune's where its index
    // lists it (`listed`, `earlier_plans`: a plan the user compiled into
    // the folder is not).
    let ours = |path: &Path, file: &str| match file {
        _ if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => false,
        "index.json" => msclc::files::holds_json_keys(path, report::INDEX_KEYS),
        "busbw.svg" => report::is_tunes_picture(path),
        _ => listed.iter().any(|l| l == file),
    };
    let strangers: Vec<String> = files
        .map(|file| (dir.join(&file), file))
        .filter(|(path, file)| std::fs::symlink_metadata(path).is_ok() && !ours(path, file))
        // The names are the user's: escaped, as all input in messages.
        .map(|(path, _)| format!("  {}", msclc::diag::escaped(&path.display().to_string())))
        .collect();
    if strangers.is_empty() {
        return Ok(());
    }
    Err(fail(Diagnostic::plain(
        Code::NotOurs,
        format!(
            "{} holds files that `msclc tune` did not write, which it would replace:\n{}\nmove them elsewhere, or give another -o DIR",
            dir.display(),
            strangers.join("\n")
        ),
    )))
}

/// The plans tune's own index in `dir` lists, its earlier results there:
/// each a file of the folder itself (not a link), with the bytes tune
/// wrote (the fingerprint its entry keeps), and writable. A plan edited
/// or replaced since, or one made read-only, is the user's now.
fn earlier_plans(dir: &Path) -> Vec<String> {
    let index = dir.join("index.json");
    if !msclc::files::holds_json_keys(&index, report::INDEX_KEYS) {
        return Vec::new();
    }
    let text = std::fs::read_to_string(&index).unwrap_or_default();
    let index: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let entries = index["plans"].as_array().into_iter().flatten();
    let listed = entries.filter_map(|p| Some((p["file"].as_str()?, p["sha256"].as_str()?)));
    listed
        .filter(|(name, _)| Path::new(name).file_name() == Some(std::ffi::OsStr::new(name)))
        .filter(|(name, sha256)| {
            let path = dir.join(name);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                return false;
            };
            meta.is_file()
                && !meta.permissions().readonly()
                && std::fs::File::open(&path)
                    .and_then(|mut file| {
                        report::write_fingerprinted(&mut std::io::sink(), |out| {
                            std::io::copy(&mut file, out).map(drop)
                        })
                    })
                    .is_ok_and(|found| found == *sha256)
        })
        .map(|(name, _)| name.to_string())
        .collect()
}

/// Writes the plans, the index and the picture into `dir` (made if it is
/// not there), and removes the plans of tune's earlier results there
/// (`earlier`) that these do not replace; nothing else in it is touched.
/// Returns the names written; or the file that could not be written, and
/// why, with the plans new to the folder removed again (a plan the index
/// does not list would be taken for the user's).
fn write(
    dir: &Path,
    tuned: &tune::Tuned,
    plans: &[msclc::ir::Plan],
    (name, title): (&str, &str),
    earlier: &[String],
    args: &TuneArgs,
) -> Result<Vec<String>, (PathBuf, std::io::Error)> {
    // Each plan written where none was.
    let mut made: Vec<PathBuf> = Vec::new();
    let written = (|| {
        let at = |path: &Path| {
            let path = path.to_path_buf();
            move |e| (path, e)
        };
        std::fs::create_dir_all(dir).map_err(at(dir))?;
        let files: Vec<String> = (0..plans.len())
            .map(|k| report::file_name(name, tuned, k))
            .collect();
        // Every file to be replaced is one its user may write, asked before
        // any is: the index, written last, is the one most often read-only.
        for file in files.iter().map(String::as_str).chain(RESULTS) {
            let path = dir.join(file);
            msclc::files::may_replace(&path).map_err(at(&path))?;
        }
        let mut fingerprinted = Vec::new();
        for (plan, file) in plans.iter().zip(files) {
            let path = dir.join(&file);
            // As `msclc FILE -o PLAN` writes it, hashed as it is.
            let new = !path.exists();
            let mut sha256 = String::new();
            msclc::files::write_with(&path, |out| {
                sha256 = report::write_fingerprinted(out, |out| {
                    super::compile::write_plan_to(plan, false, out)
                })?;
                Ok(())
            })
            .map_err(at(&path))?;
            if new {
                made.push(path);
            }
            fingerprinted.push((file, sha256));
        }
        let about = serde_json::json!({
            "program": msclc::driver::source_name(&args.input),
            "topology": args.timing,
            "dtype": msclc::ir::Dtype::from(args.dtype).nccl_name(),
            "span": [args.size.0, args.size.1],
            // As --nranks asked: the plans' rank count, which the fixed and
            // chosen params alone may not give (null where it was not asked).
            "nranks": args.nranks,
            "fixed": args.define.iter().map(|(n, v)| (n.clone(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "sizes": tuned.sizes,
        });
        let index = report::index(tuned, &fingerprinted, about);
        let mut written: Vec<String> = fingerprinted.into_iter().map(|(file, _)| file).collect();
        let path = dir.join("index.json");
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&index).unwrap_or_default()
        );
        msclc::files::write(&path, text.as_bytes()).map_err(at(&path))?;
        written.push("index.json".to_string());
        // The index lists the new plans now: none is removed past here.
        made.clear();
        let path = dir.join("busbw.svg");
        msclc::files::write(&path, report::svg(tuned, title).as_bytes()).map_err(at(&path))?;
        written.push("busbw.svg".to_string());
        // (After the new index: a run stopped here leaves files, never an
        // index that lists none.)
        for stale in earlier.iter().filter(|e| !written.contains(e)) {
            let path = dir.join(stale);
            std::fs::remove_file(&path).map_err(at(&path))?;
        }
        Ok(written)
    })();
    if written.is_err() {
        for path in made {
            let _ = std::fs::remove_file(path);
        }
    }
    written
}

/// A percentage from 0 to 100 (`--within`).
fn parse_percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("{s} is not a percentage from 0 to 100")),
    }
}

//! The pipeline from a file name to a plan: read, parse (with imports),
//! check, evaluate, run the passes. Printing is left to the caller.

pub mod params;
mod shards;

use crate::check::Checked;
use crate::diag::{Code, Diagnostic, SourceMap};
pub use crate::eval::Limits;
use crate::ir::Plan;
use crate::passes::Instances;
use crate::syntax::ast::{FnDef, Program, Stmt, StmtKind};
use crate::vocab::stdlib;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub struct Compilation {
    pub sources: SourceMap,
    /// The plan, or why compilation stopped.
    pub result: Result<Plan, Vec<Diagnostic>>,
    /// How long each stage took, in order (`msclc --timings`).
    pub timings: Timings,
    /// What compiles but will not run as meant: signals the executor will
    /// not pair with their waits, the executor's limits crossed, at their
    /// program lines.
    pub warnings: Vec<Diagnostic>,
}

/// The wall time of each stage that ran.
#[derive(Debug, Default, Clone)]
pub struct Timings(pub Vec<(&'static str, std::time::Duration)>);

impl Timings {
    /// Runs `stage`, adding its time under `name`.
    pub fn time<T>(&mut self, name: &'static str, stage: impl FnOnce() -> T) -> T {
        let start = std::time::Instant::now();
        let out = stage();
        self.0.push((name, start.elapsed()));
        out
    }

    /// One line per stage and the total, in milliseconds.
    pub fn report(&self) -> String {
        let total: std::time::Duration = self.0.iter().map(|(_, d)| *d).sum();
        let mut out = String::new();
        for (name, d) in self.0.iter().chain([&("total", total)]) {
            out.push_str(&format!("{name:>10} {:10.1} ms\n", d.as_secs_f64() * 1e3));
        }
        out
    }
}

/// Compiles `path` with the `-D NAME=VALUE` settings in `defines`: every
/// stage up to and including the passes; the back ends are the caller's.
pub fn compile(path: &Path, defines: &[(String, String)]) -> Compilation {
    compile_with(path, defines, Limits::default())
}

use crate::syntax::MAX_SOURCE_BYTES;

/// Ok when `path` names a regular file (through links); why not, else.
fn regular_file(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        return Ok(());
    }
    let what = if meta.is_dir() {
        "a folder"
    } else {
        "not a regular file (a device, pipe or socket)"
    };
    Err(std::io::Error::other(format!(
        "it is {what}; only files are imported"
    )))
}

/// A source file's text, refused when it is larger than `MAX_SOURCE_BYTES`.
pub fn read_source(path: &Path) -> std::io::Result<String> {
    crate::files::read_text(std::fs::File::open(path)?, Some(MAX_SOURCE_BYTES))
}

/// The main program's text: `read_source`, but `-` is standard input
/// ([`STDIN`]; an import of `"-"` is the file of that name).
pub fn read_main(path: &Path) -> std::io::Result<String> {
    match path.as_os_str() == STDIN {
        true => read_stdin(),
        false => read_source(path),
    }
}

/// The input that names standard input as the main program (`msclc -`,
/// `cat p.mscl | msclc check -`); its imports are found from the working
/// directory.
pub const STDIN: &str = "-";

/// Standard input's text, read once: a command that reads its program
/// more than once (`tune`, for each candidate) gets the same text each
/// time. Refused past `MAX_SOURCE_BYTES`, as a file is.
pub fn read_stdin() -> std::io::Result<String> {
    static TEXT: std::sync::OnceLock<Result<String, (std::io::ErrorKind, String)>> =
        std::sync::OnceLock::new();
    let text = TEXT.get_or_init(|| {
        crate::files::read_text(std::io::stdin().lock(), Some(MAX_SOURCE_BYTES))
            .map_err(|e| (e.kind(), e.to_string()))
    });
    text.clone()
        .map_err(|(kind, message)| std::io::Error::new(kind, message))
}

/// What diagnostics and reports call the main file at `path`.
pub fn source_name(path: &Path) -> String {
    match path.as_os_str() == STDIN {
        true => "<stdin>".to_string(),
        false => path.display().to_string(),
    }
}

/// `compile` within `limits`. Every op and channel keeps the loop values
/// it was made in (`Plan::loops`), for the reports that point into the
/// program: warnings, pass errors, `msclc sim`.
pub fn compile_with(path: &Path, defines: &[(String, String)], limits: Limits) -> Compilation {
    compile_file(path, defines, limits, true, Instances::Now)
}

/// `compile_with`, but the plan's warnings left unlooked for (`-q`; they
/// cost a large plan about a four-hundredth of its compile).
pub fn compile_quietly(path: &Path, defines: &[(String, String)], limits: Limits) -> Compilation {
    compile_file(path, defines, limits, false, Instances::Now)
}

/// `compile_with` (or `compile_quietly`, unless `warn`) for a plan that is
/// only checked or written as JSON: its instances are left to the writer
/// (`back::json::write_plan`), which makes each rank's as it writes it.
/// Its warnings are those of the plan with its instances made.
pub fn compile_leaving_instances(
    path: &Path,
    defines: &[(String, String)],
    limits: Limits,
    warn: bool,
) -> Compilation {
    compile_file(path, defines, limits, warn, Instances::AsWritten)
}

/// Compiles the file at `path`, and looks for its plan's warnings if `warn`.
fn compile_file(
    path: &Path,
    defines: &[(String, String)],
    limits: Limits,
    warn: bool,
    instances: Instances,
) -> Compilation {
    let mut timings = Timings::default();
    match timings.time("read", || read_main(path)) {
        Ok(text) => compile_text(path, text, defines, limits, warn, instances, timings),
        Err(e) => compiled(
            SourceMap::default(),
            timings,
            Err(vec![unreadable(path, e)]),
            warn,
        ),
    }
}

/// A compilation's record, with its plan's warnings if `warn` (their
/// search timed as a stage).
fn compiled(
    sources: SourceMap,
    mut timings: Timings,
    result: Result<Passed, Vec<Diagnostic>>,
    warn: bool,
) -> Compilation {
    let mut warnings = match (&result, warn) {
        // Their notes give the loop values at their lines.
        (Ok((plan, balance)), true) => {
            timings.time("warnings", || crate::passes::warnings(plan, *balance))
        }
        _ => Vec::new(),
    };
    let result = match result {
        Ok((plan, _)) => {
            if warn {
                warnings.splice(0..0, comment_divisions(&sources));
            }
            Ok(plan)
        }
        Err(mut errors) => {
            errors.extend(comment_divisions(&sources));
            Err(errors)
        }
    };
    Compilation {
        warnings,
        sources,
        result,
        timings,
    }
}

/// Compiles `path` for `nranks` ranks: as it is when it already has that
/// many, else with the one int param that, set to `nranks`, gives that many
/// (`num_gpus`, say). No such param, or several, is an error that says so.
pub fn compile_for_ranks(
    path: &Path,
    defines: &[(String, String)],
    nranks: u32,
    limits: Limits,
) -> Compilation {
    let first = compile_with(path, defines, limits);
    let has = match &first.result {
        Ok(plan) if plan.ranks.len() == nranks as usize => return first,
        Ok(plan) => plan.ranks.len(),
        Err(_) => return first,
    };
    let (sources, program) = parse_file(path);
    let stmts = match program {
        Ok(program) => program.stmts,
        Err(f) => {
            return Compilation {
                sources,
                result: Err(f),
                timings: first.timings,
                warnings: Vec::new(),
            }
        }
    };
    let mut fits = Vec::new();
    // A param -D sets that would decide the rank count: the two options
    // disagree, which the user settles.
    let mut set_apart = None;
    // The compile at `nranks` of the param whose default is the rank
    // count now, where it failed: what stopped it (a budget, a limit) is
    // why the program does not run on that many ranks. (Another param's
    // failure at N, a peer index say, says nothing of the rank count.)
    let mut deciding_failed = None;
    for param in params::declared(&stmts) {
        let name = param.name.to_string();
        if param.ty != "int" {
            continue;
        }
        let set = defines.iter().find(|(d, _)| *d == name);
        let mut with: Vec<(String, String)> = defines
            .iter()
            .filter(|(d, _)| *d != name)
            .cloned()
            .collect();
        with.push((name.clone(), nranks.to_string()));
        let c = compile_with(path, &with, limits);
        match (&c.result, set) {
            (Ok(plan), Some((_, value))) if plan.ranks.len() == nranks as usize => {
                set_apart.get_or_insert(format!("-D {name}={value}"));
            }
            (Ok(plan), None) if plan.ranks.len() == nranks as usize => fits.push((name, c)),
            (Err(_), None) if param.default_text(&sources) == has.to_string() => {
                deciding_failed.get_or_insert((name, c));
            }
            _ => {}
        }
    }
    // (Only where no other param fits: one may give N ranks while keeping
    // the -D, as a param whose default follows the one set.)
    if let (true, Some(define)) = (fits.is_empty(), set_apart) {
        let message = format!(
            "--nranks {nranks} and {define} disagree: that param decides the rank count ({has} as set); leave out one of the two"
        );
        return Compilation {
            sources: first.sources,
            result: Err(vec![Diagnostic::plain(Code::Options, message)]),
            timings: first.timings,
            warnings: Vec::new(),
        };
    }
    if fits.len() == 1 {
        return fits.pop().map(|(_, c)| c).unwrap_or(first);
    }
    if let (true, Some((name, mut c))) = (fits.is_empty(), deciding_failed) {
        let note = format!("with {name} = {nranks}, for --nranks {nranks}");
        if let Err(diags) = &mut c.result {
            for d in diags.iter_mut() {
                d.notes.push(note.clone());
            }
        }
        return c;
    }
    let message = if fits.is_empty() {
        format!(
            "--nranks {nranks}: no single param of {} makes it run on {nranks} ranks (it runs on {has} as set); set its params with -D",
            path.display()
        )
    } else {
        let names: Vec<String> = fits.into_iter().map(|(n, _)| format!("`{n}`")).collect();
        format!(
            "--nranks {nranks}: several params of {} give {nranks} ranks ({}); choose with -D",
            path.display(),
            names.join(", ")
        )
    };
    Compilation {
        sources: first.sources,
        result: Err(vec![Diagnostic::plain(Code::Ranks, message)]),
        timings: first.timings,
        warnings: Vec::new(),
    }
}

/// Compiles source text as if read from `path` (imports resolve next to it).
pub fn compile_source(path: &Path, text: String, defines: &[(String, String)]) -> Compilation {
    compile_source_with(path, text, defines, Limits::default())
}

/// `compile_source` within `limits` (tests of malformed programs give a
/// small loop budget).
pub fn compile_source_with(
    path: &Path,
    text: String,
    defines: &[(String, String)],
    limits: Limits,
) -> Compilation {
    compile_text(
        path,
        text,
        defines,
        limits,
        true,
        Instances::Now,
        Timings::default(),
    )
}

/// Compiles `text` as the file at `path` (`timings` has its reading, if it
/// was read), and looks for its plan's warnings if `warn`.
fn compile_text(
    path: &Path,
    text: String,
    defines: &[(String, String)],
    limits: Limits,
    warn: bool,
    instances: Instances,
    mut timings: Timings,
) -> Compilation {
    let mut sources = SourceMap::default();
    let result = (|| {
        let program = timings.time("parse", || load(&mut sources, path, text))?;
        let checked = timings.time("check", || crate::check::check(&program))?;
        let accepted = Accepted {
            sources: &sources,
            path,
            program: &program,
            checked: &checked,
        };
        plan_of(accepted, &mut timings, defines, limits, instances)
    })();
    compiled(sources, timings, result, warn)
}

/// The W0108 warnings of the files the user wrote (the standard library's
/// are ours): also beside an error, which a comment read as a division
/// may well have caused.
fn comment_divisions(sources: &SourceMap) -> Vec<Diagnostic> {
    sources
        .names()
        .enumerate()
        .filter(|(_, name)| !stdlib::is_module(name))
        .flat_map(|(file, _)| {
            let file = file as u32;
            crate::syntax::comment_division::comment_divisions(sources.source(file), file)
        })
        .collect()
}

/// A plan through the passes, with how its signals and waits balance
/// (what its warnings need not count again).
type Passed = (Plan, crate::passes::pairing::Balance);

/// A program the checker accepted: what it proved, and where the program
/// was read from (the shards of its evaluation parse it again).
#[derive(Clone, Copy)]
struct Accepted<'a> {
    sources: &'a SourceMap,
    path: &'a Path,
    program: &'a Program,
    checked: &'a Checked,
}

/// The plan of a checked program: evaluated with the `-D` settings, then
/// through the passes.
fn plan_of(
    accepted: Accepted<'_>,
    timings: &mut Timings,
    defines: &[(String, String)],
    limits: Limits,
    instances: Instances,
) -> Result<Passed, Vec<Diagnostic>> {
    let Accepted {
        sources,
        program,
        checked,
        ..
    } = accepted;
    let overrides = params::parse_defines(sources, &program.stmts, defines, limits.in_editor)?;
    let mut plan = timings
        .time("evaluate", || {
            shards::evaluate(accepted, defines, overrides.clone(), limits)
        })
        .map_err(|d| vec![d])?;
    let d = match timings.time("passes", || crate::passes::run(&mut plan, instances)) {
        Ok(balance) => return Ok((plan, balance)),
        Err(d) => d,
    };
    // Signals and waits that do not pair: fusion keeps their counts, not
    // every op's line. The report names the ops as the program made them,
    // so the program is run again, unfused, for it alone.
    let unfused = crate::eval::evaluate(
        program,
        checked,
        overrides,
        limits,
        crate::eval::Fusing::Never,
    )
    .map_err(|d| vec![d])?;
    Err(vec![crate::passes::pairing::check(&unfused)
        .err()
        .unwrap_or(d)])
}

/// A program as an editor sees it (`msclc lsp`): every diagnostic the
/// compiler gives, errors or the warnings of its plan, and what the checker
/// learnt of its names and expressions.
pub struct Analysis {
    pub sources: SourceMap,
    /// The parsed program; `None` when the main file or an import does
    /// not parse.
    pub program: Option<Program>,
    /// Empty when the program does not parse.
    pub index: crate::check::index::Index,
    pub diagnostics: Vec<Diagnostic>,
}

/// Analyses `text` as the program at `path` with the `-D` settings in
/// `defines`, keeping loop values for the warnings' notes (its instances
/// are not made: the warnings need none).
pub fn analyze(
    path: &Path,
    text: String,
    defines: &[(String, String)],
    limits: Limits,
) -> Analysis {
    analyze_with(path, text, defines, limits, &read_import)
}

/// `analyze`, with the imported files' texts as `read` gives them (an
/// editor's, for the files open in it).
pub fn analyze_with(
    path: &Path,
    text: String,
    defines: &[(String, String)],
    limits: Limits,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Analysis {
    let mut sources = SourceMap::default();
    let program = match load_with(&mut sources, path, text, read) {
        Ok(program) => program,
        Err(mut diagnostics) => {
            diagnostics.extend(comment_divisions(&sources));
            return Analysis {
                sources,
                program: None,
                index: Default::default(),
                diagnostics,
            };
        }
    };
    let (checked, index) = crate::check::check_indexed(&program);
    // A file of functions only is a library: it is checked, not run.
    let library = program
        .stmts
        .iter()
        .all(|s| matches!(s.kind, StmtKind::Fn(_) | StmtKind::Import { .. }));
    let mut diagnostics = match checked {
        Err(diagnostics) => diagnostics,
        Ok(_) if library => Vec::new(),
        Ok(checked) => match plan_of(
            Accepted {
                sources: &sources,
                path,
                program: &program,
                checked: &checked,
            },
            &mut Timings::default(),
            defines,
            limits,
            Instances::AsWritten,
        ) {
            Ok((plan, balance)) => crate::passes::warnings(&plan, balance),
            Err(diagnostics) => diagnostics,
        },
    };
    diagnostics.extend(comment_divisions(&sources));
    Analysis {
        sources,
        program: Some(program),
        index,
        diagnostics,
    }
}

/// Reads and parses the program at `path` with its imports, unchecked:
/// its sources (for rendering what went wrong), and the program or why
/// there is none.
pub fn parse_file(path: &Path) -> (SourceMap, Result<Program, Vec<Diagnostic>>) {
    let mut sources = SourceMap::default();
    let program = match read_main(path) {
        Ok(text) => load(&mut sources, path, text),
        Err(e) => Err(vec![unreadable(path, e)]),
    };
    (sources, program)
}

fn unreadable(path: &Path, e: std::io::Error) -> Diagnostic {
    Diagnostic::plain(
        Code::Unreadable,
        format!("cannot read {}: {e}", source_name(path)),
    )
}

/// Parses the main file and, transitively, the files it imports.
pub fn load(
    sources: &mut SourceMap,
    path: &Path,
    text: String,
) -> Result<Program, Vec<Diagnostic>> {
    load_with(sources, path, text, &read_import)
}

/// The text of the file at `full`, imported: only a regular file (a device
/// or pipe, `/dev/stdin` or a FIFO, could block for ever, or never end).
pub fn read_import(full: &Path) -> std::io::Result<String> {
    regular_file(full).and_then(|()| read_source(full))
}

/// `load`, with the imported files' texts as `read` gives them.
fn load_with(
    sources: &mut SourceMap,
    path: &Path,
    text: String,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<Program, Vec<Diagnostic>> {
    let file = sources.add(source_name(path), text);
    let stmts = crate::syntax::parse(file, sources.source(file)).map_err(|d| vec![d])?;
    let mut imported = Vec::new();
    // The main file among them: imported again (by itself, or by a file
    // it imports), its functions would be defined twice. (Standard input
    // is no file an import names: `import "-"` is the file `./-`.)
    let mut seen: HashSet<String> = HashSet::new();
    if path.as_os_str() != STDIN {
        seen.insert(file_identity(path));
    }
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    import_all(sources, read, &stmts, &base, &mut seen, &mut imported)?;
    Ok(Program { stmts, imported })
}

/// What makes two paths one file to import: the file's canonical path
/// (`lib/x.mscl` and `./lib/x.mscl` alike), or the path as given where it
/// has none (standard input).
fn file_identity(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

fn import_all(
    sources: &mut SourceMap,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
    stmts: &[Stmt],
    base: &Path,
    seen: &mut HashSet<String>,
    out: &mut Vec<Rc<FnDef>>,
) -> Result<(), Vec<Diagnostic>> {
    for stmt in stmts {
        let StmtKind::Import { path, path_span } = &stmt.kind else {
            continue;
        };
        // The file's name in messages, what makes it the same file as
        // another import, its text and where its own imports are.
        let (key, identity, text, next_base) = match path.strip_prefix("std/") {
            Some(name) => {
                let Some(text) = stdlib::text(path) else {
                    let names: Vec<&str> = stdlib::names().collect();
                    return Err(vec![Diagnostic::error(
                        Code::Import,
                        *path_span,
                        format!("no standard library module `{name}`"),
                        "unknown module",
                    )
                    .with_note(format!(
                        "the standard library has: {}",
                        if names.is_empty() {
                            "(nothing yet)".to_string()
                        } else {
                            names.join(", ")
                        }
                    ))]);
                };
                (
                    path.clone(),
                    path.clone(),
                    text.to_string(),
                    PathBuf::from("std"),
                )
            }
            None => {
                let full = base.join(path);
                let text = read(&full).map_err(|e| {
                    vec![Diagnostic::error(
                        Code::Import,
                        *path_span,
                        format!("cannot read `{}`: {e}", full.display()),
                        "imported here",
                    )]
                })?;
                let parent = full.parent().map(Path::to_path_buf).unwrap_or_default();
                (
                    full.display().to_string(),
                    file_identity(&full),
                    text,
                    parent,
                )
            }
        };
        if !seen.insert(identity) {
            continue;
        }
        let file = sources.add(key, text);
        let inner = crate::syntax::parse(file, sources.source(file)).map_err(|d| vec![d])?;
        for s in &inner {
            match &s.kind {
                StmtKind::Fn(f) => out.push(f.clone()),
                StmtKind::Import { .. } => {}
                _ => {
                    return Err(vec![Diagnostic::error(
                        Code::Import,
                        s.span,
                        "an imported file may only define functions",
                        "not a `fn` or `import`",
                    )
                    .with_secondary(*path_span, "imported here")])
                }
            }
        }
        import_all(sources, read, &inner, &next_base, seen, out)?;
    }
    Ok(())
}

//! The input of a command: a program compiled here, or a JSON execution
//! plan read and checked as a compiled program is.

use super::options::{print_warnings, LimitArgs, WarningArgs};
use super::outcome::{fail, fail_in, rendered, report, wrong};
use msclc::diag::{Code, Diagnostic};
use msclc::driver;
use std::process::ExitCode;

/// Whether `input` is a JSON execution plan rather than a program: named
/// `.json`, in any case (`PLAN.JSON`).
pub(crate) fn is_plan(input: &std::path::Path) -> bool {
    input
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// An E0802 error where a command that works on a program's params
/// (`tune`, `check --params`) is given a JSON plan, which has none.
pub(crate) fn refuse_plan(input: &std::path::Path, command: &str) -> Result<(), ExitCode> {
    if !is_plan(input) {
        return Ok(());
    }
    Err(fail(Diagnostic::plain(
        Code::Define,
        format!(
            "{command}: {} is a JSON plan, which has no params ({command} works on a program's params: give the .mscl program)",
            input.display()
        ),
    )))
}

/// A JSON plan given where a program may be (`check`, `compile --emit
/// cuda`, `run`): read, then checked as a compiled program is, for signals
/// without waits and for the executor's limits (warnings, as `warnings`
/// says).
pub(crate) fn read_checked_plan(
    input: &std::path::Path,
    (defines, limits): (&[(String, String)], &LimitArgs),
    how: Compile,
    warnings: &WarningArgs,
) -> Result<msclc::ir::Plan, ExitCode> {
    let loaded = load_plan(input, (defines, limits), how)?;
    checked_plan(loaded.plan, input, warnings)
}

/// `plan`, read from `input`, checked for signals without waits and for
/// the executor's limits (warnings, as `warnings` says).
pub(crate) fn checked_plan(
    plan: msclc::ir::Plan,
    input: &std::path::Path,
    warnings: &WarningArgs,
) -> Result<msclc::ir::Plan, ExitCode> {
    let balance = match msclc::passes::pairing::check(&plan) {
        Ok(balance) => balance,
        Err(d) => return Err(fail_in(None, input, d)),
    };
    let found = msclc::passes::warnings(&plan, balance);
    if !warnings.quiet {
        tell!("{}", rendered(None, input, &warnings.shown(&found)));
    }
    if warnings.denied(&found) {
        return Err(wrong());
    }
    Ok(plan)
}

/// How `load_plan` compiles a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compile {
    /// As it is.
    Plain,
    /// For this many ranks (`--nranks`).
    ForRanks(u32),
    /// Keeping loop values for reports (`msclc sim`), for this many ranks
    /// where given.
    ForReports(Option<u32>),
}

/// What `load_plan` gives.
pub(crate) struct Loaded {
    pub plan: msclc::ir::Plan,
    /// The program's sources, for reports that point into it (none for a
    /// JSON plan).
    pub sources: Option<msclc::diag::SourceMap>,
    /// The compile's warnings, where they are the caller's to report with
    /// its own (`Compile::ForReports`); else empty, reported here.
    pub warnings: Vec<Diagnostic>,
}

/// A program compiled as `how` says, with the params `defines` sets and
/// within `limits`, with its sources (for reports that point into it),
/// or a JSON plan read (where neither has anything to set); problems are
/// reported here, and give the exit code.
pub(crate) fn load_plan(
    input: &std::path::Path,
    (defines, limits): (&[(String, String)], &LimitArgs),
    how: Compile,
) -> Result<Loaded, ExitCode> {
    let nranks = match how {
        Compile::ForRanks(n) | Compile::ForReports(Some(n)) => Some(n),
        _ => None,
    };
    if is_plan(input) {
        if let Some((name, _)) = defines.first() {
            return Err(fail(Diagnostic::plain(
                Code::Define,
                format!(
                    "-D {name}: {} is a JSON plan, which has no params (-D sets a program's params)",
                    input.display()
                ),
            )));
        }
        limits.refuse_for_plan(input).map_err(fail)?;
        let text = std::fs::File::open(input)
            .and_then(|file| msclc::files::read_text(file, None))
            .map_err(|e| {
                fail(Diagnostic::plain(
                    Code::Unreadable,
                    format!("cannot read {}: {e}", input.display()),
                ))
            })?;
        let plan = plan_of_text(input, &text)?;
        if let Some(n) = nranks.filter(|n| *n as usize != plan.ranks.len()) {
            return Err(fail(Diagnostic::plain(Code::Ranks, format!(
                "--nranks {n}: {} is a plan for {} ranks; a JSON plan's rank count is fixed (compile the program for {n} ranks instead)",
                input.display(),
                plan.ranks.len()
            ))));
        }
        return Ok(Loaded {
            plan,
            sources: None,
            warnings: Vec::new(),
        });
    }
    let limits = limits.limits();
    let mut compiled = match how {
        Compile::ForRanks(n) => driver::compile_for_ranks(input, defines, n, limits),
        Compile::ForReports(Some(n)) => driver::compile_for_ranks(input, defines, n, limits),
        Compile::ForReports(None) => driver::compile_with(input, defines, limits),
        Compile::Plain => driver::compile_with(input, defines, limits),
    };
    // The plan is moved out, not copied: a large one is most of what the
    // command holds (`sim` estimates its own memory after this).
    match std::mem::replace(&mut compiled.result, Err(Vec::new())) {
        Ok(plan) => {
            let mut warnings = Vec::new();
            match how {
                Compile::Plain if !compiled.warnings.is_empty() => {
                    print_warnings(&compiled, &WarningArgs::default())
                }
                // (With the param `--nranks` set: the warnings as they are.)
                Compile::ForRanks(_) => tell!("{}", compiled.sources.render(&compiled.warnings)),
                // `sim` lists them with its verdict (and its own).
                Compile::ForReports(_) => warnings = std::mem::take(&mut compiled.warnings),
                Compile::Plain => {}
            }
            Ok(Loaded {
                plan,
                sources: Some(compiled.sources),
                warnings,
            })
        }
        Err(diags) => Err(report(&compiled.sources, &diags)),
    }
}

/// The plan `text`, the contents of `input`, reads as; where it is none,
/// the error, said (with a hint where the text is a program's).
pub(crate) fn plan_of_text(
    input: &std::path::Path,
    text: &str,
) -> Result<msclc::ir::Plan, ExitCode> {
    msclc::front::plan_json::read_plan(text).map_err(|e| {
        let mut d = e.diagnostic().in_plan(input);
        // A program in a file named as a plan: it opens with a word or
        // a comment, which no JSON does.
        let opening = text.trim_start_matches('\u{feff}').trim_start();
        if opening.starts_with(|c: char| c.is_ascii_alphabetic()) || opening.starts_with("//") {
            d = d.with_note(format!(
                "help: a plan is a JSON object, opening with `{{`; msclc reads a file whose name ends in `.json` as a plan: a program's file is named `.mscl` ({} as {})",
                input.display(),
                input.with_extension("mscl").display()
            ));
        }
        fail(d)
    })
}

/// Refuses outputs (each with the option that names it) of which one is a
/// file a compiled program imported: known once it compiled, and as much
/// the user's as the program itself (`distinct_outputs` checked that).
pub(crate) fn outputs_spare_imports(
    outputs: &[Output],
    sources: Option<&msclc::diag::SourceMap>,
) -> Result<(), Diagnostic> {
    let Some(sources) = sources else {
        return Ok(());
    };
    let imported = sources
        .names()
        .skip(1)
        .filter(|name| !msclc::vocab::stdlib::is_module(name));
    for name in imported {
        if let Some((flag, output, _)) = outputs
            .iter()
            .find(|(_, output, _)| msclc::files::same_file(output, std::path::Path::new(name)))
        {
            let also = if output.display().to_string() == name {
                String::new()
            } else {
                format!(" (as {name})")
            };
            return Err(Diagnostic::plain(
                Code::Options,
                format!(
                    "{flag} {} is a file the program imports{also}: writing there would overwrite it; name another output file",
                    output.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `path` is a character device, which a write goes through
/// rather than into a file.
fn is_device(path: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

/// An output a command writes: the flag that names it, the path given,
/// and a file name to suggest where the path is a folder (`plan.cu`).
pub(crate) type Output<'a> = (&'static str, &'a std::path::Path, &'static str);

/// Refuses outputs (each with the option that names it) of which one is
/// a folder, in a folder that is not there, a file its user may not
/// write, an input of the command (the program or plan, a topology file)
/// or another output: writing it would fail after the work (and after
/// another output was written), or overwrite what the command reads, or
/// what the other output wrote.
pub(crate) fn distinct_outputs(
    outputs: &[Output],
    inputs: &[&std::path::Path],
) -> Result<(), Diagnostic> {
    use msclc::files::same_file;
    for (i, &(flag, output, example)) in outputs.iter().enumerate() {
        let named_as_folder = output
            .as_os_str()
            .to_string_lossy()
            .ends_with(std::path::is_separator);
        if output.is_dir() || named_as_folder {
            return Err(Diagnostic::plain(
                Code::Unreadable,
                format!(
                    "{flag} {}: a folder, not a file: name the file to write (as {})",
                    output.display(),
                    output.join(example).display()
                ),
            ));
        }
        let folder = output.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(folder) = folder.filter(|f| !f.is_dir()) {
            let why = if folder.exists() {
                format!("{} is a file, not a folder:", folder.display())
            } else {
                format!("there is no folder {}: make it, or", folder.display())
            };
            return Err(Diagnostic::plain(
                Code::Unreadable,
                format!(
                    "{flag} {}: {why} name a file in a folder that is there",
                    output.display()
                ),
            ));
        }
        if let Err(e) = msclc::files::may_replace(output) {
            return Err(Diagnostic::plain(
                Code::Unreadable,
                format!("{flag} {}: cannot write it: {e}", output.display()),
            ));
        }
        if inputs.iter().any(|input| same_file(output, input)) {
            return Err(Diagnostic::plain(
                Code::Options,
                format!(
                    "{flag} {} is an input file: writing there would overwrite it; name another output file",
                    output.display()
                ),
            ));
        }
        // A device (`/dev/null`, a terminal) takes what each output
        // writes, one after the other: nothing is overwritten.
        if is_device(output) {
            continue;
        }
        // Not there yet, two outputs of one name are still one file
        // (`./t.json` and `t.json` too).
        let named = |p: &std::path::Path| {
            std::path::absolute(p)
                .map(|p| msclc::files::lexical(&p))
                .ok()
        };
        let earlier = outputs[..i]
            .iter()
            .find(|(_, other, _)| named(other) == named(output) || same_file(other, output));
        if let Some((other_flag, ..)) = earlier {
            return Err(Diagnostic::plain(
                Code::Options,
                format!(
                    "{other_flag} and {flag} both name {}: the second would overwrite the first; name two files",
                    output.display()
                ),
            ));
        }
    }
    Ok(())
}

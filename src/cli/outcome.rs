//! How a command ends: the diagnostics it prints and the exit code they
//! give, the same for every command (0 done, 1 the program or plan is
//! wrong, 2 msclc could not do what was asked).

use msclc::diag::{Diagnostic, SourceMap};
use std::process::ExitCode;

/// The exit code for a program or plan that is wrong: an error, a warning
/// under `--deny-warnings`, a simulation or a run that finds a wrong
/// result, a race or a deadlock.
pub(crate) fn wrong() -> ExitCode {
    ExitCode::from(1)
}

/// Prints `diags` against `sources`; the exit code they give: 2 when one
/// is a problem msclc could not do (a file it cannot read or write, a `-D`
/// the program has no param for, no GPU, a memory bound: the E08xx codes;
/// clap exits 2 for its usage errors too), else 1.
pub(crate) fn report(sources: &SourceMap, diags: &[Diagnostic]) -> ExitCode {
    tell!("{}", sources.render(diags));
    let status = diags.iter().map(|d| d.exit_status()).max().unwrap_or(1);
    ExitCode::from(status)
}

/// Prints a problem that has no place in a program; its exit code.
pub(crate) fn fail(d: Diagnostic) -> ExitCode {
    report(&SourceMap::default(), &[d])
}

/// `diags` about `input`, rendered against its sources when it is a
/// program compiled here; about a JSON plan (no sources), without labels
/// and naming the file where they had a place.
pub(crate) fn rendered(
    sources: Option<&SourceMap>,
    input: &std::path::Path,
    diags: &[Diagnostic],
) -> String {
    match sources {
        Some(sources) => sources.render(diags),
        None => {
            let about_plan: Vec<Diagnostic> = diags
                .iter()
                .map(|d| match d.span() {
                    Some(_) => d.clone().in_plan(input),
                    None => d.clone(),
                })
                .collect();
            SourceMap::default().render(&about_plan)
        }
    }
}

/// Prints `d`, a problem with `input` (see `rendered`); its exit code.
pub(crate) fn fail_in(
    sources: Option<&SourceMap>,
    input: &std::path::Path,
    d: Diagnostic,
) -> ExitCode {
    tell!("{}", rendered(sources, input, std::slice::from_ref(&d)));
    ExitCode::from(d.exit_status())
}

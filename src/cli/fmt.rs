//! `msclc fmt`: .mscl files laid out canonically, in place.

use clap::Args;
use msclc::diag::{Code, Diagnostic, SourceMap};
use msclc::driver;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct FmtArgs {
    /// The .mscl files to rewrite; `-` formats standard input to standard
    /// output.
    #[arg(required = true, value_hint = clap::ValueHint::FilePath)]
    pub(crate) files: Vec<PathBuf>,
    /// Write nothing: print each file that is not formatted, one path a
    /// line, and exit 1 if there is one (for CI).
    #[arg(long)]
    pub(crate) check: bool,
}

/// `msclc fmt`: every file is formatted (or checked), whatever becomes of
/// the others; the exit code is the worst any of them gets.
pub(crate) fn exec(args: &FmtArgs) -> ExitCode {
    // A second `-` would read standard input after the first took all of
    // it, and print an empty program.
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        let d = Diagnostic::plain(
            Code::Options,
            "`-` (standard input) is named more than once: it can be read once",
        );
        tell!("{}", SourceMap::default().render(std::slice::from_ref(&d)));
        return ExitCode::from(d.exit_status());
    }
    let worst = args
        .files
        .iter()
        .map(|path| format_file(path, args.check))
        .max()
        .unwrap_or(0);
    ExitCode::from(worst)
}

/// Formats the file at `path` in place, if that changes it (`-`: standard
/// input, written formatted to standard output), or with `check` only
/// prints its path if it would change. Prints what went wrong; the exit
/// status: 0, 1 when it does not parse or is not formatted under `check`,
/// 2 when it cannot be read or written.
pub(crate) fn format_file(path: &std::path::Path, check: bool) -> u8 {
    let stdin = path.as_os_str() == "-";
    let unusable = |what: String| {
        let d = Diagnostic::plain(Code::Unreadable, what);
        tell!("{}", SourceMap::default().render(std::slice::from_ref(&d)));
        d.exit_status()
    };
    // In place means a file: written into, a pipe (`/dev/stdin`) would
    // take the text back to no reader, and a device would swallow it.
    if !stdin && !check && std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return unusable(format!(
            "cannot format {} in place: it is not a file; `msclc fmt -` formats standard input to standard output",
            path.display()
        ));
    }
    let name = driver::source_name(path);
    let read = match stdin {
        true => stdin_text(!check),
        false => driver::read_main(path),
    };
    let text = match read {
        Ok(text) => text,
        Err(e) if stdin => return unusable(format!("cannot read standard input: {e}")),
        Err(e) => return unusable(format!("cannot read {name}: {e}")),
    };
    let mut sources = SourceMap::default();
    let file = sources.add(name.clone(), text);
    let text = sources.source(file);
    let to_stdout = |text: &str| {
        let mut out = std::io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => 0,
            Err(e) => unusable(format!("cannot write standard output: {e}")),
        }
    };
    let formatted = match msclc::format::format_source(file, text) {
        Ok(formatted) => formatted,
        Err(d) => {
            tell!("{}", sources.render(std::slice::from_ref(&d)));
            // Standard input is left as it is by writing it back: an
            // editor that pipes its buffer through `msclc fmt -` keeps the
            // text rather than an empty buffer.
            if stdin && !check {
                return d.exit_status().max(to_stdout(text));
            }
            return d.exit_status();
        }
    };
    let changed = formatted != text;
    if check {
        if changed {
            sayln!("{name}");
        }
        return u8::from(changed);
    }
    if stdin {
        return to_stdout(&formatted);
    } else if changed {
        if let Err(e) = msclc::files::write(path, formatted.as_bytes()) {
            return unusable(format!("cannot write {name}: {e}"));
        }
    }
    0
}

/// Standard input as text; where it is none (not UTF-8, larger than a
/// source may be), why, with the bytes written back to standard output
/// as they came when `echo`: as for text that does not parse, an editor
/// that pipes its buffer through `msclc fmt -` keeps it.
fn stdin_text(echo: bool) -> std::io::Result<String> {
    use std::io::Read;
    let most = msclc::syntax::MAX_SOURCE_BYTES;
    let mut input = std::io::stdin().lock();
    let mut bytes = Vec::new();
    (&mut input).take(most + 1).read_to_end(&mut bytes)?;
    // Judged as any source is, for the same message.
    let text = msclc::files::read_text(&bytes[..], Some(most));
    if text.is_err() && echo {
        let mut out = std::io::stdout().lock();
        out.write_all(&bytes)?;
        std::io::copy(&mut input, &mut out)?;
        out.flush()?;
    }
    text
}

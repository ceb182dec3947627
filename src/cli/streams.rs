//! Standard output and error as every command writes them. A write that
//! fails (a full disk behind a redirection, a terminal gone) does not stop
//! the command halfway with a panic, as `print!` would: it is remembered,
//! and the command then ends with E0801 and exit code 2 (`command`).

use std::io::Write;
use std::sync::Mutex;

/// The first write error, and the stream it hit.
static FAILED: Mutex<Option<(&'static str, String)>> = Mutex::new(None);

pub fn remember_error<T>(stream: &'static str, result: &std::io::Result<T>) {
    if let Err(e) = result {
        let mut failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
        failed.get_or_insert((stream, e.to_string()));
    }
}

pub fn out(text: std::fmt::Arguments) {
    // `Stdout` remembers what fails.
    let _ = Stdout.write_fmt(text).and_then(|()| Stdout.flush());
}

pub fn err(text: std::fmt::Arguments) {
    remember_error("standard error", &std::io::stderr().lock().write_fmt(text));
}

/// Standard output for code that writes to a `Write`: its errors are
/// remembered as `out`'s are.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = std::io::stdout().lock().write(buf);
        remember_error("standard output", &written);
        written
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let flushed = std::io::stdout().lock().flush();
        remember_error("standard output", &flushed);
        flushed
    }
}

/// The first write that failed: the stream and why.
pub fn failure() -> Option<(&'static str, String)> {
    FAILED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// `print!` to standard output, its failure remembered (`streams`).
macro_rules! say {
    ($($arg:tt)*) => { $crate::cli::streams::out(format_args!($($arg)*)) };
}

/// `println!` to standard output, its failure remembered (`streams`).
macro_rules! sayln {
    ($($arg:tt)*) => { $crate::cli::streams::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` to standard error, its failure remembered (`streams`).
macro_rules! tell {
    ($($arg:tt)*) => { $crate::cli::streams::err(format_args!($($arg)*)) };
}

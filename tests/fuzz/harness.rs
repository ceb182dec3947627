//! Running the binary on an input under the fuzzer's limits, and judging
//! how the run ended.

use super::*;

/// What the input of a run is, for judging its exit.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Input {
    /// A `.mscl` program: a failed compilation must point into it.
    Source,
    /// A JSON plan: read by `sim` only.
    Plan,
}

/// What one run of the binary did.
pub(crate) struct Outcome {
    /// `None`: killed after [`TIME_LIMIT`].
    pub(crate) status: Option<ExitStatus>,
    pub(crate) elapsed: Duration,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Outcome {
    pub(crate) fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }
}

/// Runs the binary on files in a scratch directory, judges every exit, and
/// keeps what failed (the directory goes when the harness drops, unless it
/// drops in a panic: a failure).
pub(crate) struct Harness {
    pub(crate) test: String,
    pub(crate) dir: common::Scratch,
    pub(crate) failures: Vec<String>,
    /// The slowest runs, to show inputs that are slow without hanging.
    pub(crate) slowest: Vec<(Duration, String)>,
    pub(crate) runs: usize,
    pub(crate) started: Instant,
    /// `MSCLC_FUZZ_SHOW=1`: print every input and how its run ended.
    pub(crate) show: bool,
    /// How runs ended, by command and exit code: how deep the inputs get.
    pub(crate) tally: std::collections::BTreeMap<String, usize>,
}

impl Harness {
    pub(crate) fn new(test: &str) -> Harness {
        let dir = common::scratch(&format!("fuzz-{test}"));
        Harness {
            test: test.to_string(),
            dir,
            failures: Vec::new(),
            slowest: Vec::new(),
            runs: 0,
            started: Instant::now(),
            show: std::env::var("MSCLC_FUZZ_SHOW").is_ok_and(|v| v == "1"),
            tally: Default::default(),
        }
    }

    pub(crate) fn write(&self, name: &str, bytes: impl AsRef<[u8]>) {
        std::fs::write(self.dir.join(name), bytes).expect("writable scratch directory");
    }

    /// Runs `msclc ARGS` in the scratch directory under the time limit and
    /// the memory cap. Output goes to files, not pipes: a diagnostic that
    /// quotes a megabyte-long line must not block the child while we wait.
    pub(crate) fn exec(&mut self, args: &[String]) -> Outcome {
        let file = |name: &str| std::fs::File::create(self.dir.join(name)).expect("output file");
        let start = Instant::now();
        // `ulimit -v` in a shell that then execs the binary: the cap needs no
        // crate, and the child we kill on a timeout is msclc itself.
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("ulimit -v {MEMORY_LIMIT_KB} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_msclc"))
            .args(args)
            .current_dir(&self.dir)
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(file("stdout.txt"))
            .stderr(file("stderr.txt"))
            .spawn()
            .expect("/bin/sh runs");
        // Most runs take milliseconds: poll often at first, then less.
        let mut pause = Duration::from_micros(250);
        let status = loop {
            if let Some(status) = child.try_wait().expect("waitable child") {
                break Some(status);
            }
            if start.elapsed() > TIME_LIMIT {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        };
        let elapsed = start.elapsed();
        let read = |name: &str| {
            let bytes = std::fs::read(self.dir.join(name)).unwrap_or_default();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        self.runs += 1;
        Outcome {
            status,
            elapsed,
            stdout: read("stdout.txt"),
            stderr: read("stderr.txt"),
        }
    }

    /// Runs `args` (which name `input`, a file in the scratch directory),
    /// judges the exit, and records a failure if it is wrong.
    pub(crate) fn run(&mut self, case: &str, input: &str, kind: Input, args: &[String]) -> Outcome {
        let outcome = self.exec(args);
        let command = match args.iter().position(|a| a == "--emit") {
            Some(_) => "compile --emit cuda",
            None => args[0].as_str(),
        };
        let ended = match outcome.code() {
            Some(code) => format!(
                "{command} {input_kind} exit {code}",
                input_kind = if kind == Input::Plan {
                    "plan"
                } else {
                    "program"
                }
            ),
            None => format!("{command} crashed or hung"),
        };
        *self.tally.entry(ended).or_default() += 1;
        if self.show {
            let text = std::fs::read(self.dir.join(input)).unwrap_or_default();
            eprintln!(
                "==== {case}: msclc {} -> {:?} in {:.3} s\n{}\n---- stderr\n{}",
                args.join(" "),
                outcome.code(),
                outcome.elapsed.as_secs_f64(),
                clip(&String::from_utf8_lossy(&text), 3000),
                clip(&outcome.stderr, 600)
            );
        }
        self.note_time(case, args, outcome.elapsed);
        if let Some(problem) = judge(kind, args, &outcome) {
            self.fail(case, input, args, &problem, &outcome);
        }
        outcome
    }

    pub(crate) fn note_time(&mut self, case: &str, args: &[String], elapsed: Duration) {
        self.slowest
            .push((elapsed, format!("{case}: msclc {}", args.join(" "))));
        self.slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
        self.slowest.truncate(3);
    }

    /// Keeps the input under a name of its own and describes the failure.
    pub(crate) fn fail(
        &mut self,
        case: &str,
        input: &str,
        args: &[String],
        problem: &str,
        o: &Outcome,
    ) {
        let ext = Path::new(input)
            .extension()
            .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
        let kept = self
            .dir
            .join(format!("failure-{}{ext}", self.failures.len() + 1));
        let _ = std::fs::copy(self.dir.join(input), &kept);
        let text = String::from_utf8_lossy(&std::fs::read(&kept).unwrap_or_default()).into_owned();
        let shown: String = text.chars().take(2000).collect();
        let command: Vec<String> = args
            .iter()
            .map(|a| {
                if a == input {
                    kept.display().to_string()
                } else {
                    format!("{a:?}")
                }
            })
            .collect();
        let stderr_tail: String = {
            let chars: Vec<char> = o.stderr.chars().collect();
            chars[chars.len().saturating_sub(800)..].iter().collect()
        };
        self.failures.push(format!(
            "{case}: {problem} after {:.1} s\n  command: msclc {}\n  input kept at {} ({} bytes)\n  stderr (end):\n{}\n  input (first 2000 chars):\n{shown}",
            o.elapsed.as_secs_f64(),
            command.join(" "),
            kept.display(),
            text.len(),
            indent(&stderr_tail),
        ));
    }

    /// Says what was run, how long it took and the slowest runs; fails the
    /// test with every failure, keeping the scratch directory for them.
    pub(crate) fn finish(self) {
        eprintln!(
            "fuzz {}: {} runs in {:.1} s; slowest:",
            self.test,
            self.runs,
            self.started.elapsed().as_secs_f64()
        );
        for (t, what) in &self.slowest {
            eprintln!("  {:.2} s  {}", t.as_secs_f64(), clip(what, 300));
        }
        let ends: Vec<String> = self
            .tally
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        eprintln!("  how runs ended: {}", ends.join(", "));
        if self.failures.is_empty() {
            return;
        }
        let shown: Vec<&String> = self.failures.iter().take(8).collect();
        panic!(
            "{} failing input(s) (kept in {}); the first {}:\n\n{}",
            self.failures.len(),
            self.dir.display(),
            shown.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        );
    }
}

pub(crate) fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn clip(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        text.to_string()
    } else {
        text.chars().take(n).collect::<String>() + "..."
    }
}

/// What is wrong with a run, if anything.
pub(crate) fn judge(kind: Input, args: &[String], o: &Outcome) -> Option<String> {
    let Some(status) = o.status else {
        return Some(format!(
            "still running after {} s (killed)",
            TIME_LIMIT.as_secs()
        ));
    };
    if let Some(signal) = status.signal() {
        let name = match signal {
            6 => "SIGABRT: a stack overflow or a failed allocation",
            9 => "SIGKILL",
            11 => "SIGSEGV",
            _ => "",
        };
        return Some(format!("killed by signal {signal} {name}"));
    }
    if o.stderr.contains("panicked") {
        return Some("panicked".to_string());
    }
    let code = status.code().unwrap_or(-1);
    if !(0..=2).contains(&code) {
        return Some(format!("exit code {code}"));
    }
    let sim = args.first().is_some_and(|a| a == "sim");
    if code == 2 && o.stderr.contains("Usage:") {
        // clap's usage errors: the test built a bad command line.
        return Some("exit code 2, a usage error of the command line".to_string());
    }
    if code == 2 && !o.stderr.starts_with("error[E08") {
        // What msclc could not do (a bad `-D`, a memory bound): one error
        // of the E08xx codes.
        return Some("exit code 2 without `error[E08..]: ...`".to_string());
    }
    // Every command exits 1 on a wrong program or plan; `sim` prints its
    // verdict on stdout when it could run the input, and nothing when it
    // could not compile or read it (exit 1) or not afford it (exit 2).
    let refused = if sim {
        code != 0 && o.stdout.trim().is_empty()
    } else {
        code == 1
    };
    if refused && o.stderr.trim().is_empty() {
        return Some(format!("exit code {code} with nothing on stderr"));
    }
    if sim && code == 0 && o.stdout.trim().is_empty() {
        return Some("exit code 0 with no verdict on stdout".to_string());
    }
    if refused && kind == Input::Source && !located(&o.stderr) && !plain_error(&o.stderr) {
        return Some("a failed compilation without a NAME.mscl:LINE:COL location".to_string());
    }
    if refused && kind == Input::Plan && !o.stderr.starts_with("error[E") {
        return Some("a refused plan without `error[E....]: ...`".to_string());
    }
    None
}

/// Whether stderr has a rendered diagnostic with its location: a line
/// `┌─ PATH:LINE:COL`.
pub(crate) fn located(stderr: &str) -> bool {
    stderr.lines().any(|line| {
        let Some((_, at)) = line.split_once("┌─ ") else {
            return false;
        };
        let mut parts = at.trim_end().rsplitn(3, ':');
        let col = parts.next().unwrap_or("");
        let line = parts.next().unwrap_or("");
        let path = parts.next().unwrap_or("");
        !path.is_empty()
            && [line, col]
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Errors that rightly have no location in the program.
pub(crate) fn plain_error(stderr: &str) -> bool {
    [
        // A `-D NAME=VALUE` for no param: the command line, not the program.
        "error[E0802]: -D ",
        // `sim`: the plan compiled, but would take too much memory.
        "error[E0805]: simulating this plan",
        // A file that is not UTF-8: the message says where, in bytes, line
        // and column, as the text has no lines the renderer can show.
        "error[E0801]: cannot read case.mscl: it is not UTF-8: byte ",
    ]
    .iter()
    .any(|p| stderr.starts_with(p))
}

pub(crate) fn args(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

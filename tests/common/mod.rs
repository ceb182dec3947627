//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Once, OnceLock};

/// Every `.mscl` file under examples/, sorted.
#[allow(dead_code)]
pub fn example_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("examples dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "mscl") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
        &mut files,
    );
    files.sort();
    files
}

/// `-D NAME=VALUE` settings, as the driver takes them.
#[allow(dead_code)]
pub type Defines = Vec<(String, String)>;

/// Every example, each with no settings (its params' defaults): the start
/// of a list of cases that adds some at other settings.
#[allow(dead_code)]
pub fn example_cases() -> Vec<(PathBuf, Defines)> {
    example_files()
        .into_iter()
        .map(|f| (f, Vec::new()))
        .collect()
}

/// Whether this machine has the NVIDIA driver library.
#[allow(dead_code)] // not every test file that shares this module needs it
pub fn has_cuda_driver() -> bool {
    ["libcuda.so", "libcuda.so.1"].iter().any(|lib| {
        // SAFETY: only opens and closes the library.
        unsafe { libloading::Library::new(*lib) }.is_ok()
    })
}

/// ../shared, where the reference compiler and its plans are when this
/// checkout has them.
#[allow(dead_code)]
pub fn shared_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

/// The cases of ../shared/conformance/manifest.json: each reference plan,
/// the port that must compile to it, and the params it was made with.
#[allow(dead_code)]
pub fn conformance_manifest() -> Vec<serde_json::Value> {
    let path = shared_dir().join("conformance/manifest.json");
    let text = std::fs::read_to_string(&path).expect("manifest.json");
    serde_json::from_str(&text).expect("manifest is JSON")
}

/// A manifest case's params as `-D NAME=VALUE` settings.
#[allow(dead_code)]
pub fn manifest_params(case: &serde_json::Value) -> Vec<(String, String)> {
    let Some(map) = case["params"].as_object() else {
        return Vec::new();
    };
    map.iter()
        .map(|(k, v)| {
            let value = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            (k.clone(), value)
        })
        .collect()
}

/// ../shared and the reference's PYTHONPATH, or why the reference cannot
/// run here.
#[allow(dead_code)]
pub fn reference_setup() -> Result<(PathBuf, String), String> {
    let shared = shared_dir();
    let dsl = shared.join("reference-dsl");
    if !dsl.exists() {
        return Err(format!("{} not found", dsl.display()));
    }
    let mut pythonpath = dsl.display().to_string();
    if let Ok(extra) = std::env::var("MSCLC_PYTHONPATH") {
        pythonpath = format!("{pythonpath}:{extra}");
    }
    let python_ready = Command::new("python3")
        .args(["-c", "import sortedcontainers"])
        .env("PYTHONPATH", &pythonpath)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !python_ready {
        return Err("python3 cannot import sortedcontainers \
                    (MSCLC_PYTHONPATH adds a folder that has it to Python's path)"
            .into());
    }
    Ok((shared, pythonpath))
}

/// The C++ compiler (`$CXX`, else `c++`) when it builds a C++ program, and
/// with `sanitize`, one under ThreadSanitizer that then runs; asked once.
#[allow(dead_code)]
pub fn cxx_compiler(sanitize: bool) -> Option<String> {
    static FOUND: [OnceLock<Option<String>>; 2] = [const { OnceLock::new() }; 2];
    FOUND[usize::from(sanitize)]
        .get_or_init(|| {
            let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
            let dir = scratch(if sanitize {
                "cxx-probe-tsan"
            } else {
                "cxx-probe-plain"
            });
            let probe = dir.join("probe.cpp");
            std::fs::write(&probe, "int main() { return 0; }\n").ok()?;
            let mut cmd = Command::new(&cxx);
            if sanitize {
                cmd.arg("-fsanitize=thread");
            }
            let ok = cmd
                .arg(&probe)
                .arg("-o")
                .arg(dir.join("probe"))
                .output()
                .is_ok_and(|o| o.status.success())
                && (!sanitize
                    || Command::new(dir.join("probe"))
                        .status()
                        .is_ok_and(|s| s.success()));
            ok.then_some(cxx)
        })
        .clone()
}

/// A test's scratch folder, `msclc-{name}-{pid}` in the temp dir, made
/// fresh and removed when this drops: tests that left theirs behind filled
/// /tmp with a thousand folders. A failing test (its thread panicking) keeps
/// it, and says where, for inspection. Derefs to the folder's path.
#[allow(dead_code)]
pub struct Scratch(PathBuf);

/// A fresh scratch folder for the test `name` (unique within its test file).
#[allow(dead_code)]
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("msclc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    Scratch(dir)
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} for inspection", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The measured tables in benches/results (`*.txt`), sorted.
#[allow(dead_code)]
pub fn gpu_results() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/results");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "txt"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Where Debian's package puts Chromium.
#[allow(dead_code)]
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// What a test needs that a machine may lack. Where it is missing, the
/// test does not run: `cargo test` reports it `ignored (needs ...)`,
/// counted in the file's summary line, instead of "ok", and says why once
/// (`skipped: ...`).
#[allow(dead_code)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Nothing beyond this checkout.
    Nothing,
    /// The reference's plans, ../shared/conformance.
    Conformance,
    /// The reference compiler: ../shared/reference-dsl and python3 with
    /// `sortedcontainers`. CI must have it where it has ../shared.
    Reference,
    /// NVRTC (no GPU needed). CI must have it.
    Nvrtc,
    /// A CUDA driver and NVRTC: a GPU to run on.
    Gpu,
    /// No CUDA driver, to see `msclc run` say so.
    NoCudaDriver,
    /// A C++ compiler, to run generated kernels on the CPU.
    Cxx,
    /// A C++ compiler that builds with ThreadSanitizer.
    CxxTsan,
    /// Chromium, to render SVG pictures headless. CI must have it.
    Chromium,
    /// GPU measurements of `msclc run` in benches/results, to check the
    /// timing model against.
    GpuResults,
}

#[allow(dead_code)]
impl Needs {
    /// Why this machine cannot run a test that needs `self`, or `None`
    /// when it can; asked once per test file.
    pub fn missing(self) -> Option<String> {
        static ANSWERS: [OnceLock<Option<String>>; 10] = [const { OnceLock::new() }; 10];
        ANSWERS[self as usize].get_or_init(|| self.probe()).clone()
    }

    fn probe(self) -> Option<String> {
        match self {
            Needs::Nothing => None,
            Needs::Conformance => {
                let dir = shared_dir().join("conformance");
                (!dir.exists()).then(|| format!("{} not found", dir.display()))
            }
            Needs::Reference => reference_setup().err(),
            Needs::Nvrtc => msclc::runner::nvrtc::load().err(),
            Needs::Gpu if !has_cuda_driver() => {
                Some("no CUDA driver (libcuda.so) on this machine".into())
            }
            Needs::Gpu => msclc::runner::nvrtc::load().err(),
            Needs::NoCudaDriver => has_cuda_driver().then(|| {
                "this machine has a CUDA driver (the other tests in tests/gpu.rs run the GPU)"
                    .into()
            }),
            Needs::Cxx => cxx_compiler(false)
                .is_none()
                .then(|| "no C++ compiler (set CXX) to run generated kernels on the CPU".into()),
            Needs::CxxTsan => cxx_compiler(true)
                .is_none()
                .then(|| "the C++ compiler cannot build with -fsanitize=thread".into()),
            Needs::Chromium => (!Path::new(CHROMIUM).exists())
                .then(|| "chromium not installed (apt-get install chromium)".into()),
            Needs::GpuResults => gpu_results().is_empty().then(|| {
                "benches/results holds no GPU measurements of `msclc run` yet \
                 (benches/gpu_results.sh makes them on a machine with a GPU)"
                    .into()
            }),
        }
    }

    /// What the line of an ignored test says.
    fn label(self) -> &'static str {
        match self {
            Needs::Nothing => "needs nothing",
            Needs::Conformance => "needs ../shared/conformance",
            Needs::Reference => "needs the reference compiler",
            Needs::Nvrtc => "needs NVRTC",
            Needs::Gpu => "needs a GPU",
            Needs::NoCudaDriver => "needs a machine without a CUDA driver",
            Needs::Cxx => "needs a C++ compiler",
            Needs::CxxTsan => "needs a C++ compiler with ThreadSanitizer",
            Needs::Chromium => "needs Chromium",
            Needs::GpuResults => "needs GPU measurements",
        }
    }

    /// Says why tests that need `self` are ignored, once per test file
    /// (the reason can be long: NVRTC's lists where it looked).
    fn say_once(self, why: &str) {
        static SAID: [Once; 10] = [const { Once::new() }; 10];
        SAID[self as usize].call_once(|| eprintln!("skipped: {why}"));
    }

    /// Where this machine must have what is needed (CI=true), what to say
    /// when it does not: the test fails there instead of being ignored.
    fn required_here(self) -> Option<&'static str> {
        if !std::env::var("CI").is_ok_and(|v| v == "true") {
            return None;
        }
        match self {
            Needs::Nvrtc => Some("CI must have NVRTC (.ci/run installs it)"),
            Needs::Reference if shared_dir().exists() => {
                Some("CI must run the reference (.ci/run installs sortedcontainers)")
            }
            Needs::Chromium => Some("CI must have Chromium (.ci/run installs it)"),
            _ => None,
        }
    }
}

/// A test of a file whose harness is `run`: its name (what `cargo test`
/// prints and filters on), what it needs, and its body, which fails by
/// panicking as a `#[test]` does.
#[allow(dead_code)]
pub struct Test {
    name: &'static str,
    needs: Needs,
    body: fn(),
    ignored: Option<&'static str>,
}

#[allow(dead_code)]
pub fn test(name: &'static str, needs: Needs, body: fn()) -> Test {
    Test {
        name,
        needs,
        body,
        ignored: None,
    }
}

#[allow(dead_code)]
impl Test {
    /// As `#[ignore = "why"]`: runs only with `--ignored` or
    /// `--include-ignored`, and says `why` where it does not run.
    pub fn ignored(self, why: &'static str) -> Test {
        Test {
            ignored: Some(why),
            ..self
        }
    }
}

/// The harness of the test files that need what a machine may lack
/// (`harness = false` in Cargo.toml): runs `tests` as libtest would, with
/// its arguments (a name filter, `--skip`, `--exact`, `--ignored`,
/// `--include-ignored`, `--test-threads`, `--list`), and exits.
///
/// A test whose needs are missing reports `ignored (needs ...)` and does
/// not run its body, with `--include-ignored` and `--ignored` too: it
/// cannot run here, and ignored is what it is (not "ok", and not a failure
/// that a machine without a GPU could never clear). Where CI must have
/// what it needs (`Needs::required_here`), it fails instead. Unlike
/// libtest, this harness does not capture a test's output: what a test
/// prints shows.
#[allow(dead_code)]
pub fn run(tests: Vec<Test>) -> ! {
    let args = libtest_mimic::Arguments::from_args();
    let asked = args.ignored || args.include_ignored;
    let trials = tests.into_iter().map(|t| trial(t, asked)).collect();
    libtest_mimic::run(&args, trials).exit()
}

/// `test` as a trial; an ignored one runs where `asked` (`--ignored`,
/// `--include-ignored`), and elsewhere is reported ignored with its reason.
fn trial(test: Test, asked: bool) -> libtest_mimic::Trial {
    use libtest_mimic::{Completion, Failed, Trial};
    let Test {
        name,
        needs,
        body,
        ignored,
    } = test;
    let only_if_asked = ignored.filter(|_| !asked);
    Trial::ignorable_test(name, move || {
        if let Some(why) = only_if_asked {
            return Ok(Completion::ignored_with(why));
        }
        if let Some(why) = needs.missing() {
            return match needs.required_here() {
                Some(rule) => Err(format!("{rule}: {why}").into()),
                None => {
                    needs.say_once(&why);
                    Ok(Completion::ignored_with(needs.label()))
                }
            };
        }
        // On a thread named after the test, as libtest runs it, so that a
        // panic message says which test panicked.
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(body)
            .map_err(|e| Failed::from(format!("cannot start the test: {e}")))?;
        thread.join().map_err(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            Failed::from(format!("test panicked: {message}"))
        })?;
        Ok(Completion::Completed)
    })
    .with_ignored_flag(ignored.is_some() && asked)
}

/// Where two plans (ours, the reference's) first differ: the JSON path
/// and both values.
#[allow(dead_code)]
pub fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    path: &str,
) -> Option<String> {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(x), Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(u), Some(v)) => first_difference(u, v, &format!("{path}.{k}")),
                (u, v) => Some(format!(
                    "{path}.{k}: ours {}, reference {}",
                    u.map_or("absent".into(), |u| u.to_string()),
                    v.map_or("absent".into(), |v| v.to_string())
                )),
            })
        }
        (Array(x), Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (u, v))| first_difference(u, v, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: ours {a}, reference {b}")),
    }
}

/// An example at its defaults that has CUDA, and what `msclc sim` says of
/// its plan: the host-path and GPU tests hold the generated CUDA to it.
#[allow(dead_code)]
pub struct Example {
    pub path: PathBuf,
    pub name: String,
    pub plan: msclc::ir::Plan,
    pub verdict: msclc::sim::Verdict,
    /// `msclc sim`'s verdict line.
    pub sim: String,
    /// Whether its collective defines a result to check.
    pub checkable: bool,
}

#[allow(dead_code)]
impl Example {
    /// Whether the simulator's deadlock is only of ops reading packets in a
    /// plan with no data. Such a plan runs at 0 bytes, where a packet read
    /// has no packet to wait for: the deadlock, real at any size with data,
    /// cannot show when it runs (as on the MSCCL++ executor).
    pub fn deadlocks_only_on_packets_of_no_data(&self) -> bool {
        !self.plan.moves_data()
            && matches!(&self.verdict, msclc::sim::Verdict::Deadlock(stuck)
                if stuck.iter().all(|s| s.text.contains("its packets never arrive")))
    }

    /// The example at `path`, if it compiles and has a CUDA form.
    pub fn load(path: &Path) -> Option<Example> {
        Example::load_with(path, &[])
    }

    /// The program at `path` with its params set to `defines`, if it
    /// compiles and has a CUDA form.
    pub fn load_with(path: &Path, defines: &[(String, String)]) -> Option<Example> {
        let plan = msclc::driver::compile(path, defines).result.ok()?;
        msclc::back::cuda::generate(&plan).ok()?;
        let report = msclc::sim::simulate(&plan, 2);
        Some(Example {
            path: path.to_path_buf(),
            name: path.file_stem()?.to_string_lossy().to_string(),
            checkable: plan.expected_result(0).is_some(),
            sim: msclc::sim::output::verdict_line(&plan, &report),
            verdict: report.verdict,
            plan,
        })
    }

    /// Whether its race is one between blocks (`PLAN_RACES`), whose outcome
    /// depends on timing.
    pub fn races_between_blocks(&self) -> bool {
        PLAN_RACES.iter().any(|(n, _)| *n == self.name)
    }

    /// Whether ThreadSanitizer runs it: what the simulator verifies must be
    /// race-free, and a race between blocks must show.
    pub fn for_thread_sanitizer(&self) -> bool {
        matches!(self.verdict, msclc::sim::Verdict::Verified) || self.races_between_blocks()
    }
}

/// Example plans that race between blocks, as `msclc sim` reports too, and
/// why: ThreadSanitizer sees it in the generated code. (The other races the
/// simulator reports in the examples are against the user's accesses
/// around a kernel, which the host driver orders by joining the kernel's
/// threads, and a GPU by the kernel's end.)
#[allow(dead_code)]
pub const PLAN_RACES: &[(&str, &str)] = &[(
    "reduce_tbg",
    "`r1.copy(s1[0..2], r1.input[0..2], tb_group: g)` gives block 0 all of chunk 0 and block 1 all of chunk 1 (a group op is split over its whole range), while the one-chunk ops after it give block j half j of one chunk; each handshake pairs block j with block j only, so rank 0's block 1 reads half of rank 1's scratch chunk 0 that rank 1's block 0 wrote, unsynchronized (and two more pairs alike)",
)];

/// splitmix64: a seeded sequence with no dependency, for tests that draw
/// their cases at random and print the seed that repeats them.
#[allow(dead_code)]
pub struct Draw(pub u64);

#[allow(dead_code)]
impl Draw {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// A resource limit a test sets on msclc, as `ulimit` sets one.
#[allow(dead_code)]
pub enum Limit {
    /// The largest file it may write (`ulimit -f`): a full disk.
    FileSize,
    /// Its address space (`ulimit -v`).
    AddressSpace,
}

/// `cmd` with `limit` at `bytes` in the child.
#[cfg(unix)]
#[allow(dead_code)]
pub fn with_limit(cmd: &mut Command, limit: Limit, bytes: u64) {
    use std::os::unix::process::CommandExt;
    let resource = match limit {
        Limit::FileSize => libc::RLIMIT_FSIZE,
        Limit::AddressSpace => libc::RLIMIT_AS,
    };
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(move || {
            let value = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(resource, &value) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The number the environment variable `name` holds, else `default`: the
/// seeds and case counts of the randomized tests.
#[allow(dead_code)]
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

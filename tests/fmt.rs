//! `msclc fmt`: every example and stdlib file is formatted (the check CI
//! runs), formatting is idempotent and keeps tokens, comments and plans,
//! and the command line does what docs/language.md says.

mod common;

use msclc::driver;
use msclc::format::format_source;
use msclc::syntax::lexer;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Every .mscl file of examples/ and stdlib/, sorted.
fn source_files() -> Vec<PathBuf> {
    let stdlib = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib");
    let mut files = common::example_files();
    for entry in std::fs::read_dir(stdlib).expect("stdlib dir").flatten() {
        if entry.path().extension().is_some_and(|e| e == "mscl") {
            files.push(entry.path());
        }
    }
    files.sort();
    assert!(files.len() >= 77, "found only {} files", files.len());
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn formatted(path: &Path, text: &str) -> String {
    format_source(0, text).unwrap_or_else(|d| panic!("{}: {d:?}\n{text}", path.display()))
}

/// The text of each token, in order: what the program means.
fn tokens(text: &str) -> Vec<&str> {
    lexer::lex(text)
        .map(|t| {
            let (start, _, end) = t.expect("lexes");
            &text[start..end]
        })
        .collect()
}

/// A small deterministic generator, so that a failure can be reproduced.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    fn whitespace(&mut self, max: u64) -> String {
        (0..self.below(max + 1))
            .map(|_| if self.below(4) == 0 { '\t' } else { ' ' })
            .collect()
    }
}

/// `text` with each gap between its tokens (whitespace and comments)
/// rewritten by `rewrite`, given the gap, the tokens either side (empty at
/// the ends of the text) and the dice.
fn with_gaps(
    text: &str,
    seed: u64,
    rewrite: impl Fn(&str, &str, &str, &mut Dice) -> String,
) -> String {
    let mut dice = Dice(seed);
    let mut out = String::new();
    let mut end_of_previous = 0;
    let mut previous = "";
    for t in lexer::lex(text) {
        let (start, _, end) = t.expect("lexes");
        let token = &text[start..end];
        out += &rewrite(&text[end_of_previous..start], previous, token, &mut dice);
        out += token;
        (end_of_previous, previous) = (end, token);
    }
    out + &rewrite(&text[end_of_previous..], previous, "", &mut dice)
}

/// Whether `before` and `after` lex as themselves with nothing between.
fn may_touch(before: &str, after: &str) -> bool {
    let joined = format!("{before}{after}");
    tokens(&joined) == [before, after]
}

/// `text` changed in whitespace only, in every way the layout makes
/// canonical: indentation changed or removed, spaces added, or taken away
/// where the tokens still lex apart, trailing whitespace, more blank lines
/// where there is one, blank lines at both ends, CRLF line ends.
fn mangled(text: &str, seed: u64) -> String {
    let crlf = seed.is_multiple_of(3);
    let messy = with_gaps(text, seed, |gap, before, after, dice| {
        let lines: Vec<&str> = gap.split('\n').collect();
        if lines.len() == 1 && !gap.contains("//") {
            let tight = !before.is_empty() && !after.is_empty() && may_touch(before, after);
            return match dice.below(3) {
                0 if tight => String::new(),
                _ => format!(" {}", dice.whitespace(3)),
            };
        }
        let mut out = String::new();
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                out += if crlf { "\r\n" } else { "\n" };
            }
            let comment = line.trim();
            if i == 0 {
                // Still on the line of `before`: a comment there stays
                // apart from it.
                if !comment.is_empty() {
                    out += &format!(" {}{comment}", dice.whitespace(4));
                }
            } else {
                out += &dice.whitespace(9);
                out += comment;
            }
            let last = i + 1 == lines.len();
            if !last {
                out += &dice.whitespace(2);
            }
            // Where there is a blank line, a few more.
            if i > 0 && !last && comment.is_empty() {
                out += "\n \n\t";
            }
        }
        out
    });
    format!("\n \n{messy}\n\n  \n")
}

/// `text` with every token on a line of its own (comments stay where they
/// are): the most indentation the layout can be asked for.
fn exploded(text: &str) -> String {
    with_gaps(text, 0, |gap, before, _, _| {
        match gap.contains('\n') || before.is_empty() {
            true => gap.to_string(),
            false => format!("{gap}\n"),
        }
    })
}

/// `text` on as few lines as its comments allow.
fn joined(text: &str) -> String {
    with_gaps(text, 0, |gap, _, _, _| match gap.contains("//") {
        true => gap.to_string(),
        false => " ".to_string(),
    })
}

#[test]
fn every_example_and_stdlib_file_is_formatted() {
    let unformatted: Vec<String> = source_files()
        .into_iter()
        .filter(|f| {
            let text = read(f);
            formatted(f, &text) != text
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        unformatted.is_empty(),
        "not formatted (run `msclc fmt` on them): {}",
        unformatted.join(", ")
    );
}

/// The programs of the docs are laid out as `msclc fmt` lays them out: a
/// reader copies them. (Those of the blocks fenced as .mscl, or plain
/// ones that hold a program or an op; one that does not parse, an error
/// shown, is left out.)
#[test]
fn every_program_in_the_docs_is_formatted() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.push(root.join("README.md"));
    pages.sort();
    let mut unformatted = Vec::new();
    let mut seen = 0;
    for page in &pages {
        let text = read(page);
        let mut rest = text.as_str();
        while let Some(open) = rest.find("```") {
            let after = &rest[open + 3..];
            let (fence, body) = after.split_once('\n').unwrap_or((after, ""));
            let Some(close) = body.find("```") else { break };
            let block = &body[..close];
            rest = &body[close + 3..];
            let program = block.contains("program \"") || block.contains("tb:");
            if !(fence == "mscl" || (fence.is_empty() && program)) {
                continue;
            }
            if let Ok(laid_out) = format_source(0, block) {
                seen += 1;
                if laid_out != block {
                    let line = text[..text.len() - rest.len()].lines().count();
                    unformatted.push(format!("{}:{line}", page.display()));
                }
            }
        }
    }
    assert!(seen >= 40, "found only {seen} programs in the docs");
    assert!(
        unformatted.is_empty(),
        "not formatted (the block ending at each line): {}",
        unformatted.join(", ")
    );
}

#[test]
fn a_mangled_file_formats_back_to_the_file() {
    for (seed, f) in (1..).zip(source_files()) {
        let text = read(&f);
        let messy = mangled(&text, seed);
        assert_ne!(messy, text);
        assert_eq!(
            tokens(&messy),
            tokens(&text),
            "{}: mangling changed tokens",
            f.display()
        );
        assert_eq!(
            formatted(&f, &messy),
            text,
            "{} mangled:\n{messy}",
            f.display()
        );
    }
}

#[test]
fn formatting_is_idempotent_and_keeps_the_tokens() {
    for (seed, f) in (1..).zip(source_files()) {
        let text = read(&f);
        for variant in [
            text.clone(),
            mangled(&text, seed),
            exploded(&text),
            joined(&text),
        ] {
            let once = formatted(&f, &variant);
            assert_eq!(
                formatted(&f, &once),
                once,
                "{}: formatting twice differs",
                f.display()
            );
            assert_eq!(tokens(&once), tokens(&text), "{}", f.display());
            let comments = |t: &str| t.lines().filter(|l| l.contains("//")).count();
            assert_eq!(
                comments(&once),
                comments(&text),
                "{}: comments lost",
                f.display()
            );
        }
    }
}

/// The plan of `text` compiled as the program at `path` (imports resolve
/// from there), or its errors' messages.
fn plan(path: &Path, text: String) -> Result<Vec<u8>, Vec<String>> {
    let c = driver::compile_source(path, text, &[]);
    match c.result {
        Ok(plan) => {
            let mut json = Vec::new();
            msclc::back::json::write_plan(&plan, false, &mut json).expect("writes");
            Ok(json)
        }
        Err(diags) => Err(diags.into_iter().map(|d| d.message.clone()).collect()),
    }
}

#[test]
fn formatting_keeps_every_examples_plan() {
    for (seed, f) in (1..).zip(common::example_files()) {
        let text = read(&f);
        let original = plan(&f, text.clone());
        for variant in [mangled(&text, seed), formatted(&f, &exploded(&text))] {
            assert!(
                plan(&f, variant) == original,
                "{}: another plan",
                f.display()
            );
        }
    }
}

#[test]
fn comments_are_kept_where_they_are() {
    let messy = "\n\n// leading\n\n\n//   second   \nparam n:int=2 // trailing\n\n\nfor i in 0..n{\n// own line\n  f(i)  //after a call\n      // before the brace\n}\n// the end   \n\n";
    let text = "// leading\n\n//   second\nparam n: int = 2 // trailing\n\nfor i in 0..n {\n    // own line\n    f(i) //after a call\n    // before the brace\n}\n// the end\n";
    assert_eq!(format_source(0, messy).expect("parses"), text);
}

fn msclc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(args)
        .output()
        .expect("msclc runs")
}

/// A folder of its own for a test's files, removed when the test passes.
fn temp_dir(test: &str) -> common::Scratch {
    common::scratch(&format!("fmt-{test}"))
}

const MESSY: &str = "param n:int=2\nfor i in 0..n{\nf(i)\n}\n";
const TIDY: &str = "param n: int = 2\nfor i in 0..n {\n    f(i)\n}\n";

#[test]
fn check_lists_the_files_that_would_change_and_writes_nothing() {
    let dir = temp_dir("check");
    let (messy, tidy) = (dir.join("messy.mscl"), dir.join("tidy.mscl"));
    std::fs::write(&messy, MESSY).expect("write");
    std::fs::write(&tidy, TIDY).expect("write");
    let out = msclc(&[
        "fmt",
        "--check",
        messy.to_str().unwrap(),
        tidy.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}\n", messy.display())
    );
    assert_eq!(read(&messy), MESSY);
    let out = msclc(&["fmt", "--check", tidy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn fmt_rewrites_a_file_in_place() {
    let dir = temp_dir("rewrite");
    let file = dir.join("messy.mscl");
    std::fs::write(&file, MESSY).expect("write");
    let out = msclc(&["fmt", file.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    assert_eq!(read(&file), TIDY);
}

/// A file that compiles, but whose layout (four spaces a level, on lines
/// nested 900 brackets deep) would be more than msclc reads, is refused
/// and left as it is: formatting never makes a file msclc cannot read.
#[test]
fn a_layout_past_what_msclc_reads_is_refused() {
    let dir = temp_dir("too_large");
    let file = dir.join("deep.mscl");
    let text = format!(
        "{}let x = {}{}{}",
        "program \"p\" {\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n}\n",
        "[\n".repeat(900),
        "1,\n".repeat(6000),
        "]\n".repeat(900)
    );
    std::fs::write(&file, &text).expect("write");
    assert!(msclc(&["check", file.to_str().unwrap()]).status.success());
    let out = msclc(&["fmt", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error[E0401]: laid out, this file would be larger than 16777216 bytes, the most msclc reads"),
        "{err}"
    );
    assert!(err.contains("deep.mscl:"), "{err}");
    assert_eq!(read(&file), text);
}

/// `msclc fmt -` with `text` on its standard input.
fn fmt_stdin(text: &str) -> Output {
    fmt_stdin_bytes(text.as_bytes())
}

/// `msclc fmt -` with `bytes` on its standard input.
fn fmt_stdin_bytes(bytes: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_msclc"))
        .args(["fmt", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("msclc runs");
    // Written from a thread: msclc may write back before it has read all
    // (the pipes would fill, each side waiting on the other).
    let mut stdin = child.stdin.take().expect("stdin");
    let bytes = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&bytes));
    let out = child.wait_with_output().expect("msclc ends");
    writer.join().expect("writer").expect("write");
    out
}

/// A file some Windows editor started with a byte-order mark compiles to
/// the plan it would without one, and formats keeping the mark; a mark
/// anywhere else is no token.
#[test]
fn a_byte_order_mark_that_starts_a_file_is_its_encoding() {
    let path = Path::new("examples/simple_allgather.mscl");
    let text = read(path);
    let marked = format!("\u{FEFF}{text}");
    assert_eq!(plan(path, marked.clone()), plan(path, text.clone()));
    assert_eq!(
        formatted(path, &marked.replace("num_gpus: int", "num_gpus:  int")),
        marked
    );
    let inside = text.replacen("param", "\u{FEFF}param", 2);
    assert!(plan(path, inside).is_err());
}

#[test]
fn fmt_dash_formats_standard_input_to_standard_output() {
    let out = fmt_stdin(MESSY);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), TIDY);
}

/// `-` twice would format standard input, then an empty second reading of
/// it: refused, before anything is read.
#[test]
fn standard_input_named_twice_is_refused() {
    let out = msclc(&["fmt", "-", "-"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error[E0803]") && err.contains("more than once"),
        "{err}"
    );
}

/// Standard input that does not parse comes back as it was, with its
/// error: an editor piping its buffer through `msclc fmt -` keeps it.
#[test]
fn standard_input_that_does_not_parse_is_written_back_as_it_was() {
    let bad = "let x = 1\nlet y = (1 + ]\n";
    let out = fmt_stdin(bad);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), bad);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[E0001]"), "{err}");
    assert!(err.contains("<stdin>:2:14"), "{err}");
}

/// Standard input that is no text msclc reads (not UTF-8, larger than a
/// source may be) comes back as it was too, every byte, with why.
#[test]
fn standard_input_that_is_not_text_is_written_back_as_it_was() {
    let latin1 = b"let   x = \"\xff\"\n".to_vec();
    let out = fmt_stdin_bytes(&latin1);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout, latin1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("it is not UTF-8: byte 11 (line 1, column 12)"),
        "{err}"
    );
    let huge = vec![b' '; 17 << 20];
    let out = fmt_stdin_bytes(&huge);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout == huge, "{} bytes back", out.stdout.len());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("it is too large"), "{err}");
}

#[test]
fn a_file_that_does_not_parse_is_reported_where_and_left_alone() {
    let dir = temp_dir("parse");
    let (bad, messy) = (dir.join("bad.mscl"), dir.join("messy.mscl"));
    std::fs::write(&bad, "let x = 1\nlet y = (1 + ]\n").expect("write");
    std::fs::write(&messy, MESSY).expect("write");
    let out = msclc(&["fmt", bad.to_str().unwrap(), messy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[E0001]"), "{err}");
    assert!(err.contains(&format!("{}:2:14", bad.display())), "{err}");
    assert_eq!(read(&bad), "let x = 1\nlet y = (1 + ]\n");
    // The other files are formatted all the same.
    assert_eq!(read(&messy), TIDY);
}

#[test]
fn a_missing_file_exits_2() {
    let dir = temp_dir("missing");
    let out = msclc(&["fmt", dir.join("nothing.mscl").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[E0801]"), "{err}");
    assert!(err.contains("nothing.mscl"), "{err}");
}

/// A file written with CRLF line ends (on Windows, say) keeps them: every
/// line of the layout ends in CRLF, and is otherwise the LF layout.
#[test]
fn crlf_files_keep_their_line_ends() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let lf = read(&path);
    let crlf = lf
        .replace('\n', "\r\n")
        .replace("let src_chunk =", "let  src_chunk  =");
    let out = msclc::format::format_source(0, &crlf).expect("formats");
    assert_eq!(out.matches("\r\n").count(), out.matches('\n').count());
    assert_eq!(out.replace("\r\n", "\n"), formatted(&path, &lf));
    assert_eq!(
        msclc::format::format_source(0, &lf).unwrap(),
        formatted(&path, &lf)
    );
}

/// A file whose lines end in a lone CR (classic Mac OS) reads as its
/// lines, a comment ending at its CR, not running to the end of the file;
/// laid out, it ends its lines in LF.
#[test]
fn lone_cr_files_read_line_by_line_and_format_to_lf() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/simple_allgather.mscl");
    let lf = read(&path);
    let cr = lf.replace('\n', "\r");
    let c = msclc::driver::compile_source(&path, cr.clone(), &[]);
    let (Ok(from_cr), Ok(from_lf)) = (c.result, msclc::driver::compile(&path, &[]).result) else {
        panic!("a lone-CR file compiles");
    };
    assert_eq!(
        msclc::back::json::plan_to_json(&from_cr),
        msclc::back::json::plan_to_json(&from_lf)
    );
    let out = msclc::format::format_source(0, &cr).expect("formats");
    assert_eq!(out, formatted(&path, &lf));
}

/// In place means a file: a pipe or a device named to `msclc fmt` is
/// refused before it is read (a pipe given back its text would wait for
/// a reader), with the way to format standard input.
#[cfg(unix)]
#[test]
fn fmt_refuses_to_rewrite_what_is_not_a_file() {
    let dir = temp_dir("pipe");
    let pipe = dir.join("program.pipe");
    let made = Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo failed");
    let out = msclc(&["fmt", pipe.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("it is not a file"), "{err}");
    assert!(err.contains("msclc fmt -"), "{err}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&pipe)
        .unwrap()
        .file_type()
        .is_fifo());
}

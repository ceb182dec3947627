//! No input makes msclc panic: truncated and randomly mutated versions of
//! every example must yield a plan or diagnostics, never a crash; and
//! format as they parse (formatted text formats to itself) or not at all.

mod common;

use msclc::driver;
use std::path::{Path, PathBuf};

/// A small deterministic generator (xorshift64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const FRAGMENTS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "..",
    "=",
    "-",
    "<<",
    " 0 ",
    " 99999999999 ",
    " -1 ",
    "\"",
    "tb: ",
    "rank(0)",
    ".input",
    "[0..4]",
    " for ",
    " in ",
    " where ",
    " if ",
    " let ",
    " fn ",
    "return",
    "pipeline",
    "program",
    "param",
    " x ",
    "1 << 62",
    " / 0",
    "tb_group([])",
    "scratch(0, 4000000000)",
    "//",
    "\n",
];

fn examples() -> Vec<(PathBuf, String)> {
    common::example_files()
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable example");
            (p, text)
        })
        .collect()
}

fn format_must_not_panic(text: &str) {
    let result = std::panic::catch_unwind(|| {
        if let Ok(once) = msclc::format::format_source(0, text) {
            assert_eq!(msclc::format::format_source(0, &once), Ok(once.clone()));
        }
    });
    assert!(result.is_ok(), "msclc fmt panicked on:\n{text}");
}

fn compile_must_not_panic(path: &Path, text: String) {
    let shown = text.clone();
    let result = std::panic::catch_unwind(|| {
        // Mutations blow numbers up (65535 ranks, 2^63 iterations); a small
        // loop budget keeps each run short while still ending in a diagnostic.
        let limits = driver::Limits {
            max_iterations: 200_000,
            ..driver::Limits::default()
        };
        let c = driver::compile_source_with(path, text, &[], limits);
        // Rendering must not panic either.
        if let Err(d) = &c.result {
            let _ = c.sources.render(d);
        }
    });
    assert!(result.is_ok(), "msclc panicked on:\n{shown}");
}

#[test]
fn truncated_examples() {
    for (path, text) in examples() {
        let cuts: Vec<usize> = (0..text.len())
            .step_by(7)
            .filter(|i| text.is_char_boundary(*i))
            .collect();
        for cut in cuts {
            format_must_not_panic(&text[..cut]);
            compile_must_not_panic(&path, text[..cut].to_string());
        }
    }
}

#[test]
fn mutated_examples() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (path, text) in examples() {
        for _ in 0..60 {
            let mut s = text.clone();
            for _ in 0..1 + rng.below(3) {
                let mut at = rng.below(s.len() + 1);
                while !s.is_char_boundary(at) {
                    at -= 1;
                }
                match rng.below(3) {
                    0 => s.insert_str(at, FRAGMENTS[rng.below(FRAGMENTS.len())]),
                    1 => {
                        let mut end = (at + 1 + rng.below(12)).min(s.len());
                        while !s.is_char_boundary(end) {
                            end -= 1;
                        }
                        s.replace_range(at..end.max(at), "");
                    }
                    _ => {
                        // Replace a number with an extreme one.
                        if let Some(pos) = s[at..].find(|c: char| c.is_ascii_digit()) {
                            let p = at + pos;
                            s.replace_range(
                                p..p + 1,
                                ["0", "4294967296", "65535", "9223372036854775807"][rng.below(4)],
                            );
                        }
                    }
                }
            }
            format_must_not_panic(&s);
            compile_must_not_panic(&path, s);
        }
    }
}

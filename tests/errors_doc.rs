//! docs/errors.md lists every diagnostic code with its title, and each
//! example there gets its code from the command it names: the reference a
//! user reads cannot drift from what msclc says.

mod common;

use msclc::diag::Code;
use std::path::Path;
use std::process::Command;

/// Codes documented without an example: one would be a 1,000-level
/// nesting, one needs a GPU, one a machine without one, one an address-space
/// limit (tests/limits.rs gives it one), one is a bug in msclc.
const WITHOUT_EXAMPLE: &[&str] = &["E0003", "E0604", "E0806", "E0810", "E0999"];

/// One `#### CODE: title` section: its title and its example, if any.
struct Section {
    code: String,
    title: String,
    example: Option<Example>,
}

/// A program that gets the code (its first line `// msclc ARGS gives
/// CODE` says how), or a command line run in the repository (a
/// ```console block: `$ msclc ARGS`, then what it prints).
enum Example {
    Program(String),
    Command(String),
}

fn sections(doc: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if let Some(heading) = line.strip_prefix("#### ") {
            let (code, title) = heading.split_once(": ").expect("#### CODE: title");
            out.push(Section {
                code: code.to_string(),
                title: title.to_string(),
                example: None,
            });
        } else if line == "```mscl" || line == "```console" {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            let example = match line {
                "```mscl" => Example::Program(body.join("\n") + "\n"),
                _ => Example::Command(body[0].to_string()),
            };
            if let Some(last) = out.last_mut() {
                assert!(last.example.is_none(), "{}: two examples", last.code);
                last.example = Some(example);
            }
        }
    }
    out
}

#[test]
fn every_code_is_documented_with_its_title() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/errors.md"))
        .expect("docs/errors.md");
    let documented = sections(&doc);
    let ids: Vec<&str> = documented.iter().map(|s| s.code.as_str()).collect();
    let all: Vec<&str> = Code::ALL.iter().map(|c| c.id()).collect();
    assert_eq!(
        ids, all,
        "docs/errors.md lists the codes of src/diag/codes.rs, in order"
    );
    for (section, code) in documented.iter().zip(Code::ALL) {
        assert_eq!(section.title, code.title(), "{}'s title", section.code);
        assert_eq!(
            section.example.is_none(),
            WITHOUT_EXAMPLE.contains(&section.code.as_str()),
            "{}: an example, unless it is one of {WITHOUT_EXAMPLE:?}",
            section.code
        );
    }
}

#[test]
fn every_example_gets_its_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/errors.md")).expect("docs/errors.md");
    let dir = common::scratch("errors-doc");
    let mut wrong = Vec::new();
    for section in sections(&doc) {
        let Some(example) = &section.example else {
            continue;
        };
        let args: Vec<String> = match example {
            // The program's first line says which command gives the code.
            Example::Program(text) => {
                let command = text
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("// msclc "))
                    .and_then(|l| l.split_once(" gives "))
                    .unwrap_or_else(|| {
                        panic!("{}: starts with `// msclc ARGS gives`", section.code)
                    })
                    .0;
                let file = dir.join(format!("{}.mscl", section.code));
                std::fs::write(&file, text).unwrap();
                let mut args: Vec<String> = command.split_whitespace().map(String::from).collect();
                // The file goes after the command (`sim FILE --target ..`).
                let at = usize::from(!args.is_empty() && !args[0].starts_with('-'));
                args.insert(at, file.display().to_string());
                args
            }
            Example::Command(line) => line
                .strip_prefix("$ msclc ")
                .unwrap_or_else(|| panic!("{}: a console example starts `$ msclc`", section.code))
                .split_whitespace()
                .map(String::from)
                .collect(),
        };
        let out = Command::new(env!("CARGO_BIN_EXE_msclc"))
            .args(&args)
            .current_dir(root)
            .output()
            .expect("msclc runs");
        let command = args.join(" ");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let severity = if section.code.starts_with('W') {
            "warning"
        } else {
            "error"
        };
        let tag = format!("{severity}[{}]", section.code);
        // The first diagnostic is the documented one; an error's may
        // follow warnings (E0605's switch reduce is also W0507).
        let first = match severity {
            "error" => text.find("error["),
            _ => text
                .find("error[")
                .into_iter()
                .chain(text.find("warning["))
                .min(),
        };
        if first.map(|at| text[at..].starts_with(&tag)) != Some(true) {
            wrong.push(format!("{}: `msclc {command}` says:\n{text}", section.code));
        }
        // A warning leaves the exit code 0; E08xx are what msclc could not
        // do (2); every other error is a wrong program or plan (1).
        let status = match &section.code {
            c if c.starts_with('W') => 0,
            c if c.starts_with("E08") => 2,
            _ => 1,
        };
        if out.status.code() != Some(status) {
            wrong.push(format!(
                "{}: `msclc {command}` exits {:?}, not {status}",
                section.code,
                out.status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

//! Pathological programs: shapes from the grammar repeated or nested to an
//! extreme.

use super::*;

pub(crate) const HEADER: &str = "program \"p\" {\n    collective = allreduce(2)\n}\n";

/// Nesting depths around the limit of 1000 and well past it.
pub(crate) const DEPTHS: &[usize] = &[1, 2, 10, 500, 999, 1000, 1001, 1500, 5000, 50_000];

/// One pathological program: a shape from the grammar repeated or nested
/// to an extreme.
pub(crate) fn pathological(rng: &mut Rng, known: bool) -> (String, String) {
    let d = rng.pick(DEPTHS);
    let n = rng.pick(&[1usize, 100, 10_000, 200_000]);
    let r = |s: &str, k: usize| s.repeat(k);
    let (what, body) = match rng.below(34) {
        0 => (
            "parentheses",
            format!("let x = {}1{}\n", r("(", d), r(")", d)),
        ),
        1 => ("a tuple", format!("let x = {}1{}\n", r("(", d), r(",)", d))),
        2 => ("a map", format!("let x = {}1{}\n", r("{1: ", d), r("}", d))),
        3 => (
            "an index chain",
            format!("let l = [0]\nlet x = l{}\n", r("[0]", d)),
        ),
        4 => (
            "a field chain",
            format!("let x = rank(0).input{}\n", r(".size", d)),
        ),
        5 => (
            "a call chain",
            format!("fn f() -> int {{ return 1 }}\nlet x = f(){}\n", r("()", d)),
        ),
        6 => ("nots", format!("let x = {}true\n", r("!", d))),
        7 => (
            "nested comprehensions",
            format!("let x = {}0{}\n", r("[", d), r(" for i in 0..1]", d)),
        ),
        8 => (
            "nested min",
            format!("let x = {}0{}\n", r("min(", d), r(", 1)", d)),
        ),
        9 => ("an && chain", format!("let x = true{}\n", r(" && true", d))),
        10 => ("a shift chain", format!("let x = 1{}\n", r(" << 1", d))),
        11 => (
            "a string join chain",
            format!("let x = \"a\"{}\n", r(" + \"a\"", d)),
        ),
        12 => (
            "a comparison chain",
            format!("let x = 1{}\n", r(" < 1", d.min(100))),
        ),
        13 => (
            "a range chain",
            format!("let x = 0{}\n", r("..1", d.min(100))),
        ),
        14 => (
            "else-if chain",
            format!("if false {{}}{} else {{}}\n", r(" else if false {}", d)),
        ),
        15 => (
            "nested pipelines",
            format!(
                "{}rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0){}\n",
                r("pipeline(unit_size: 1, num_chunks: 1) { ", d.min(2000)),
                r(" }", d.min(2000))
            ),
        ),
        16 => (
            "nested fors with where",
            format!(
                "{}let z = 0{}\n",
                r("for i in 0..1 where i == 0 { ", d),
                r(" }", d)
            ),
        ),
        17 => (
            "a deep default argument",
            format!(
                "fn f(x: int = {}1{}) -> int {{ return x }}\nlet y = f()\n",
                r("-", d),
                ""
            ),
        ),
        18 => ("many statements", r("let x = 1; ", n) + "\n"),
        19 => ("a long list", format!("let x = [{}]\n", r("0, ", n))),
        20 => (
            "a map with repeated keys",
            format!("let x = {{{}}}\n", r("1: 2, ", n)),
        ),
        21 => (
            "many parameters",
            format!(
                "fn f({}) {{}}\n",
                (0..n)
                    .map(|i| format!("p{i}: int"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        22 => ("many arguments", format!("let x = min({})\n", r("1, ", n))),
        23 => (
            "a long tuple pattern",
            format!(
                "let ({}) = ({})\n",
                (0..n)
                    .map(|i| format!("a{i}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                r("1, ", n)
            ),
        ),
        24 => (
            "a long line with an error at its end",
            format!("{}let y = (\n", r("let x = 1; ", n)),
        ),
        25 => {
            // A misspelt long name (its "did you mean" hint was quadratic).
            (
                "a long identifier",
                format!("let {} = 1\nlet y = {}2\n", r("x", n), r("x", n)),
            )
        }
        26 => (
            "a long string",
            format!("let x = \"{}\"\nassert(false, x)\n", r("é\u{202e}🚀\t", n)),
        ),
        27 => (
            "a long comment",
            format!("//{}\nlet x = ?\n", r("\u{2028}x", n)),
        ),
        28 => ("huge literals", huge_literals(rng)),
        29 => ("odd characters", odd_characters(rng)),
        30 => (
            "many functions",
            (0..n.min(20_000))
                .map(|i| format!("fn f{i}(x: int) -> int {{ return x + {i} }}\n"))
                .collect(),
        ),
        31 => {
            // Nesting in types and patterns (once unlimited: a stack overflow).
            let deep = rng.pick(&[1000usize, 1001, 100_000]);
            if rng.chance(50) {
                (
                    "a deep tuple type",
                    format!("fn f(x: {}int{}) {{}}\n", r("(", deep), r(",)", deep)),
                )
            } else {
                (
                    "a deep pattern",
                    format!("let {}a{} = 1\n", r("(", deep), r(",)", deep)),
                )
            }
        }
        32 if known => {
            // Known crash (debug builds): deep expressions in a deep recursion.
            let deep = rng.pick(&[300usize, 500, 990]);
            (
                "a deep expression in a recursion",
                format!("fn f(n: int) -> int {{\n    if n <= 0 {{ return 0 }}\n    return {}f(n - 1)\n}}\nlet x = f(300)\n", r("-", deep)),
            )
        }
        33 => {
            // Once a quadratic path in the checker past a few thousand.
            let deep = d;
            (
                "a nested list type",
                format!("fn f(x: {}int{}) {{}}\n", r("list[", deep), r("]", deep)),
            )
        }
        _ => (
            "parentheses around a call",
            format!("let x = len({}[1]{})\n", r("(", d), r(")", d)),
        ),
    };
    let text = if rng.chance(90) {
        format!("{HEADER}{body}")
    } else {
        body
    };
    (format!("{what} ({d} deep or {n} long)"), text)
}

pub(crate) fn huge_literals(rng: &mut Rng) -> String {
    let lit = rng.pick(&[
        "99999999999999999999999999999",
        "18446744073709551616",
        "0x1_0000_0000_0000_0000",
        "0xffffffffffffffffffffffff",
        "1_____0",
        "0x",
        "-9223372036854775808",
        "9223372036854775808",
    ]);
    let expr = rng.pick(&[
        "9223372036854775807 + 1",
        "-9223372036854775807 - 2",
        "(-9223372036854775807 - 1) / -1",
        "(-9223372036854775807 - 1) % -1",
        "-(-9223372036854775807 - 1)",
        "1 << 64",
        "1 << -1",
        "-1 >> 64",
        "1 << 9223372036854775807",
        "3037000500 * 3037000500",
        "5 / 0",
        "5 % 0",
        "len(0..9223372036854775807)",
        "min(-9223372036854775807 - 1, 0) - 1",
        "[0][9223372036854775807]",
        "[0][-9223372036854775807 - 1]",
        "rank(0).input[9223372036854775807]",
        "rank(0).input[-1..9223372036854775807]",
        "rank(9223372036854775807)",
        "scratch(0, 9223372036854775807)",
        "scratch(0, 18446744073709551615)",
        "tb_group([9223372036854775807])",
        "semaphore(0, initial_value: 9223372036854775807)",
    ]);
    format!("let a = {lit}\nlet b = {expr}\n")
}

pub(crate) fn odd_characters(rng: &mut Rng) -> String {
    let c = rng.pick(&[
        "\u{0}", "\u{7}", "\u{1b}", "\u{7f}", "\u{a0}", "\u{2028}", "\u{202e}", "\u{feff}", "é",
        "漢", "🚀", "\u{301}", "\r", "\t", "\u{c}", "\u{b}", "ｘ", "·",
    ]);
    match rng.below(5) {
        0 => format!("let x = 1 {c} 2\n"),
        1 => format!("let x{c} = 1\n"),
        2 => format!("let x = \"{c}\" + {c}\n"),
        3 => format!("{c}{c}{c}\nlet x = (\n"),
        _ => "let x = 1\r\nlet y = \"a\r\nb\"\r\nlet z = ?\r\n".to_string(),
    }
}

#[test]
pub(crate) fn pathological_programs() {
    let (seed, cases) = config("pathological_programs", 5);
    let known = known_enabled();
    let mut h = Harness::new("pathological");
    for k in 0..cases {
        let mut rng = Rng::new(seed, 2, k as u64);
        let (what, text) = pathological(&mut rng, known);
        let case = format!("pathological {k}: {what}");
        let bytes: Vec<u8> = if rng.chance(3) {
            // Not UTF-8 at all.
            let mut b = text.into_bytes();
            let at = rng.below(b.len() as u64) as usize;
            b.insert(at, 0xff);
            b
        } else {
            text.into_bytes()
        };
        h.write("case.mscl", &bytes);
        let command = rng.pick(&["check", "check", "compile", "sim"]);
        let mut a = args(&[command, "case.mscl", "--max-ops", MAX_OPS]);
        if command == "compile" {
            a.extend(args(&["-o", "case.json"]));
        }
        if command == "sim" {
            a.extend(args(&["--quiet", "--max-memory", SIM_MAX_MEMORY]));
        }
        h.run(&case, "case.mscl", Input::Source, &a);
        // A quarter of them: a debug build parses these slowly.
        if rng.chance(25) {
            formats_for_good(&mut h, &case);
        }
    }
    h.finish();
}

/// `msclc fmt case.mscl` ends as any command does (it formats the file, or
/// says where it does not parse, or that it cannot read it), and what it
/// writes is formatted: `--check` finds nothing to change.
pub(crate) fn formats_for_good(h: &mut Harness, case: &str) {
    let fmt = args(&["fmt", "case.mscl"]);
    if h.run(case, "case.mscl", Input::Source, &fmt).code() != Some(0) {
        return;
    }
    let check = args(&["fmt", "--check", "case.mscl"]);
    let again = h.exec(&check);
    if again.code() != Some(0) {
        h.fail(
            case,
            "case.mscl",
            &check,
            "what `msclc fmt` wrote is not formatted",
            &again,
        );
    }
}

/// A generated program formats, if it parses, to text that formats to
/// itself (in process: a run of the binary per program costs seconds).
pub(crate) fn formats_for_good_in_process(text: &str) {
    if let Ok(once) = msclc::format::format_source(0, text) {
        let twice = msclc::format::format_source(0, &once);
        assert_eq!(
            twice.as_ref(),
            Ok(&once),
            "formatting twice differs:\n{text}"
        );
    }
}

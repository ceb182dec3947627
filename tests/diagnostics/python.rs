//! What a user who writes the Python DSL, or Python, writes here by
//! habit (`True`, `tb=0`, `before | after`, `break`): each is said as what
//! it is, with what to write instead.

use super::*;

/// Mistakes the grammar's "expected one of" would leave to guesswork are
/// said as what they are, at the place to fix.
#[test]
fn common_slips_are_named() {
    let said = |body: &str, message: &str| {
        expect(&with_header(body), Code::Syntax);
        let rendered = rendered_errors(&body.replacen('@', "", 1));
        assert!(rendered.contains(message), "{rendered}");
    };
    said(
        "param n: int@\nparam m: int = 2\n",
        "a param needs a default value",
    );
    said("@while true { }\n", "there is no `while` loop");

    said("let b = 1 < 2 @< 3\n", "comparisons do not chain");
    said("@/* note */\n", "there are no `/* */` comments");
    // Python's spellings, where .mscl has its own.
    said(
        "rank(0).copy(rank(0).output[0], rank(0).input[0], tb@=0)\n",
        "a keyword argument is written `name: value`",
    );
    said(
        "let c = rank(0).input[0@:1]\n",
        "a slice is written `[start..end]`",
    );
    said("let b = @not false\n", "`not` is Python's: write `!`");
    said("let b = true @and false\n", "`and` is Python's: write `&&`");
    said("let x = 2 @** 3\n", "there is no `**`");
    // C's and Rust's spellings.
    said(
        "let x = 1\nx @+= 2 * 3\n",
        "help: assign the new value whole: `x = x + (2 * 3)`",
    );
    said("let x = 1\nx@++\n", "there is no `++`");
    said("let x@: int = 1\n", "a `let` is written without a type");
    said(
        "fn f() -> int {\n    @1\n}\n",
        "a function gives its value with `return`",
    );
    said("let x = 1;@;\n", "an empty statement");
    said(
        "let x = 1 if true @else 2\n",
        "a conditional value is written `if c { a } else { b }`",
    );
    said(
        "let x = \"a\" if true @else \"b\"\n",
        "a conditional value is written `if c { a } else { b }`",
    );
    expect(
        "program @{\n    collective = allgather(2, chunk_factor: 1, inplace: true)\n}\n",
        Code::Syntax,
    );
}

/// Python's `True` and `False` are `true` and `false`; `l.len()`, as
/// some write it, is `len(l)`.
#[test]
fn python_booleans_are_pointed_to_ours() {
    expect(&with_header("let t = @True\n"), Code::UnknownName);
    let rendered = rendered_errors("let t = False\n");
    assert!(
        rendered.contains("help: did you mean `false`?"),
        "{rendered}"
    );
    let rendered = rendered_errors("for i in range(2) { }\n");
    assert!(rendered.contains("help: a range is `a..b`"), "{rendered}");
    let rendered = rendered_errors("let n = [1, 2].len()\n");
    assert!(
        rendered.contains("help: the length of a list, tuple, map, range or string is `len(x)`"),
        "{rendered}"
    );
}

/// The Python DSL joins sync flags, `before | after`; here that is the
/// one setting `both`, and the error says so, once (not again at the
/// argument the `|` gave).
#[test]
fn python_sync_flags_joined_point_to_both() {
    let body = "memory_channel(1, 0).signal(tb: 0, data_sync: @before | after)\n";
    expect(&with_header(body), Code::TypeMismatch);
    let rendered = rendered_errors(&body.replace('@', ""));
    assert!(
        rendered.starts_with("error[E0103]: `|` does not combine sync settings"),
        "{rendered}"
    );
    assert!(
        rendered.contains(
            "help: a data sync is one setting: `both` where the Python DSL writes `before | after`"
        ),
        "{rendered}"
    );
    assert_eq!(rendered.matches("error[").count(), 1, "{rendered}");
}

/// Python's `break` and `continue` are no words here: the unknown name
/// says so, and what to write instead.
#[test]
fn break_and_continue_are_named_as_pythons() {
    for word in ["break", "continue"] {
        let body = format!("for i in 0..2 {{\n    @{word}\n}}\n");
        expect(&with_header(&body), Code::UnknownName);
        let rendered = rendered_errors(&body.replacen('@', "", 1));
        assert!(
            rendered.contains(&format!(
                "help: there is no `{word}`: a loop runs over its whole range or list"
            )),
            "{rendered}"
        );
    }
}

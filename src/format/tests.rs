//! The layout rules of `msclc fmt`, one test a rule.

use super::*;

fn formatted(text: &str) -> String {
    format_source(0, text).unwrap_or_else(|d| panic!("{text:?} does not parse: {d:?}"))
}

/// `text` formats to itself, and `messy` formats to `text`.
fn check(messy: &str, text: &str) {
    assert_eq!(formatted(messy), text, "formatting {messy:?}");
    assert_eq!(formatted(text), text, "formatting {text:?} again");
}

#[test]
fn binary_operators_assignments_and_arrows_take_a_space_each_side() {
    check("let x=a+b*c-d\n", "let x = a + b * c - d\n");
    check("x=a<<1|b>=c&&!d\n", "x = a << 1 | b >= c && !d\n");
    check(
        "fn f(a:int)->int{return a}\n",
        "fn f(a: int) -> int { return a }\n",
    );
}

#[test]
fn dots_and_ranges_bind_tightly() {
    check(
        "let c = rank ( 0 ) . input [ 0 .. n ]\n",
        "let c = rank(0).input[0..n]\n",
    );
    check("for i in 0 ..n-1 {}\n", "for i in 0..n - 1 {}\n");
}

#[test]
fn separators_take_a_space_after_only() {
    check("f(a , b ,c : 1) ; g()\n", "f(a, b, c: 1); g()\n");
    check("let m = {1:2 , 3:4}\n", "let m = { 1: 2, 3: 4 }\n");
}

#[test]
fn a_minus_is_unary_where_no_operand_precedes_it() {
    check("let x = - 1\n", "let x = -1\n");
    check("let x = a - - 1\n", "let x = a - -1\n");
    check("f(- 1, x :- 2, [ - 3 ])\n", "f(-1, x: -2, [-3])\n");
    check("let r = 0 .. - 1\n", "let r = 0..-1\n");
    check(
        "fn f() -> int { return - 1 }\n",
        "fn f() -> int { return -1 }\n",
    );
    check("let x = f(1)-g[0]-1\n", "let x = f(1) - g[0] - 1\n");
    check("let x = ! ! b\n", "let x = !!b\n");
    // Two minuses apart, never `--`, which reads as a decrement.
    check("let x = --1\n", "let x = - -1\n");
    check("let x = 1 - - - 1\n", "let x = 1 - - -1\n");
}

#[test]
fn a_minus_after_a_closing_brace_is_binary() {
    check(
        "let x = if c { 1 } else { 2 }-1\n",
        "let x = if c { 1 } else { 2 } - 1\n",
    );
    check("let x = { 1: 2 }[1]-1\n", "let x = { 1: 2 }[1] - 1\n");
}

#[test]
fn a_minus_starting_a_line_looks_back_across_the_break() {
    check("let x = a\n-b\n", "let x = a\n    - b\n");
    check("let x =\n-b\n", "let x =\n    -b\n");
}

#[test]
fn a_line_that_continues_an_expression_is_indented_once_more() {
    check("let x = a +\nb\nf()\n", "let x = a +\n    b\nf()\n");
    check("f(a\n+ b,\nc)\n", "f(a\n        + b,\n    c)\n");
    check(
        "let c = rank(0)\n.input[0\n..2]\n",
        "let c = rank(0)\n    .input[0\n            ..2]\n",
    );
    check(
        "fn f()\n-> int { return 1 }\n",
        "fn f()\n    -> int { return 1 }\n",
    );
    // Brackets opened on a continuation line indent from there.
    check(
        "let x = a\n+ f(\nb,\n)\n",
        "let x = a\n    + f(\n        b,\n    )\n",
    );
    // A comment between the lines is indented as the line after it.
    check(
        "let x = a\n// why\n+ b\n",
        "let x = a\n    // why\n    + b\n",
    );
    check(
        "let x = a +\n// why\nb\n",
        "let x = a +\n    // why\n    b\n",
    );
}

#[test]
fn a_line_that_calls_or_indexes_the_line_before_continues_it() {
    check(
        "let v = f\n(1)\nlet u = [1, 2]\n[0]\n",
        "let v = f\n    (1)\nlet u = [1, 2]\n    [0]\n",
    );
    // A bracket after no operand starts an element, not a continuation.
    check(
        "let w = [\n[1, 2],\n[3, 4]\n]\n",
        "let w = [\n    [1, 2],\n    [3, 4]\n]\n",
    );
}

#[test]
fn the_loops_of_a_for_header_on_lines_of_their_own_continue_it() {
    check(
        "for i in 0..2,\nj in 0..3 {\nf(i, j)\n}\n",
        "for i in 0..2,\n    j in 0..3 {\n    f(i, j)\n}\n",
    );
    // The `,` that ends a program option is no header's.
    check(
        "program \"p\" {\nprotocol = Simple,\nnum_threads_per_block = 512\n}\n",
        "program \"p\" {\n    protocol = Simple,\n    num_threads_per_block = 512\n}\n",
    );
}

#[test]
fn in_and_where_continue_a_line_as_operators_do() {
    check(
        "let x = a\nin b\nlet y = a in\nb\n",
        "let x = a\n    in b\nlet y = a in\n    b\n",
    );
    check(
        "for i in 0..2\nwhere i > 0 {\nf(i)\n}\n",
        "for i in 0..2\n    where i > 0 {\n    f(i)\n}\n",
    );
}

#[test]
fn a_block_whose_header_runs_over_lines_is_indented_from_its_statement() {
    check("if a &&\nb {\nf()\n}\n", "if a &&\n    b {\n    f()\n}\n");
    check(
        "fn f()\n-> int {\nreturn 1\n}\n",
        "fn f()\n    -> int {\n    return 1\n}\n",
    );
    // A map is no block: inside it, deeper than its continuation line.
    check(
        "let m = a +\n{\n1: 2 }[1]\n",
        "let m = a +\n    {\n        1: 2 }[1]\n",
    );
    check(
        "if a { f() }\nelse {\ng()\n}\n",
        "if a { f() }\nelse {\n    g()\n}\n",
    );
    // An `if` expression on a continuation line: its branches one level
    // under the `if`'s line, its braces lined up with it.
    check(
        "let x =\nif c {\n1\n} else {\n2\n}\n",
        "let x =\n    if c {\n        1\n    } else {\n        2\n    }\n",
    );
    check(
        "let t = f(a) +\ng(if c {\n1\n} else {\n2\n})\n",
        "let t = f(a) +\n    g(if c {\n        1\n    } else {\n        2\n    })\n",
    );
    // A comprehension's `for` heads no block.
    check(
        "for x in [\ny for y in z\n] {\nf(x)\n}\n",
        "for x in [\n    y for y in z\n] {\n    f(x)\n}\n",
    );
}

#[test]
fn calls_and_indexing_attach_other_brackets_take_a_space() {
    check("f (x) [0] (y)\n", "f(x)[0](y)\n");
    check("for(a,b)in[(1,2)]{}\n", "for (a, b) in [(1, 2)] {}\n");
    check("let x =(1)*[2][0]\n", "let x = (1) * [2][0]\n");
    check(
        "pipeline (unit_size: 1) { }\n",
        "pipeline(unit_size: 1) {}\n",
    );
    check("let s = \"ab\" [0]\n", "let s = \"ab\"[0]\n");
}

#[test]
fn types_read_naturally() {
    check(
        "param n:int=8\nfn f(m : map [ ( int , int ) , list [ int ] ] , t:(int,bool)) {}\n",
        "param n: int = 8\nfn f(m: map[(int, int), list[int]], t: (int, bool)) {}\n",
    );
}

#[test]
fn braces_hold_their_contents_with_a_space() {
    check("if c {x = 1} else {}\n", "if c { x = 1 } else {}\n");
    check(
        "let m = {(a,b):c for a in 0..n,b in 0..n where a!=b}\n",
        "let m = { (a, b): c for a in 0..n, b in 0..n where a != b }\n",
    );
    check("f({1: 2})\n", "f({ 1: 2 })\n");
}

#[test]
fn indentation_counts_lines_with_open_brackets() {
    check(
        "for i in xs {\nif i > 0 {\n      f(i)\n}\n}\n",
        "for i in xs {\n    if i > 0 {\n        f(i)\n    }\n}\n",
    );
    // Two brackets opened on one line indent the lines inside once.
    check("foo(a, [\n1,\n2,\n])\n", "foo(a, [\n    1,\n    2,\n])\n");
    // A closing bracket lines up with the line that opened it.
    check("foo(a, [\n1,\n], b)\n", "foo(a, [\n    1,\n], b)\n");
    check(
        "foo(a,\nbar({\nx: 1\n}))\n",
        "foo(a,\n    bar({\n        x: 1\n    }))\n",
    );
    // Brackets closed before a bracket opens on the line do not count.
    check(
        "fn f(a: int,\nb: int) {\nreturn a\n}\n",
        "fn f(a: int,\n    b: int) {\n    return a\n}\n",
    );
    check(
        "if c {\nx = 1\n} else {\nx = 2\n}\n",
        "if c {\n    x = 1\n} else {\n    x = 2\n}\n",
    );
}

#[test]
fn blank_lines_collapse_and_the_file_ends_in_one_newline() {
    check(
        "\n\n\nlet a = 1\n\n\n\nlet b = 2\n\n\n",
        "let a = 1\n\nlet b = 2\n",
    );
    check("let a = 1", "let a = 1\n");
    // A CRLF file stays CRLF.
    check(
        "let a = 1   \r\n\r\n\r\nlet b = 2\t\r\n",
        "let a = 1\r\n\r\nlet b = 2\r\n",
    );
    check("", "");
    check(" \n\n \t\n", "");
}

#[test]
fn comments_keep_their_text_and_take_the_indentation_of_their_line() {
    check(
        "//top   \n\n  // doc\nfn f() {\n// inside\n  let a = 1    //  trailing  \n        // last\n}\n// end\n",
        "//top\n\n// doc\nfn f() {\n    // inside\n    let a = 1 //  trailing\n    // last\n}\n// end\n",
    );
    check("let a = 1 // x", "let a = 1 // x\n");
    check("// only a comment", "// only a comment\n");
    check("f(a, // first\nb)\n", "f(a, // first\n    b)\n");
    check("f(\n// why\na)\n", "f(\n    // why\n    a)\n");
}

#[test]
fn comments_the_author_lined_up_stay_in_one_column() {
    // Lined up in the source: one space past the longest code of the run,
    // counted in characters (`é` is two bytes); a blank line ends a run.
    check(
        "let a = 1        // one\nlet bbbb  =  22  // two\nlet s = \"é\"      // three\n\nlet c = 1    // alone\n",
        "let a = 1     // one\nlet bbbb = 22 // two\nlet s = \"é\"   // three\n\nlet c = 1 // alone\n",
    );
    // Indented differently by the layout, lined up all the same.
    check(
        "fn f() {\nlet x = 1         // in\n      let yy = 2  // in too\n}\n",
        "fn f() {\n    let x = 1  // in\n    let yy = 2 // in too\n}\n",
    );
    // Not lined up in the source: one space each.
    check(
        "let a = 1    // one\nlet bb = 2  // two\n",
        "let a = 1 // one\nlet bb = 2 // two\n",
    );
    // A comment on a line of its own, or a line without one, ends a run.
    check(
        "let a = 1    // one\n// own\nlet b = 22   // two\nlet c = 3\nlet d = 444  // four\n",
        "let a = 1 // one\n// own\nlet b = 22 // two\nlet c = 3\nlet d = 444 // four\n",
    );
}

#[test]
fn text_that_does_not_parse_is_refused_with_its_diagnostic() {
    let d = format_source(3, "let x = (1 + ]").unwrap_err();
    assert_eq!(d.code, crate::diag::Code::Syntax);
    assert_eq!(d.span().map(|s| s.file), Some(3));
    assert!(format_source(0, "let s = \"open").is_err());
    assert!(format_source(0, "let x = 1 @").is_err());
}

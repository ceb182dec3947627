//! One test per distinct diagnostic: it has the code of its kind (the
//! code, not the wording, is what stays: docs/errors.md lists them), says
//! something, and its primary label sits where the mistake is (line:col,
//! 1-based). A `@` in a case's source marks the expected start of the
//! primary label (it is removed before compiling).

use msclc::diag::Code;
use msclc::driver;
use std::path::Path;

mod ints;
mod python;
mod running;

const HEADER: &str =
    "program \"t\" {\n    collective = allreduce(2, chunk_factor: 1, inplace: true)\n}\n";

/// Compiles `src` (with `@` removed) and checks the first diagnostic.
fn expect(src: &str, code: Code) {
    let at = src
        .find('@')
        .expect("case marks its expected position with @");
    let text = src.replacen('@', "", 1);
    let c = driver::compile_source(Path::new("case.mscl"), text.clone(), &[]);
    let Err(diags) = &c.result else {
        panic!("expected a diagnostic {} for:\n{text}", code.id());
    };
    let d = &diags[0];
    let rendered = c.sources.render(diags);
    assert_eq!(d.code, code, "the wrong kind:\n{rendered}");
    assert!(
        rendered.starts_with(&format!("error[{}]: ", code.id())),
        "{rendered}"
    );
    let Some(primary) = &d.primary else {
        panic!("no place in the program:\n{rendered}")
    };
    assert_eq!(
        primary.span.start as usize, at,
        "label at the wrong place:\n{rendered}"
    );
    let line = text[..at].matches('\n').count() + 1;
    let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
    assert!(
        rendered.contains(&format!("case.mscl:{line}:{col}")),
        "no case.mscl:{line}:{col} in:\n{rendered}"
    );
    assert!(
        !d.message.is_empty() && !primary.message.is_empty(),
        "the message or the primary label says nothing:\n{rendered}"
    );
}

/// The errors of `body` after the header, as the terminal shows them.
fn rendered_errors(body: &str) -> String {
    let c = driver::compile_source(Path::new("case.mscl"), with_header(body), &[]);
    let Err(diags) = &c.result else {
        panic!("expected an error in:\n{body}");
    };
    c.sources.render(diags)
}

fn with_header(body: &str) -> String {
    format!("{HEADER}{body}")
}

#[test]
fn unexpected_token() {
    expect("let x = (1 + @]", Code::Syntax);
}

#[test]
fn unexpected_end_of_file() {
    expect("for i in 0..2 { rank(0)@", Code::Syntax);
    // Right after the last thing written, not on the empty line after it.
    expect("let x = 1 +@\n\n", Code::Syntax);
}

#[test]
fn a_file_ending_inside_brackets_points_at_the_one_left_open() {
    let shown = rendered_errors("for i in 0..2 {\n    let x = [f(1), (2\n");
    assert!(
        shown.contains("this `(` is never closed") && shown.contains("close it with `)`"),
        "{shown}"
    );
    // The caret right after `(2`, on line 5 (after the header's three).
    assert!(shown.contains("case.mscl:5:22"), "{shown}");
    // The line under the source line marks the `(` of `(2` (both lines
    // start with a gutter of the same width).
    let lines: Vec<&str> = shown.lines().collect();
    let code = lines
        .iter()
        .position(|l| l.contains("let x = [f(1), (2"))
        .unwrap();
    assert_eq!(
        lines[code + 1].find('-'),
        lines[code].find("(2"),
        "the `(` of `(2` is marked:\n{shown}"
    );
    let plain = rendered_errors("let x = 1 +\n");
    assert!(!plain.contains("never closed"), "{plain}");
    assert!(plain.contains("finish the statement"), "{plain}");
}

#[test]
fn unexpected_character() {
    expect("let x = 1 @$ 2", Code::Syntax);
}

/// A file of thousands of mistakes gets the first hundred, in the order
/// of the file, the last saying how many more there are (and is checked
/// in linear time: each "did you mean" scans the names in scope).
#[test]
fn the_first_hundred_errors_are_reported_and_the_rest_counted() {
    let lines: String = (0..3000).map(|i| format!("let z{i} = nope{i}\n")).collect();
    let c = driver::compile_source(Path::new("case.mscl"), with_header(&lines), &[]);
    let Err(d) = &c.result else {
        panic!("undefined names compiled")
    };
    assert_eq!(d.len(), 100);
    assert!(d.iter().all(|d| d.code == Code::UnknownName));
    let rendered = c.sources.render(d);
    assert!(rendered.contains("`nope0` is not defined"), "{rendered}");
    assert!(rendered.contains("`nope99` is not defined"), "{rendered}");
    assert!(!rendered.contains("`nope100` is not defined"), "{rendered}");
    assert!(
        d[99]
            .notes
            .iter()
            .any(|n| n == "2900 more errors follow, not shown: fix these first"),
        "{rendered}"
    );
}

/// The first hundred are those first in the file, not the first found:
/// a function's body is checked after the top level, so that its errors
/// come after hundreds of others (and past the few hundred the checker
/// holds at once); a name used out of sight of its `let` is still pointed
/// at the `let`.
#[test]
fn the_first_hundred_errors_are_those_first_in_the_file() {
    let mut body: Vec<String> = (0..349)
        .map(|i| format!("    let y{i} = inner{i}\n"))
        .collect();
    body.insert(
        20,
        "    for k in 0..2 { let hidden = k }\n    let w = hidden\n".to_string(),
    );
    let top: String = (0..400).map(|i| format!("let z{i} = outer{i}\n")).collect();
    let text = format!("fn f() {{\n{}}}\n{top}", body.concat());
    let c = driver::compile_source(Path::new("case.mscl"), with_header(&text), &[]);
    let Err(d) = &c.result else {
        panic!("undefined names compiled")
    };
    let messages: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
    let mut expected: Vec<String> = (0..99)
        .map(|i| format!("`inner{i}` is not defined"))
        .collect();
    expected.insert(20, "`hidden` is not in sight here".to_string());
    assert_eq!(messages, expected);
    assert!(
        d[99]
            .notes
            .iter()
            .any(|n| n == "650 more errors follow, not shown: fix these first"),
        "{:?}",
        d[99].notes
    );
}

#[test]
fn param_declared_twice() {
    expect(
        "param n: int = 1\nparam @n: int = 2\nprogram \"t\" {\n    collective = allreduce(n, chunk_factor: 1, inplace: true)\n}\n",
        Code::Misplaced,
    );
}

#[test]
fn bad_string_escape() {
    expect("let s = @\"a\\qb\"", Code::Literal);
}

/// A string or a list added to what it cannot join: both sides labelled
/// (neither alone is the mistake), and text made of an int shown how.
#[test]
fn adding_a_string_and_an_int_labels_both_sides() {
    expect("let x = @\"tb\" + 1", Code::TypeMismatch);
    let shown = rendered_errors("let x = 1 + \"tb\"");
    assert!(
        shown.contains("cannot add values of type `int` and `str`"),
        "{shown}"
    );
    assert!(
        shown.contains("of type `int`") && shown.contains("of type `str`"),
        "{shown}"
    );
    assert!(shown.contains("`str(n)` writes an int as text"), "{shown}");
    let shown = rendered_errors("let x = [1] + 2");
    assert!(
        shown.contains("cannot add values of type `list[int]` and `int`"),
        "{shown}"
    );
    assert!(!shown.contains("str(n)"), "{shown}");
}

#[test]
fn undefined_name() {
    expect(&with_header("let x = @nranks + 1"), Code::UnknownName);
}

/// The "did you mean" of a misspelt name is the same on every run: of the
/// names as close as each other, the innermost, then the first in
/// alphabetical order (the checker keeps a scope's names in a hash map,
/// whose order changes from one map to the next).
#[test]
fn the_hint_for_a_misspelt_name_is_the_same_every_time() {
    // `tower1` is two edits from `sower3`, `power2` and `towerxy1`.
    let globals = "let sower3 = 1\nlet towerxy1 = 2\nlet power2 = 3\nlet x = tower1 + 1\n";
    let inner =
        "let sower3 = 1\nlet power2 = 3\nfor i in 0..2 { let towerxy1 = i\n let x = tower1 }\n";
    for _ in 0..16 {
        let seen = rendered_errors(globals);
        assert!(seen.contains("did you mean `power2`?"), "{seen}");
        let seen = rendered_errors(inner);
        assert!(seen.contains("did you mean `towerxy1`?"), "{seen}");
    }
}

/// A name of a few letters is taken for a look-alike one edit away only
/// (`x` is no misspelling of the constant `LL`); a name bound out of
/// sight (a `let` further down, or in a block that ended) is pointed at,
/// not taken for a misspelling.
#[test]
fn a_name_out_of_sight_is_pointed_at_and_short_names_are_not_guessed() {
    let seen = rendered_errors("let q = zz + 1\n");
    assert!(!seen.contains("did you mean"), "{seen}");
    let seen = rendered_errors("let y = x + 1\nlet x = 1\n");
    assert!(seen.contains("`x` is not in sight here"), "{seen}");
    assert!(
        seen.contains("5 │ let x = 1\n  │     - `x` is bound here"),
        "{seen}"
    );
    assert!(!seen.contains("did you mean"), "{seen}");
    let seen = rendered_errors("if true { let a = 1 } else { }\nlet b = a\n");
    assert!(
        seen.contains("`a` is bound here, out of sight of the use"),
        "{seen}"
    );
    // The binding is the one help: no way to define or import a name.
    assert_eq!(seen.matches("help:").count(), 1, "{seen}");
}

/// A name no program line binds: defined with `let` or `param`; a
/// function of the standard library called (or named) without its import
/// names the module to import, and only then.
#[test]
fn an_unknown_name_of_the_standard_library_names_its_module() {
    let seen = rendered_errors("let q = zz + 1\n");
    assert!(
        seen.contains("help: define it with `let` or `param` before this use\n"),
        "{seen}"
    );
    assert!(!seen.contains("import"), "{seen}");
    let seen = rendered_errors("let c = all_pairs_channels(2)\n");
    assert!(
        seen.contains("help: `all_pairs_channels` is a function of the standard library: `import \"std/sync\"`"),
        "{seen}"
    );
    let seen = rendered_errors("let s = peer_slot\n");
    assert!(seen.contains("`import \"std/peers\"`"), "{seen}");
    let seen = rendered_errors("let c = no_such_function(2)\n");
    assert!(!seen.contains("help"), "{seen}");
}

/// A function that declares a result and can end without a `return`
/// (here when `x` is not positive) is refused at its closing brace: its
/// call would give no value where the checker promised one.
#[test]
fn a_function_can_end_without_its_result() {
    expect(
        &with_header("fn f(x: int) -> int {\n    if x > 0 { return 1 }\n@}\nlet r = rank(f(0))\n"),
        Code::TypeMismatch,
    );
    expect(
        &with_header("fn g() -> bool {@}\nif g() { }\n"),
        Code::TypeMismatch,
    );
    // Every path: both branches of an `if` returning, a loop's `return`
    // then `assert(false, ..)`, a `pipeline` (run once) that returns.
    for every_path in [
        "fn f(x: int) -> int {\n    if x > 0 { return 1 } else { return 0 }\n}\n",
        "fn f(x: int) -> int {\n    for i in 0..4 { if i == x { return i } }\n    assert(false, \"not found\")\n}\n",
        "fn f(x: int) -> int {\n    pipeline(unit_size: 1024, num_chunks: 1) { return x }\n}\n",
    ] {
        let c = driver::compile_source(
            Path::new("case.mscl"),
            with_header(&format!("{every_path}let r = rank(f(0))\n")),
            &[],
        );
        assert!(
            c.result.is_ok(),
            "{}",
            c.sources.render(c.result.as_ref().err().unwrap())
        );
    }
}

/// A lone carriage return ends a line (as the lexer reads it): a
/// diagnostic after one says its line, and shows that line alone.
#[test]
fn lines_broken_by_lone_carriage_returns_are_lines() {
    let text = HEADER.replace('\n', "\r") + "let a = 1\rlet b = nope\r";
    let c = driver::compile_source(Path::new("case.mscl"), text, &[]);
    let diags = c.result.as_ref().expect_err("an unknown name");
    let rendered = c.sources.render(diags);
    assert!(rendered.contains("case.mscl:5:9"), "{rendered}");
    assert!(rendered.contains("5 │ let b = nope\n"), "{rendered}");
}

/// Two parameters of one name: the second is refused (the body could
/// read only one of them, and a call could not name both).
#[test]
fn function_parameter_declared_twice() {
    expect(
        &with_header("fn f(a: int, @a: int) -> int { return a }\nlet r = f(1, 2)\n"),
        Code::Misplaced,
    );
}

/// A barrier that lists a block twice would wait for two arrivals of it,
/// and hang: refused at the list.
#[test]
fn a_barrier_listing_a_block_twice() {
    expect(
        &with_header("rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0)\nrank(0).barrier(tb_list: @[0, 1, 0])\n"),
        Code::ThreadBlock,
    );
}

/// A thread block group that lists a block twice would give it two shares
/// of each op (the reference refuses it too): refused at the list.
#[test]
fn a_group_listing_a_block_twice() {
    expect(
        &with_header(
            "let g = tb_group(@[1, 0, 1])
rank(0).copy(rank(0).output[0], rank(0).input[0], tb_group: g)
",
        ),
        Code::ThreadBlock,
    );
}

/// A field the value lacks: the note lists the fields its type has, and
/// the one a near spelling meant.
#[test]
fn an_unknown_field_lists_the_fields_of_its_type() {
    expect(&with_header("let a = rank(0).@idd\n"), Code::NoSuchMember);
    let rendered = rendered_errors("let a = rank(0).idd\n");
    assert!(
        rendered.contains("= its fields are: input, output, id"),
        "{rendered}"
    );
    assert!(rendered.contains("help: did you mean `id`?"), "{rendered}");
    let rendered = rendered_errors("let b = memory_channel(1, 0).dst\n");
    assert!(
        rendered.contains("= its fields are: src_rank, dst_rank"),
        "{rendered}"
    );
    let rendered = rendered_errors("let c = (1, 2).size\n");
    assert!(rendered.contains("has no fields"), "{rendered}");
}

#[test]
fn unknown_function() {
    expect(&with_header("@memory_chanel(1, 0)"), Code::UnknownName);
}

#[test]
fn wrong_argument_type() {
    expect(&with_header("rank(@\"zero\")"), Code::TypeMismatch);
}

/// A whole buffer where a chunk goes (the DSL's `buffer[:]`) is told how
/// to slice it.
#[test]
fn a_buffer_for_a_chunk_is_told_its_slice() {
    expect(
        &with_header("rank(0).copy(@rank(0).output, rank(0).input[0], tb: 0)"),
        Code::TypeMismatch,
    );
    let said = rendered_errors("rank(0).copy(rank(0).output, rank(0).input[0], tb: 0)");
    assert!(said.contains("all of `b` is `b[0..b.size]`"), "{said}");
}

#[test]
fn unknown_keyword_argument() {
    expect(
        &with_header("memory_channel(1, 0).signal(tb: 0, @sync: after)"),
        Code::Arguments,
    );
}

#[test]
fn missing_argument() {
    expect(
        &with_header("@rank(0).copy(rank(0).output[0])"),
        Code::Arguments,
    );
}

#[test]
fn too_many_arguments() {
    expect(&with_header("rank(0, @1)"), Code::Arguments);
}

#[test]
fn argument_given_twice() {
    expect(
        &with_header("rank(0).barrier(tb_list: [0], @tb_list: [1])"),
        Code::Arguments,
    );
}

#[test]
fn positional_after_keyword() {
    expect(
        &with_header("memory_channel(dst_rank: 1, @0)"),
        Code::Arguments,
    );
}

#[test]
fn no_such_method() {
    expect(&with_header("rank(0).@send(1)"), Code::NoSuchMember);
}

#[test]
fn no_such_field() {
    expect(&with_header("let b = rank(0).@scratch"), Code::NoSuchMember);
}

#[test]
fn condition_not_bool() {
    expect(&with_header("if @1 { }"), Code::TypeMismatch);
}

#[test]
fn loop_over_non_iterable() {
    expect(&with_header("for x in @5 { }"), Code::TypeMismatch);
}

#[test]
fn list_elements_differ() {
    expect("let l = [1, @true]", Code::TypeMismatch);
}

#[test]
fn param_type_not_settable() {
    expect("param c: @chunk = 1", Code::Misplaced);
}

#[test]
fn unknown_program_option() {
    expect(
        "program \"t\" {\n    collective = allreduce(2)\n    @instance = 2\n}",
        Code::Program,
    );
}

#[test]
fn option_of_wrong_type() {
    expect(
        "program \"t\" {\n    collective = allreduce(2)\n    protocol = @\"LL\"\n}",
        Code::TypeMismatch,
    );
}

#[test]
fn return_outside_function() {
    expect("@return 1", Code::Misplaced);
}

#[test]
fn builtin_redefined() {
    expect("fn @rank(x: int) -> int { return x }", Code::Misplaced);
}

#[test]
fn unknown_type() {
    expect("fn f(x: @integer) { }", Code::UnknownName);
}

#[test]
fn no_program() {
    expect("@let x = 1", Code::Program);
}

#[test]
fn operation_before_program() {
    expect(
        "let r = @rank(0)\nprogram \"t\" { collective = allreduce(2) }",
        Code::Program,
    );
}

#[test]
fn collective_missing() {
    expect("@program \"t\" {\n    protocol = LL\n}", Code::Program);
}

#[test]
fn if_expression_branches_of_different_types() {
    expect(
        &with_header("let x = if true { 1 } else { @\"two\" }\n"),
        Code::TypeMismatch,
    );
}

#[test]
fn if_expression_without_else() {
    expect("let x = if true { 1 } @+ 2\n", Code::Syntax);
    let c = driver::compile_source(
        Path::new("case.mscl"),
        "let x = if true { 1 }\n".into(),
        &[],
    );
    let Err(diags) = &c.result else {
        panic!("an `if` value without `else` compiled");
    };
    assert!(
        diags[0]
            .notes
            .iter()
            .any(|n| n.contains("needs an `else` branch")),
        "{:?}",
        diags[0]
    );
}

/// A tuple of two ints (stored without an allocation) is a tuple in every
/// use: indexed, unpacked, measured, compared with one built another way,
/// printed, nested, and as a map key found by a computed pair. Every
/// assertion holds, so the first error is the last line's.
#[test]
fn a_tuple_of_two_ints_is_a_tuple_in_every_use() {
    expect(
        &with_header(
            "let p = (3, 4)\n\
             assert(p[0] == 3 && p[1] == 4, \"index\")\n\
             let (a, b) = p\n\
             assert(a == 3 && b == 4 && len(p) == 2, \"unpack and len\")\n\
             assert(p == (1 + 2, 2 * 2) && p != (4, 3), \"equality\")\n\
             assert(str(p) == \"(3, 4)\" && str(((1, 2), 3)) == \"((1, 2), 3)\", \"text\")\n\
             let ((c, d), e) = ((5, 6), 7)\n\
             assert(c + d + e == 18, \"nested\")\n\
             let m = {(i, j): i * 10 + j for i in 0..9, j in 0..9 where i != j}\n\
             assert(m[(a, b)] == 34 && m[p] == 34 && (b, a) in m && !((a, a) in m), \"map\")\n\
             let names = {(\"x\", 1): 1, (\"y\", 2): 2}\n\
             assert(names[(\"x\", 1)] == 1 && names[(\"y\", 2)] == 2, \"other tuples\")\n\
             for k, v in m where v == 34 { assert(k == p, \"keys\") }\n\
             @assert(false, \"every assertion above held\")",
        ),
        Code::Assertion,
    );
}

/// What the first diagnostic of `body` (after the header) says, wherever
/// it says it: code, message, primary label and notes.
fn said(body: &str) -> (Code, String, String, Vec<String>) {
    let text = with_header(body);
    let c = driver::compile_source(Path::new("case.mscl"), text.clone(), &[]);
    let Err(diags) = &c.result else {
        panic!("expected a diagnostic for:\n{text}");
    };
    let d = &diags[0];
    let label = d
        .primary
        .as_ref()
        .map_or(String::new(), |l| l.message.clone());
    (d.code, d.message.clone(), label, d.notes.clone())
}

/// The evaluator reads a variable or a constant where it is held (an
/// operator's operands, a map and its pair key, an index, a builtin's
/// argument) and takes the general way for anything else: a mistake says
/// the same either way. Each case is written twice, the second with `+ 0`
/// to make the operand an expression.
#[test]
fn an_operand_read_in_place_says_what_an_expression_says() {
    let cases = [
        // A pair key the map lacks, as an index and as a method's receiver.
        "let m = {(i, j): memory_channel(i, j) for i in 0..2, j in 0..2 where i != j}\n\
         for a in 0..2 { let b = 0\n let c = m[(A, b)] }",
        "let m = {(i, j): memory_channel(i, j) for i in 0..2, j in 0..2 where i != j}\n\
         for a in 0..2 { let b = 0\n m[(A, b)].signal(tb: 0) }",
        // Arithmetic that overflows or divides by zero.
        "let big = 18446744073709551615\nfor one in 1..2 { let x = BIG + one }",
        "let zero = 0\nfor x in 3..4 { let y = x / ZERO }",
        "for s in 64..65 { let y = 1 << S }",
        // An index past the end of a list and of a buffer.
        "let l = [1, 2]\nfor i in 2..3 { let x = l[I] }",
        "for i in 5..6 { let c = rank(0).input[I] }",
        // A builtin's argument out of its range.
        "for r in 7..8 { let x = rank(R) }",
    ];
    for case in cases {
        let operand = |with: &str| {
            ["A", "BIG", "ZERO", "S", "I", "R"]
                .iter()
                .fold(case.to_string(), |text, hole| {
                    text.replace(hole, &format!("{}{with}", hole.to_lowercase()))
                })
        };
        let (in_place, general) = (said(&operand("")), said(&operand(" + 0")));
        assert_eq!(in_place, general, "{case}");
        assert!(
            in_place.3.iter().any(|n| n.starts_with("when ")),
            "the loop values are noted: {in_place:?}"
        );
    }
}

/// What a function without a value returns and the empty tuple `()` are
/// one value: an `if` may give either (its branches once "differed in
/// type: `()` and `()`").
#[test]
fn no_value_and_the_empty_tuple_are_one_type() {
    let text = with_header("fn f() { }\nlet a = if true { f() } else { () }\n");
    let c = driver::compile_source(Path::new("case.mscl"), text, &[]);
    assert!(
        c.result.is_ok(),
        "{}",
        c.sources.render(&c.result.err().unwrap_or_default())
    );
}

//! Ints: a literal past what msclc reads, and the range it computes in,
//! from i64::MIN to u64::MAX (the largest message size), where a builtin
//! that counts in 64 bits refuses what passes i64::MAX.

use super::*;

#[test]
fn integer_too_large() {
    expect("let x = @99999999999999999999999", Code::Literal);
}

/// Ints run from i64::MIN to u64::MAX, the largest message size (the
/// default of every port's `max_message_size`), as Python's do there:
/// compared, combined and written into the plan as they are, never
/// wrapped to another number.
#[test]
fn ints_reach_the_largest_message_size_unwrapped() {
    let program = format!(
        "param size: int = 18446744073709551615\n{HEADER}\
         assert(size > 0 && size != -1, \"the largest message size is positive\")\n\
         assert(size / 2 == 9223372036854775807 && size % 10 == 5, \"floor division\")\n\
         assert(9223372036854775807 + 1 == 1 << 63, \"past i64::MAX\")\n\
         assert(-9223372036854775808 == -(1 << 63), \"i64::MIN\")\n\
         assert(min(size, 1 << 30) == 1073741824 && max(size, 0) == size, \"min, max\")\n\
         assert(str(size) == \"18446744073709551615\" && 0xFFFFFFFFFFFFFFFF == size, \"text\")\n\
         assert({{size: 1}}[18446744073709551615] == 1, \"a map key\")\n",
    )
    .replace(
        "inplace: true)\n",
        "inplace: true)\n    max_message_size = size - 1\n",
    );
    let c = driver::compile_source(Path::new("case.mscl"), program.clone(), &[]);
    match &c.result {
        Ok(plan) => assert_eq!(plan.options.max_message_size, (u64::MAX - 1).into()),
        Err(d) => panic!("{}", c.sources.render(d)),
    }
    // -D reads the same ints.
    let set = [("size".to_string(), "18446744073709551614".to_string())];
    let c = driver::compile_source(Path::new("case.mscl"), program, &set);
    let Err(d) = &c.result else {
        panic!("size - 1 is not the largest message size")
    };
    assert_eq!(d[0].code, Code::Assertion, "{}", c.sources.render(d));
}

#[test]
fn an_int_past_the_largest_message_size_is_an_overflow() {
    expect(
        &with_header("let x = @18446744073709551615 + 1"),
        Code::Arithmetic,
    );
    expect(
        &with_header("let x = @-9223372036854775808 - 1"),
        Code::Arithmetic,
    );
    expect(&with_header("let x = @(1 << 63) * 2"), Code::Arithmetic);
}

/// A builtin that counts in 64 bits refuses an int past i64::MAX, in a
/// list written in the call (of one item or more) as in one held in a
/// variable.
#[test]
fn an_int_past_i64_in_a_builtin_list_is_too_large() {
    expect(
        &with_header("let g = tb_group(@[0, 18446744073709551615])"),
        Code::OutOfRange,
    );
    expect(
        &with_header("let g = tb_group(@[18446744073709551615])"),
        Code::OutOfRange,
    );
    expect(
        &with_header("let tbs = [18446744073709551615]\nlet g = tb_group(@tbs)"),
        Code::OutOfRange,
    );
}

//! Mistakes found as the program runs (a rank or slice out of range, a
//! channel the wrong way round, a signal never waited for, ...) and in
//! what the command line sets: each at the line that made it, with the
//! loop values of that moment.

use super::*;

#[test]
fn rank_out_of_range() {
    expect(&with_header("let r = rank(@5)"), Code::OutOfRange);
}

#[test]
fn slice_out_of_bounds_names_loop_variables() {
    let src = with_header("for i in 0..3 {\n    let c = rank(0).input[@i]\n}");
    expect(&src, Code::ChunkBounds);
    let c = driver::compile_source(Path::new("case.mscl"), src.replacen('@', "", 1), &[]);
    let Err(d) = c.result else { panic!() };
    assert_eq!(d[0].notes[0], "when i = 2");
    assert!(d[0].notes[1].starts_with("help: its chunks are 0 to 1:"));
}

#[test]
fn chunk_on_wrong_rank_for_channel() {
    expect(
        &with_header("memory_channel(1, 0).put(rank(1).input[0], @rank(1).input[1], tb: 0)"),
        Code::WrongPlace,
    );
}

/// A channel made with its ranks the wrong way round (the constructors
/// take the destination first): the note says which way it runs and how
/// to write the one meant; a chunk on neither end gets no such note.
#[test]
fn channel_made_the_other_way_round() {
    let notes = |line: &str| {
        let src = with_header(line).replacen("allreduce(2", "allreduce(3", 1);
        let c = driver::compile_source(Path::new("case.mscl"), src, &[]);
        let Err(d) = c.result else {
            panic!("{line} compiled")
        };
        assert_eq!(d[0].code, Code::WrongPlace);
        d[0].notes.clone()
    };
    let swapped = notes("memory_channel(0, 1).put(rank(1).input[0], rank(0).input[1], tb: 0)");
    assert_eq!(
        swapped,
        ["this channel runs from rank 1 to rank 0 (`memory_channel(dst, src)` takes the destination first): for one from rank 0 to rank 1, write `memory_channel(1, 0)`"]
    );
    let port = notes("port_channel(0, 1).put(rank(1).input[0], rank(0).input[1], tb: 0)");
    assert!(port[0].contains("write `port_channel(1, 0)`"), "{port:?}");
    let neither = notes("memory_channel(2, 0).put(rank(2).input[0], rank(1).input[1], tb: 0)");
    assert!(
        !neither.iter().any(|n| n.contains("runs from")),
        "{neither:?}"
    );
}

#[test]
fn chunk_sizes_differ() {
    expect(
        &with_header("rank(0).copy(rank(0).output[0..2], @rank(0).input[0], tb: 0)"),
        Code::ChunkSizes,
    );
}

#[test]
fn packet_op_outside_scratch() {
    expect(
        &with_header(
            "memory_channel(1, 0).put_packets(@rank(1).input[0], rank(0).input[0], tb: 0)",
        ),
        Code::WrongPlace,
    );
}

#[test]
fn tb_and_tb_group_both_given() {
    expect(
        &with_header(
            "rank(0).copy(rank(0).output[0], rank(0).input[0], tb: 0, tb_group: @tb_group([0, 1]))",
        ),
        Code::ThreadBlock,
    );
}

#[test]
fn neither_tb_nor_group_given() {
    expect(
        &with_header("@rank(0).copy(rank(0).output[0], rank(0).input[0])"),
        Code::ThreadBlock,
    );
}

#[test]
fn division_by_zero() {
    expect(&with_header("let x = @4 / 0"), Code::Arithmetic);
}

#[test]
fn nested_pipelines() {
    expect(&with_header("pipeline(unit_size: 1, num_chunks: 1) {\n    @pipeline(unit_size: 1, num_chunks: 1) { }\n}"), Code::Pipeline);
}

#[test]
fn switch_rank_not_in_group() {
    expect(
        &with_header("let sw = switch_channel([0], input)\nsw.at_rank(@1)"),
        Code::WrongPlace,
    );
}

#[test]
fn unmatched_signal() {
    expect(
        &with_header("@memory_channel(1, 0).signal(tb: 0)"),
        Code::SignalWait,
    );
}

/// A ring that waits on its own end of the channel it signals on: the
/// error points at that wait too.
#[test]
fn a_wait_on_the_signalling_end_is_pointed_at() {
    let rendered =
        rendered_errors("let ch = memory_channel(1, 0)\nch.signal(tb: 0)\nch.wait(tb: 0)\n");
    assert!(
        rendered.contains("rank 0 waits on this same channel, its own end: a wait sees the peer's signals on the channel back, not its own"),
        "{rendered}"
    );
}

/// A ring's wait moved from `prev` to `next`: the signals it should
/// have met go unwaited on one channel pair, and it waits on another whose
/// peer never signals. The error shows both, the misplaced wait at its
/// line.
#[test]
fn a_wait_on_the_channel_to_another_peer_is_pointed_at() {
    let ring = "\
program \"t\" { collective = allreduce(3, chunk_factor: 1, inplace: true) }
let n = 3
let next = [memory_channel((r + 1) % n, r) for r in 0..n]
let prev = [memory_channel((r + n - 1) % n, r) for r in 0..n]
for r in 0..n {
    next[r].signal(tb: 0)
}
for r in 0..n {
    next[r].wait(tb: 0)
}
";
    let c = driver::compile_source(Path::new("case.mscl"), ring.to_string(), &[]);
    let Err(diags) = &c.result else {
        panic!("the ring compiled");
    };
    assert_eq!(diags.len(), 1);
    let wait = ring.find("next[r].wait").unwrap();
    let label = diags[0]
        .secondary
        .iter()
        .find(|l| l.span.start as usize == wait)
        .unwrap_or_else(|| panic!("no label at the wait: {}", c.sources.render(diags)));
    assert!(
        label.message.starts_with("and a mismatch here: "),
        "{}",
        label.message
    );
    assert!(label.message.contains("waits 1 time"), "{}", label.message);
}

#[test]
fn missing_file_is_one_line() {
    let c = driver::compile(Path::new("/nonexistent/x.mscl"), &[]);
    let Err(d) = c.result else {
        panic!("a missing file compiled")
    };
    assert_eq!(d[0].code, Code::Unreadable);
    assert_eq!(d[0].span(), None, "no place in a program");
    assert!(
        d[0].message.starts_with("cannot read /nonexistent/x.mscl"),
        "{}",
        d[0].message
    );
    assert!(d[0].notes.is_empty());
}

/// A param set twice to different values is refused, not settled by the
/// order of the options; twice to the same value is harmless.
#[test]
fn a_define_given_twice_differently_is_refused() {
    let src = "param num_gpus: int = 8\nprogram \"t\" { collective = allreduce(num_gpus) }";
    let twice = |second: &str| {
        let defines = [
            ("num_gpus".into(), "2".into()),
            ("num_gpus".into(), second.into()),
        ];
        driver::compile_source(Path::new("case.mscl"), src.to_string(), &defines).result
    };
    let Err(d) = twice("4") else {
        panic!("refused")
    };
    assert_eq!(d[0].code, Code::Define);
    assert_eq!(
        d[0].message,
        "-D num_gpus: given twice, as 2 and then 4: give it once"
    );
    assert!(twice("2").is_ok());
    assert!(twice("0x2").is_ok(), "the same value, written otherwise");
}

#[test]
fn unknown_define_lists_params() {
    let src = "param num_gpus: int = 8\nparam tbg: int in [1, 2] = 1\nprogram \"t\" { collective = allreduce(num_gpus) }".to_string();
    let c = driver::compile_source(
        Path::new("case.mscl"),
        src.clone(),
        &[("gpus".into(), "4".into())],
    );
    let Err(d) = c.result else { panic!() };
    assert_eq!(d[0].code, Code::Define);
    assert!(
        d[0].message.contains("declares no param `gpus`"),
        "{}",
        d[0].message
    );
    // Each as the program declares it, with the values it lists.
    assert_eq!(
        d[0].notes,
        vec![
            "the program's params are:\n  num_gpus: int = 8\n  tbg: int in [1, 2] = 1".to_string()
        ]
    );
    let c = driver::compile_source(
        Path::new("case.mscl"),
        src,
        &[("num_gpus".into(), "four".into())],
    );
    let Err(d) = c.result else { panic!() };
    assert_eq!(d[0].code, Code::Define);
    assert!(
        d[0].message.contains("`four` is not a valid int"),
        "{}",
        d[0].message
    );
    // It points at the param's declaration.
    assert_eq!(
        c.sources.location(d[0].span().unwrap()).map(|l| l.1),
        Some(1)
    );
}

#[test]
fn failed_assertion_of_the_program() {
    expect(
        &with_header("let n = 3\n@assert(n % 2 == 0, \"n must be even, not \" + str(n))"),
        Code::Assertion,
    );
}

#[test]
fn reduce_with_no_other_chunk() {
    expect(
        &with_header("rank(0).reduce(rank(0).input[0], @[], tb: 0)"),
        Code::ChunkSizes,
    );
}

#[test]
fn values_too_large_say_so_and_give_the_maximum() {
    expect(
        "program \"t\" {\n    collective = allreduce(8, chunk_factor: @1 << 60, inplace: true)\n}\n",
        Code::Limit);
    expect(
        "program \"t\" {\n    collective = allreduce(8, chunk_factor: 1, inplace: true)\n    instances = @1 << 40\n}\n",
        Code::Limit);
    expect(
        "program \"t\" {\n    collective = allgather(@1 << 40, chunk_factor: 1, inplace: true)\n}\n",
        Code::Limit);
    expect(
        "program \"t\" {\n    collective = allreduce(8, chunk_factor: 1, inplace: true)\n    num_threads_per_block = @2048\n}\n",
        Code::Limit);
    expect(
        &with_header("pipeline(unit_size: 1, num_chunks: @1 << 40) {\n}\n"),
        Code::Limit,
    );
}

#[test]
fn loop_values_in_a_note_are_the_current_ones_for_map_loops_with_tuple_keys() {
    let text = with_header(
        "let m = {(0, 1): 1, (1, 0): 2}\nfor (a, b), v in m {\n    let y = [0, 1][v]\n}\n",
    );
    let c = driver::compile_source(Path::new("case.mscl"), text, &[]);
    let Err(diags) = &c.result else {
        panic!("expected an out-of-bounds diagnostic");
    };
    let rendered = c.sources.render(diags);
    assert!(
        rendered.contains("when a = 1, b = 0, v = 2\n"),
        "{rendered}"
    );
}

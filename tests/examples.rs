//! Every program under examples/ compiles (the rejected conformance case aside).

use msclc::diag::Code;
use msclc::driver;
use msclc::passes::pairing;
use std::path::Path;

mod common;

#[test]
fn every_example_compiles() {
    let files = common::example_files();
    assert!(files.len() >= 39, "found only {} examples", files.len());
    for f in files {
        let expect_failure = f.ends_with("put/put_with_signal_fuse_test.mscl");
        let c = driver::compile(&f, &[]);
        assert_eq!(c.result.is_err(), expect_failure, "{}", f.display());
    }
}

/// A compiled plan's signal/wait warnings come from the pairing check the
/// passes ran before they added syncs and replicated instances: the final
/// plan balances as the evaluated one did, for every example (several
/// replicate 4 or 32 instances) and for a plan that balances per pair of
/// ranks only.
#[test]
fn the_passes_keep_how_signals_and_waits_balance() {
    let mut files = common::example_files();
    files.push(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/wait_on_the_wrong_channel.mscl"),
    );
    let mut warned = 0;
    for f in files {
        let c = driver::compile(&f, &[]);
        let Ok(plan) = &c.result else { continue };
        let balance = pairing::check(plan).unwrap_or_else(|d| {
            panic!(
                "{}: the final plan fails the check: {}",
                f.display(),
                d.message
            )
        });
        let pair_warnings = |ds: &[msclc::diag::Diagnostic]| {
            ds.iter()
                .filter(|d| d.code == Code::ChannelPair)
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
        };
        let recounted = pair_warnings(&pairing::warnings(plan, balance));
        assert_eq!(pair_warnings(&c.warnings), recounted, "{}", f.display());
        warned += usize::from(!recounted.is_empty());
    }
    assert!(
        warned >= 1,
        "no plan warned of signals and waits: the test shows nothing"
    );
}

/// A plan compiled only to be written leaves its instances to the JSON
/// writer, which makes them a rank at a time: the bytes written, compact
/// or indented, and the warnings are those of the plan with its instances
/// made, for every example (several replicate 4 or 32 instances), for the
/// AllToAll ring at 64 ranks (16 instances, written on every core), and for
/// both layouts of the copies with warnings of every kind.
#[test]
fn instances_made_as_written_are_the_instances_made_at_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cases = common::example_cases();
    let ring = root.join("examples/mscclpp/single_node/alltoall/alltoall_ring.mscl");
    cases.push((ring, vec![("num_gpus".into(), "64".into())]));
    let dir = common::scratch("written");
    for policy in ["interleaved", "none"] {
        let program = dir.join(format!("{policy}.mscl"));
        std::fs::write(&program, replicated_with_warnings(policy)).unwrap();
        cases.push((program, Vec::new()));
    }
    let limits = driver::Limits::default();
    let mut replicated = 0;
    for (f, defines) in &cases {
        let at_once = driver::compile_with(f, defines, limits);
        let as_written = driver::compile_leaving_instances(f, defines, limits, true);
        let (Ok(made), Ok(left)) = (&at_once.result, &as_written.result) else {
            assert_eq!(
                at_once.result.is_ok(),
                as_written.result.is_ok(),
                "{}",
                f.display()
            );
            continue;
        };
        // Every part: message, labels, notes.
        let messages = |c: &driver::Compilation| -> Vec<String> {
            c.warnings.iter().map(|d| format!("{:?}", **d)).collect()
        };
        assert_eq!(messages(&at_once), messages(&as_written), "{}", f.display());
        for pretty in [false, true] {
            let text = |plan| {
                let mut out = Vec::new();
                msclc::back::json::write_plan(plan, pretty, &mut out).unwrap();
                out
            };
            assert!(
                text(made) == text(left),
                "{} (pretty: {pretty}) differs",
                f.display()
            );
        }
        replicated += usize::from(!left.instances_made);
    }
    assert!(
        replicated >= 6,
        "only {replicated} plans left their instances to the writer"
    );
}

/// Three instances of a program that warns of everything a copy repeats:
/// a signal its peer waits for on another channel, too many sources and
/// destinations in one op, too many channels in a block and in an op.
fn replicated_with_warnings(policy: &str) -> String {
    format!(
        r#"program "replicated" {{
    collective = test_collective(2, input_size: 1, output_size: 0)
    instances = 3
    replication_policy = {policy}
}}

for r in 0..2 {{
    let peer = 1 - r
    let first = memory_channel(peer, r)
    let second = memory_channel(peer, r)
    if r == 0 {{
        first.signal(tb: 0)
    }} else {{
        second.wait(tb: 0)
    }}
    for i in 0..70 {{ first.put(rank(peer).input[0], rank(r).input[0], tb: 1) }}
    let many = [memory_channel(peer, r) for i in 0..20]
    for c in many {{ c.signal(tb: 2) }}
    for c in many {{ c.wait(tb: 2) }}
}}
"#
    )
}

/// A copy of a switch reference moves through its channel's buffer: with
/// the copies one after another (`none`), a broadcast into the output
/// buffer goes to the copy's own output chunks, not to an offset counted in
/// input chunks (which the fuzzer found past the end of the output, in a
/// plan `msclc sim` then refused to read). The reference compiler fails on
/// a `none` plan of several instances that moves chunks; interleaved
/// copies moved right before.
#[test]
fn copies_of_a_switch_reference_move_through_its_channels_buffer() {
    for (policy, want) in [("none", [1, 3, 5]), ("interleaved", [3, 4, 5])] {
        let text = format!(
            r#"program "copies" {{
    collective = allgather(2, chunk_factor: 1, inplace: false)
    instances = 3
    replication_policy = {policy}
}}
switch_channel([0, 1], output).at_rank(0).broadcast(rank(0).input[0], buffer_offset: 1, size: 1, tb: 0)
"#
        );
        let c = driver::compile_source(Path::new("copies.mscl"), text, &[]);
        let plan = c
            .result
            .unwrap_or_else(|d| panic!("{policy}: {}", c.sources.render(&d)));
        let mut json = Vec::new();
        msclc::back::json::write_plan(&plan, false, &mut json).unwrap();
        let json = String::from_utf8(json).unwrap();
        let read = msclc::front::plan_json::read_plan(&json).unwrap_or_else(|e| {
            panic!(
                "{policy}: the plan does not read back: {}",
                e.diagnostic().message
            )
        });
        let stores: Vec<u32> = read.ranks[0]
            .threadblocks
            .iter()
            .flat_map(|tb| &tb.ops)
            .map(|op| op.dst[0].index)
            .collect();
        // Two output chunks an instance: the broadcast's offset 1 in each.
        assert_eq!(stores, want, "{policy}");
    }
}

/// The ports follow their source programs for other sizes than the manifest
/// lists: each one with a rank-count param compiles at other valid values,
/// and the plan has the rank count asked for.
#[test]
fn ports_compile_at_other_sizes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mscclpp");
    let files = common::example_files()
        .into_iter()
        .filter(|f| f.starts_with(&root));
    let mut checked = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        let has = |param: &str| text.contains(&format!("param {param}: int"));
        // (the -D settings, the ranks the plan must have); multi-node ports span two nodes.
        let sizes: Vec<(Vec<(&str, usize)>, usize)> = match (has("num_gpus"), has("gpus_per_node"))
        {
            (true, true) => vec![
                (vec![("num_gpus", 4), ("gpus_per_node", 2)], 4),
                (vec![("num_gpus", 8), ("gpus_per_node", 4)], 8),
            ],
            // Two nodes (the programs that take a node count default to one).
            (false, true) => [2, 4]
                .map(|g| {
                    let mut set = vec![("gpus_per_node", g)];
                    if has("nnodes") {
                        set.push(("nnodes", 2));
                    }
                    (set, 2 * g)
                })
                .to_vec(),
            (true, false) => [2, 4, 16].map(|n| (vec![("num_gpus", n)], n)).to_vec(),
            (false, false) => Vec::new(),
        };
        for (settings, ranks) in sizes {
            let defines: Vec<(String, String)> = settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let c = driver::compile(&f, &defines);
            let plan = c
                .result
                .unwrap_or_else(|_| panic!("{} fails with {defines:?}", f.display()));
            assert_eq!(plan.ranks.len(), ranks, "{}", f.display());
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} port/size pairs checked");
}

/// Defaults follow the reference DSL: a semaphore's acquire and release
/// sync their thread block on both sides unless told otherwise.
#[test]
fn semaphore_ops_sync_both_sides_by_default() {
    let program = r#"
program "sem" {
    collective = test_collective(1, input_size: 0, output_size: 0)
    protocol = Simple
}
let sem = semaphore(0, initial_value: 0)
sem.acquire(tb: 0)
sem.release(tb: 1)
"#;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sem.mscl");
    let Ok(plan) = msclc::driver::compile_source(&path, program.into(), &[]).result else {
        panic!("the program compiles");
    };
    let names = |tb: usize| -> Vec<&str> {
        plan.ranks[0].threadblocks[tb]
            .ops
            .iter()
            .map(|op| op.name.json())
            .collect()
    };
    assert_eq!(names(0), ["nop", "sem_acquire", "nop"]);
    assert_eq!(names(1), ["nop", "sem_release", "nop"]);
}

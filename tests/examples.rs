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

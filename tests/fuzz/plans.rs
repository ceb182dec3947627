//! JSON plans the compiler wrote for the examples, structurally mutated.

use super::*;

/// Examples whose plans are small enough to simulate many times over in a
/// debug build, with the params that keep them small.
pub(crate) const PLAN_SEEDS: &[(&str, &[&str])] = &[
    ("examples/simple_allgather.mscl", &[]),
    ("examples/allreduce_nvls.mscl", &["-D", "world_size=4"]),
    ("examples/mscclpp/unit_tests/semaphore.mscl", &[]),
    ("examples/mscclpp/unit_tests/pipeline_test.mscl", &[]),
    ("examples/mscclpp/unit_tests/put_packet_test.mscl", &[]),
    ("examples/mscclpp/unit_tests/switch_reduce_test.mscl", &[]),
    (
        "examples/mscclpp/unit_tests/tbg/tbg_reduce_send_test.mscl",
        &[],
    ),
    (
        "examples/mscclpp/unit_tests/read_reduce_send_test.mscl",
        &[],
    ),
    ("examples/mscclpp/unit_tests/get/get_test.mscl", &[]),
    (
        "examples/mscclpp/unit_tests/put/put_with_signal_and_flush_test.mscl",
        &[],
    ),
    ("examples/mscclpp/executor_tests/reduce_pack_tbg.mscl", &[]),
    (
        "examples/mscclpp/executor_tests/reduce_nvls_pipeline.mscl",
        &[],
    ),
    ("examples/mscclpp/single_node/allgather_pkt_rppkt.mscl", &[]),
    ("examples/mscclpp/single_node/allreduce_pipeline.mscl", &[]),
];

/// Plans of the examples, written by the binary.
pub(crate) fn seed_plans(h: &mut Harness) -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut plans = Vec::new();
    for (path, defines) in PLAN_SEEDS {
        let mut a = args(&[
            "compile",
            &root.join(path).display().to_string(),
            "-o",
            "seed.json",
        ]);
        a.extend(args(defines));
        let o = h.exec(&a);
        assert_eq!(o.code(), Some(0), "{path} compiles: {}", o.stderr);
        let text = std::fs::read_to_string(h.dir.join("seed.json")).expect("a plan");
        plans.push(serde_json::from_str(&text).expect("the plan is JSON"));
    }
    plans
}

/// Every value seen under each key, across the seed plans: mutations draw
/// plausible replacements from it (op names, buffer types, ids).
pub(crate) fn vocabulary(plans: &[Value]) -> Vec<(String, Vec<Value>)> {
    pub(crate) fn walk(v: &Value, key: &str, out: &mut Vec<(String, Vec<Value>)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    walk(x, k, out);
                }
            }
            Value::Array(items) => {
                for x in items {
                    walk(x, key, out);
                }
            }
            scalar => match out.iter_mut().find(|(k, _)| k == key) {
                Some((_, seen)) => {
                    if !seen.contains(scalar) && seen.len() < 64 {
                        seen.push(scalar.clone());
                    }
                }
                None => out.push((key.to_string(), vec![scalar.clone()])),
            },
        }
    }
    let mut out = Vec::new();
    for p in plans {
        walk(p, "", &mut out);
    }
    out
}

/// A place in a JSON value: object keys and array indices.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

pub(crate) fn all_paths(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(path.clone());
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                path.push(Step::Key(k.clone()));
                all_paths(x, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                path.push(Step::Index(i));
                all_paths(x, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

pub(crate) fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, step| match (v, step) {
        (Value::Object(m), Step::Key(k)) => m.get_mut(k).expect("a path that exists"),
        (Value::Array(a), Step::Index(i)) => &mut a[*i],
        _ => unreachable!("a path that exists"),
    })
}

pub(crate) const COUNT_KEYS: &[&str] = &[
    "input_chunks",
    "output_chunks",
    "scratch_chunks",
    "num_chunks",
    "unit_size",
    "size",
    "index",
    "num_threadblocks",
    "tbg_size",
    "init_value",
    "buffer_offset",
];

pub(crate) fn extreme_number(rng: &mut Rng) -> Value {
    let n: serde_json::Number = match rng.below(12) {
        0 => (-1i64).into(),
        1 => i64::MIN.into(),
        2 => u64::MAX.into(),
        3 => (u32::MAX as u64).into(),
        4 => (1u64 << 32).into(),
        5 => (1u64 << 24).into(),
        6 => (1u64 << 31).into(),
        7 => (1u64 << 53).into(),
        8 => serde_json::Number::from_f64(0.5).expect("finite"),
        9 => serde_json::Number::from_f64(1e300).expect("finite"),
        10 => 4096u64.into(),
        _ => 0u64.into(),
    };
    Value::Number(n)
}

/// One structural mutation of a plan.
pub(crate) fn mutate(
    rng: &mut Rng,
    plan: &mut Value,
    vocab: &[(String, Vec<Value>)],
    donors: &[Value],
) {
    let mut paths = Vec::new();
    all_paths(plan, &mut Vec::new(), &mut paths);
    let path = paths[rng.below(paths.len() as u64) as usize].clone();
    let key = path.iter().rev().find_map(|s| match s {
        Step::Key(k) => Some(k.clone()),
        Step::Index(_) => None,
    });
    let target = at(plan, &path);
    match rng.below(14) {
        // Plausible: a value seen under the same key elsewhere.
        0..=3 => {
            if let Some((_, seen)) = key
                .as_ref()
                .and_then(|k| vocab.iter().find(|(name, _)| name == k))
            {
                if target.is_number() || target.is_string() || target.is_boolean() {
                    *target = seen[rng.below(seen.len() as u64) as usize].clone();
                }
            }
        }
        // A number nudged by one, or made extreme.
        4 => {
            if let Some(n) = target.as_i64() {
                *target = Value::from(n + rng.pick(&[-1i64, 1, 2]));
            }
        }
        5 => *target = extreme_number(rng),
        // Enormous declared counts.
        6 => {
            let mut counts = Vec::new();
            all_paths(plan, &mut Vec::new(), &mut counts);
            counts.retain(
                |p| matches!(p.last(), Some(Step::Key(k)) if COUNT_KEYS.contains(&k.as_str())),
            );
            if !counts.is_empty() {
                let p = counts[rng.below(counts.len() as u64) as usize].clone();
                *at(plan, &p) = Value::from(rng.pick(&[
                    1u64 << 24,
                    1 << 31,
                    1 << 32,
                    1 << 40,
                    16_777_217,
                    100_000,
                ]));
            }
        }
        // Drop a field or an element.
        7 => {
            if let Some((last, parent)) = path.split_last() {
                match (at(plan, parent), last) {
                    (Value::Object(m), Step::Key(k)) => {
                        m.remove(k);
                    }
                    (Value::Array(a), Step::Index(i)) => {
                        a.remove(*i);
                    }
                    _ => {}
                }
            }
        }
        // Duplicate an element, a few times or many.
        8 => {
            if let Some((Step::Index(i), parent)) = path.split_last() {
                if let Value::Array(a) = at(plan, parent) {
                    let copies = rng.pick(&[1usize, 2, 64]);
                    let item = a[*i].clone();
                    for _ in 0..copies {
                        a.insert(*i, item.clone());
                    }
                }
            }
        }
        // Retype.
        9 => {
            *target = match rng.below(7) {
                0 => Value::Null,
                1 => Value::Bool(true),
                2 => Value::from("x"),
                3 => Value::from(""),
                4 => Value::Array(vec![]),
                5 => Value::Object(Default::default()),
                _ => Value::Array(vec![target.clone()]),
            }
        }
        // Deep arrays, around serde_json's recursion limit of 128 and past it.
        10 => {
            let depth = rng.pick(&[2usize, 127, 128, 129, 1000, 100_000]);
            let mut v = target.clone();
            if depth > 1000 {
                // Built as text: a Value this deep is not dropped safely here.
                *target = Value::from(format!("@@DEEP{depth}@@"));
            } else {
                for _ in 0..depth {
                    v = Value::Array(vec![v]);
                }
                *target = v;
            }
        }
        // Swap in a subtree of another plan at the same place, if it has one.
        11 => {
            let donor = &donors[rng.below(donors.len() as u64) as usize];
            let mut d = donor;
            let mut found = true;
            for step in &path {
                let next = match (d, step) {
                    (Value::Object(m), Step::Key(k)) => m.get(k),
                    (Value::Array(a), Step::Index(i)) => a.get(*i),
                    _ => None,
                };
                match next {
                    Some(n) => d = n,
                    None => {
                        found = false;
                        break;
                    }
                }
            }
            if found {
                *target = d.clone();
            }
        }
        // An unknown field.
        12 => {
            if let Value::Object(m) = target {
                m.insert("unexpected".into(), Value::from(1));
            }
        }
        // Swap two elements of an array.
        _ => {
            if let Value::Array(a) = target {
                if a.len() > 1 {
                    let (i, j) = (rng.below(a.len() as u64), rng.below(a.len() as u64));
                    a.swap(i as usize, j as usize);
                }
            }
        }
    }
}

/// The plan as text, with the text-level mutations a Value cannot hold:
/// very deep arrays, duplicate keys, a cut-off file.
pub(crate) fn plan_text(rng: &mut Rng, plan: &Value) -> String {
    let mut text = if rng.chance(20) {
        serde_json::to_string_pretty(plan).expect("serializable")
    } else {
        plan.to_string()
    };
    while let Some(start) = text.find("\"@@DEEP") {
        let end = start + text[start + 1..].find('"').expect("closing quote") + 2;
        let depth: usize = text[start + 7..end - 3].parse().expect("a depth");
        text.replace_range(
            start..end,
            &format!("{}0{}", "[".repeat(depth), "]".repeat(depth)),
        );
    }
    match rng.below(20) {
        0 => {
            // A duplicate key right after an object opens.
            if let Some(at) = text
                .match_indices('{')
                .map(|(i, _)| i)
                .nth(rng.below(8) as usize)
            {
                text.insert_str(at + 1, "\"id\": 99, ");
            }
        }
        1 => {
            let mut cut = rng.below(text.len() as u64) as usize;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        2 => text = text.replacen("\"name\":\"", "\"name\":\"\\ud800", 1),
        _ => {}
    }
    text
}

#[test]
pub(crate) fn mutated_plans() {
    let (seed, cases) = config("mutated_plans", 1);
    let mut h = Harness::new("plans");
    let plans = seed_plans(&mut h);
    let vocab = vocabulary(&plans);
    for k in 0..cases {
        let mut rng = Rng::new(seed, 3, k as u64);
        let which = rng.below(plans.len() as u64) as usize;
        let mut plan = plans[which].clone();
        for _ in 0..rng.range(1, 4) {
            mutate(&mut rng, &mut plan, &vocab, &plans);
        }
        h.write("case.json", plan_text(&mut rng, &plan));
        let mut a = args(&["sim", "case.json", "--max-memory", SIM_MAX_MEMORY]);
        a.push(
            rng.pick(&[
                "--quiet",
                "--quiet",
                "--quiet",
                "--json",
                "--buffers=both",
                "--target=a100",
            ])
            .into(),
        );
        h.run(
            &format!("plan {k} (from {})", PLAN_SEEDS[which].0),
            "case.json",
            Input::Plan,
            &a,
        );
    }
    h.finish();
}

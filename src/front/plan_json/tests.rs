use super::json::Json;
use super::*;
use serde_json::Value;

/// The reader's JSON values look up and print as `serde_json`'s do.
#[test]
fn json_values_read_and_print_as_serde_json_values() {
    let text = r#"{"b": [1, -2, 3.5, 1e300, "x\"y", null, true], "a": {"k": 1, "k": {"z": 0, "y": []}},
        "a\u0062": "c", "n": 18446744073709551615}"#;
    let mine: Json = serde_json::from_str(text).unwrap();
    let theirs: Value = serde_json::from_str(text).unwrap();
    assert_eq!(mine.to_string(), theirs.to_string());
    for key in ["a", "b", "ab", "n", "k", "missing"] {
        assert_eq!(
            mine.get(key).map(|v| v.to_string()),
            theirs.get(key).map(|v| v.to_string()),
            "{key}"
        );
    }
    let (a, b) = (mine.get("a").unwrap(), theirs.get("a").unwrap());
    assert_eq!(a.get("k").unwrap().to_string(), b["k"].to_string());
    assert_eq!(mine.get("n").unwrap().as_u64(), theirs["n"].as_u64());
    let list = mine.get("b").unwrap().as_array().unwrap();
    let want = theirs["b"].as_array().unwrap();
    for (x, y) in list.iter().zip(want) {
        assert_eq!(x.as_u64(), y.as_u64());
        assert_eq!(x.as_str(), y.as_str());
        assert_eq!(x.as_bool(), y.as_bool());
        assert_eq!(x.is_object(), y.is_object());
    }
}

/// Values that stand in for a field: wrong types, and the values the
/// reader checks (ids, sizes).
fn replacements() -> Vec<Value> {
    vec![
        Value::Null,
        Value::Bool(true),
        Value::from(0),
        Value::from(1),
        Value::from(u64::from(u32::MAX) + 1),
        Value::from(-1),
        Value::from(1.5),
        Value::from("x"),
        Value::Array(Vec::new()),
        serde_json::json!({}),
    ]
}

/// Every field of `v` (its path as keys and indices), depth first.
fn fields(v: &Value, path: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Value::from(i));
                out.push(path.clone());
                fields(item, path, out);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                path.push(Value::from(k.clone()));
                out.push(path.clone());
                fields(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(mut v: &'a mut Value, path: &[Value]) -> &'a mut Value {
    for step in path {
        v = match (v, step) {
            (Value::Array(items), Value::Number(i)) => &mut items[i.as_u64().unwrap() as usize],
            (Value::Object(map), Value::String(k)) => map.get_mut(k).unwrap(),
            _ => unreachable!(),
        };
    }
    v
}

fn agree(text: &str, what: &str) {
    assert_eq!(read_plan(text), read_plan_whole(text), "{what}");
}

/// Read rank by rank, a plan reads as the whole document does: the same
/// plan, or the same first problem, for plans with a field replaced,
/// removed or duplicated, and for truncated and odd documents.
#[test]
fn reading_rank_by_rank_agrees_with_reading_the_whole() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/conformance/single_node/allreduce_pkt.n4.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return;
    };
    let base: Value = serde_json::from_str(&text).unwrap();
    agree(&text, "as is");
    let mut all = Vec::new();
    fields(&base, &mut Vec::new(), &mut all);
    for (n, field) in all.iter().enumerate() {
        // Every field near the top, every 13th deeper down.
        if field.len() > 3 && n % 13 != 0 {
            continue;
        }
        for r in replacements() {
            let mut plan = base.clone();
            *at(&mut plan, field) = r.clone();
            agree(&plan.to_string(), &format!("{field:?} = {r}"));
        }
        let (last, parent) = field.split_last().unwrap();
        let mut plan = base.clone();
        match (at(&mut plan, parent), last) {
            (Value::Array(items), Value::Number(i)) => {
                items.remove(i.as_u64().unwrap() as usize);
            }
            (Value::Object(map), Value::String(k)) => {
                map.remove(k);
            }
            _ => unreachable!(),
        }
        agree(&plan.to_string(), &format!("{field:?} removed"));
    }
    // A second `gpus` (the last one counts), and a broken one before it.
    let top = text.trim_start().strip_prefix('{').unwrap();
    agree(&format!("{{\"gpus\": [1], {top}"), "gpus twice");
    agree(&format!("{{\"gpus\": 3, {top}"), "gpus twice");
    let gpus_last = format!(
        "{}, \"gpus\": [{{}}]}}",
        text.trim_end().strip_suffix('}').unwrap()
    );
    agree(&gpus_last, "bad gpus last");
    // Cut short, trailing text, not an object.
    for cut in [1, 10, text.len() / 3, text.len() / 2, text.len() - 1] {
        agree(&text[..cut], &format!("cut at {cut}"));
    }
    agree(&format!("{text} x"), "trailing text");
    agree(&format!("{text} {{}}"), "two documents");
    for odd in [
        "",
        "null",
        "[]",
        "[1, {}]",
        "7",
        "\"plan\"",
        "{}",
        "{\"gpus\": []}",
    ] {
        agree(odd, odd);
    }
}

//! The SVG writer's tests: the picture parses, and says what the timeline
//! does where it should.

use super::*;
use crate::timing::timeline::{FlowKind, SliceKind, Track};
use crate::timing::trace::tests::small;

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed XML: {e}"))
}

fn class_is(n: &roxmltree::Node, prefix: &str) -> bool {
    n.attribute("class").is_some_and(|c| c.starts_with(prefix))
}

fn num(n: &roxmltree::Node, attr: &str) -> f64 {
    n.attribute(attr).and_then(|v| v.parse().ok()).expect(attr)
}

#[test]
fn one_bar_with_a_tooltip_per_op() {
    let t = small();
    let out = svg(&t);
    let doc = parse(&out);
    let ops: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && class_is(n, "op "))
        .collect();
    assert_eq!(ops.len(), t.slices.len());
    for (n, s) in ops.iter().zip(&t.slices) {
        assert!(class_is(n, &format!("op {}", kind_name(s.kind))));
        assert_eq!(n.attribute("class").unwrap().ends_with(" crit"), s.critical);
        let tip = n.first_element_child().expect("a <title>");
        assert!(tip.has_tag_name("title"));
        let text = tip.text().unwrap();
        assert!(text.starts_with(&s.name), "{text}");
        assert!(text.contains(&s.detail), "{text}");
        let times = format!("{:.3} – {:.3} µs", s.start_us, s.end_us);
        assert!(text.contains(&times), "{text}");
    }
    // Later ops of a block lie to the right, on the block's row.
    let (put, signal) = (&ops[0], &ops[1]);
    assert_eq!(num(put, "y"), num(signal, "y"));
    assert!((num(put, "x") + num(put, "width") - num(signal, "x")).abs() < 0.2);
    assert!(num(&ops[3], "y") > num(put, "y"));
}

#[test]
fn text_is_escaped() {
    let t = small();
    let out = svg(&t);
    assert!(!out.contains("<ring>") && !out.contains("<op 0>"));
    assert!(out.contains("&lt;ring&gt; &amp; co"));
    let doc = parse(&out);
    let title = doc.descendants().find(|n| class_is(n, "title")).unwrap();
    assert_eq!(
        title.text(),
        Some("allgather <ring> & co · h100-nvlink · 64 MiB · deadlock: 1 block stuck, the last op ending at 12.2 µs")
    );
    assert!(doc
        .descendants()
        .any(|n| n.text() == Some("put <op 0> & co")
            || n.text().is_some_and(|s| s.contains("\nput <op 0> & co\n"))));
    assert_eq!(
        Esc("a\u{1}b\"'\u{FFFF}\n").to_string(),
        "a\u{FFFD}b&quot;&apos;\u{FFFD}&#10;"
    );
    assert_eq!(Fixed::<1>(2.25).to_string(), "2.3");
    assert_eq!(Fixed::<3>(-0.0004).to_string(), "0.000");
    assert_eq!(Fixed::<3>(-1.5).to_string(), "-1.500");
    assert_eq!(Fixed::<0>(7.0).to_string(), "7");
}

#[test]
fn waiting_is_hatched_at_the_start() {
    let t = small();
    let out = svg(&t);
    let doc = parse(&out);
    let rects: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .collect();
    let wait_op = rects.iter().filter(|n| class_is(n, "op ")).nth(3).unwrap();
    let hatch: Vec<_> = rects
        .iter()
        .filter(|n| class_is(n, "wait") && n.attribute("y") != Some("44"))
        .collect();
    assert_eq!(hatch.len(), 1, "only the wait waited");
    assert_eq!(num(hatch[0], "x"), num(wait_op, "x"));
    assert_eq!(num(hatch[0], "y"), num(wait_op, "y"));
    let share = num(hatch[0], "width") / num(wait_op, "width");
    assert!((share - 7.2 / 7.5).abs() < 0.01, "{share}");
}

#[test]
fn axis_rows_flows_and_the_stuck_block() {
    let t = small();
    let out = svg(&t);
    let doc = parse(&out);
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for label in [
        "rank 0 tb 0",
        "rank 0 tb 1",
        "rank 1 tb 0",
        "rank 1 tb 1",
        "stuck at wait",
    ] {
        assert!(texts.contains(&label), "{label} in {texts:?}");
    }
    // 12.25 µs in about 8 steps: every 2 µs.
    assert_eq!(
        ticks(&doc),
        ["0 µs", "2 µs", "4 µs", "6 µs", "8 µs", "10 µs", "12 µs"]
    );
    let seps = doc.descendants().filter(|n| class_is(n, "sep")).count();
    assert_eq!(seps, 1, "one line between rank 0 and rank 1");
    let flows = doc
        .descendants()
        .filter(|n| n.has_tag_name("line") && class_is(n, "flow"))
        .count();
    assert_eq!(flows, t.flows.len() + 1, "each flow, and the legend's");
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("path") && class_is(n, "stuck"))
            .count(),
        2
    );
}

/// `n` blocks of `per` ops back to back, each op released by the same
/// op of the block before.
fn big(n: u32, per: usize) -> Timeline {
    let tracks: Vec<Track> = (0..n)
        .map(|i| Track {
            rank: i / 8,
            tb: i % 8,
        })
        .collect();
    let mut slices = Vec::new();
    let mut flows = Vec::new();
    for track in 0..n as usize {
        for op in 0..per {
            if track > 0 {
                flows.push(Flow {
                    from: slices.len() - per,
                    to: slices.len(),
                    kind: FlowKind::Signal,
                });
            }
            slices.push(Slice {
                track,
                op,
                name: "put".into(),
                detail: "a <b> & c".into(),
                kind: if op % 2 == 0 {
                    SliceKind::Data
                } else {
                    SliceKind::Sync
                },
                start_us: op as f64 * 2.0,
                end_us: op as f64 * 2.0 + 2.0,
                waited_us: 0.5,
                bytes: 1024,
                critical: track == n as usize - 1,
            });
        }
    }
    Timeline {
        title: "big".into(),
        topology: "t".into(),
        size_bytes: 3 << 30,
        tracks,
        slices,
        flows,
        end_us: per as f64 * 2.0,
        stuck: vec![],
    }
}

#[test]
fn many_blocks_and_arrows_are_capped() {
    let t = big(300, 20);
    let out = svg(&t);
    let doc = parse(&out);
    let rows = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.text().is_some_and(|s| s.starts_with("rank ")))
        .count();
    assert_eq!(rows, MAX_ROWS);
    let ops = doc.descendants().filter(|n| class_is(n, "op ")).count();
    assert_eq!(ops, MAX_ROWS * 20);
    assert!(out.contains("… 44 more blocks not shown"));
    // Only arrows between rows drawn: 255 * 20 of them, then the cap.
    let flows = doc
        .descendants()
        .filter(|n| n.has_tag_name("line") && class_is(n, "flow"))
        .count();
    assert_eq!(flows, MAX_FLOWS + 1);
    assert!(out.contains(&format!(
        "… {} more arrows not drawn",
        t.flows.len() - MAX_FLOWS
    )));
    assert_eq!(
        ticks(&doc),
        ["0 µs", "5 µs", "10 µs", "15 µs", "20 µs", "25 µs", "30 µs", "35 µs", "40 µs"]
    );
    assert_eq!(human_bytes(t.size_bytes), "3 GiB");
}

#[test]
fn long_runs_are_in_milliseconds() {
    let out = svg(&big(2, 1500));
    let ticks = ticks(&parse(&out));
    assert_eq!(ticks.first().map(String::as_str), Some("0.0 ms"));
    assert_eq!(ticks[1..3], ["0.5 ms", "1.0 ms"]);
    assert_eq!(ticks.last().map(String::as_str), Some("3.0 ms"));
}

/// The axis's labels: the texts just above the first row.
fn ticks(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("y") == Some(&*format!("{}", TOP - 8.0)))
        .map(|n| n.text().unwrap().to_string())
        .collect()
}

#[test]
fn critical_arrows_come_first() {
    let mut t = big(4, 3000);
    // Only the last block's arrows join two critical ops: mark the
    // block before it critical too.
    for s in t.slices.iter_mut().filter(|s| s.track == 2) {
        s.critical = true;
    }
    let shown = |_: usize| true;
    let chosen = chosen_flows(&t, &shown);
    assert_eq!(chosen.len(), MAX_FLOWS);
    assert!(chosen.iter().all(|f| t.slices[f.to].track == 3));
}

#[test]
fn a_hundred_thousand_ops_draw_fast() {
    let t = big(200, 500);
    let start = std::time::Instant::now();
    let out = svg(&t);
    let took = start.elapsed();
    assert_eq!(out.matches("<rect class=\"op ").count(), 100_000);
    // Unoptimised builds are some ten times slower: the bound holds for
    // the release build (`cargo test --release`).
    if !cfg!(debug_assertions) {
        assert!(took.as_secs_f64() < 0.5, "{took:?}");
    }
}

#[test]
fn units_for_people() {
    assert_eq!(human_bytes(64 << 20), "64 MiB");
    assert_eq!(human_bytes(1536), "1.5 KiB");
    assert_eq!(human_bytes(1000), "1000 B");
    assert_eq!(human_bytes(0), "0 B");
    assert_eq!(human_time(12.26), "12.3 µs");
    assert_eq!(human_time(2500.0), "2.5 ms");
    assert_eq!(human_time(0.25), "250 ns");
    assert_eq!(human_time(3.2e6), "3.2 s");
    for (raw, step) in [
        (0.7, 1.0),
        (1.0, 1.0),
        (1.3, 2.0),
        (3.0, 5.0),
        (7.0, 10.0),
        (0.013, 0.02),
        (420.0, 500.0),
    ] {
        assert!(
            (nice_step(raw) - step).abs() < 1e-12,
            "{raw} -> {}",
            nice_step(raw)
        );
    }
}

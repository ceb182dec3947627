//! What `msclc tune` shows and writes: the table a person reads (each
//! size's plan and predicted bus bandwidth beside the program's
//! defaults'), the index a runtime selector reads, and a picture of every
//! candidate's bus bandwidth over the sizes with the chosen envelope.

use super::{Tried, Tuned};
use serde_json::{json, Value};
use sha2::Digest;
use std::fmt::Write;

/// The file of segment `k`'s plan: `NAME_FIRST_LAST.json`, by the first
/// and last sizes it serves (as MSCCL++ names its default plans), with the
/// name's first 100 characters: a file name has at most 255 bytes, and a
/// tuning should not end in one too long to write.
pub fn file_name(plan_name: &str, tuned: &Tuned, k: usize) -> String {
    const MOST_NAME_CHARS: usize = 100;
    let seg = &tuned.segments[k];
    let name: String = plan_name
        .chars()
        .take(MOST_NAME_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "{name}_{}_{}.json",
        crate::units::short_bytes(tuned.sizes[seg.first]),
        crate::units::short_bytes(tuned.sizes[seg.last])
    )
}

/// The table: the search, then per size the plan serving it, its
/// predicted time and bus bandwidth, the defaults' and the gain; then the
/// candidates dropped and why.
pub fn table(tuned: &Tuned, title: &str) -> String {
    let mut out = String::new();
    let verified = tuned.tried.iter().filter(|t| t.outcome.is_ok()).count();
    let axes: Vec<String> = tuned
        .space
        .axes
        .iter()
        .map(|a| {
            format!(
                "{} {}",
                a.name,
                crate::diag::short_list(&a.values, "values")
            )
        })
        .collect();
    let _ = writeln!(out, "# msclc tune: {title}");
    let _ = writeln!(out, "# varied: {}", axes.join(", "));
    let _ = writeln!(
        out,
        "# searched {}; {verified} verified, {} dropped",
        tuned.search,
        tuned.tried.len() - verified
    );
    let _ = writeln!(out, "#");
    // The params column as wide as the longest chosen (long names and
    // values would push the numbers out of their columns).
    let w = tuned
        .segments
        .iter()
        .map(|g| {
            tuned
                .space
                .describe(&tuned.tried[g.candidate].candidate)
                .chars()
                .count()
        })
        .fold(32, usize::max);
    let _ = writeln!(
        out,
        "# {:>10}  {:>4}  {:<w$} {:>10} {:>10} {:>10} {:>7}",
        "size", "plan", "params", "time", "busbw", "defaults", "gain"
    );
    let _ = writeln!(
        out,
        "# {:>10}  {:>4}  {:<w$} {:>10} {:>10} {:>10} {:>7}",
        "(B)", "", "", "(us)", "(GB/s)", "(GB/s)", ""
    );
    let defaults = &tuned.tried[0];
    // Rows whose plan runs fewer bytes than the size asked: (asked, run).
    let mut rounded = Vec::new();
    for (s, &size) in tuned.sizes.iter().enumerate() {
        let Some((k, seg)) = tuned
            .segments
            .iter()
            .enumerate()
            .find(|(_, g)| (g.first..=g.last).contains(&s))
        else {
            continue;
        };
        let chosen = &tuned.tried[seg.candidate];
        let p = chosen
            .at(s)
            .expect("a chosen candidate has a time at its sizes");
        if p.size != size {
            rounded.push((size, p.size));
        }
        let base = defaults.at(s);
        let (base_text, gain) = match (&defaults.outcome, base) {
            (Err(_), _) => ("dropped".to_string(), String::new()),
            (Ok(_), None) => ("-".to_string(), String::new()),
            (Ok(_), Some(b)) => (
                format!("{:.2}", b.busbw_gbps),
                format!(
                    "{:+.0}%",
                    100.0 * (super::time_at(&b, size) / super::time_at(&p, size) - 1.0)
                ),
            ),
        };
        let _ = writeln!(
            out,
            "  {:>10}  {:>4}  {:<w$} {:>10.2} {:>10} {:>10} {:>7}",
            size,
            k + 1,
            tuned.space.describe(&chosen.candidate),
            p.time_us,
            format!("{:.2}", p.busbw_gbps),
            base_text,
            gain
        );
    }
    let _ = writeln!(out, "#");
    let _ = writeln!(
        out,
        "# gain: how much faster the plan is than the program's defaults ({}), themselves a candidate",
        tuned.space.describe(&defaults.candidate)
    );
    if !rounded.is_empty() {
        let each: Vec<String> = rounded
            .iter()
            .map(|(asked, run)| format!("{asked} at {run}"))
            .collect();
        let _ = writeln!(
            out,
            "# time and busbw of a size the plan's chunks do not divide are those of the size rounded down to them, as it runs it: {} B",
            each.join(", ")
        );
    }
    // A chosen plan that verified with a warning (an executor bug it
    // meets) is one the user should know of before installing it.
    for (k, seg) in tuned.segments.iter().enumerate() {
        for warning in &tuned.tried[seg.candidate].warnings {
            let _ = writeln!(out, "# plan {}: {warning}", k + 1);
        }
    }
    let dropped: Vec<&Tried> = tuned.tried.iter().filter(|t| t.outcome.is_err()).collect();
    if !dropped.is_empty() {
        let _ = writeln!(out, "# dropped ({}):", dropped.len());
        for t in dropped {
            let why = t.outcome.as_ref().err().map_or("", String::as_str);
            let _ = writeln!(out, "#   {}: {why}", tuned.space.describe(&t.candidate));
        }
    }
    out
}

/// Keys every index has at its top level, which tell it from a user's
/// `index.json`.
pub const INDEX_KEYS: &[&str] = &["program", "topology", "plans", "dropped"];

/// What the picture says of itself in its first line, to be known again.
const PICTURE_MARK: &str = "<!-- msclc tune: bus bandwidth -->";

/// Whether the file at `path` is a picture tune wrote.
pub fn is_tunes_picture(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut start = [0; PICTURE_MARK.len()];
    std::fs::File::open(path).is_ok_and(|mut f| f.read_exact(&mut start).is_ok())
        && start == PICTURE_MARK.as_bytes()
}

/// What `write` writes into `out`, and its SHA-256 in hex: the plan's
/// fingerprint, as its index entry keeps it (`"sha256"`; a plan of the
/// index's name whose bytes have another is one the user put there or
/// edited since, and tune leaves it be). Hashed as written, never held.
pub fn write_fingerprinted(
    out: &mut dyn std::io::Write,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<String> {
    struct Hashing<'a> {
        out: &'a mut dyn std::io::Write,
        hash: sha2::Sha256,
    }
    impl std::io::Write for Hashing<'_> {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let n = self.out.write(bytes)?;
            self.hash.update(&bytes[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.out.flush()
        }
    }
    let mut hashing = Hashing {
        out,
        hash: sha2::Sha256::new(),
    };
    write(&mut hashing)?;
    let digest = hashing.hash.finalize();
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// The index a runtime selector reads: each plan's file (with its
/// fingerprint, [`write_fingerprinted`], `files` holding both), message
/// sizes and params, and what was predicted; the candidates dropped.
pub fn index(tuned: &Tuned, files: &[(String, String)], about: Value) -> Value {
    let plans: Vec<Value> = tuned
        .segments
        .iter()
        .zip(&tuned.ranges)
        .zip(files)
        .map(|((seg, &(min, max)), (file, sha256))| {
            let chosen = &tuned.tried[seg.candidate];
            let params: serde_json::Map<String, Value> = tuned
                .space
                .axes
                .iter()
                .zip(&chosen.candidate)
                .map(|(axis, v)| {
                    let value = v.map_or(axis.default_text.clone(), |i| axis.values[i].clone());
                    (axis.name.clone(), Value::String(value))
                })
                .collect();
            let predicted: Vec<Value> = (seg.first..=seg.last)
                .filter_map(|s| chosen.at(s))
                .map(|p| json!({"size": p.size, "time_us": p.time_us, "busbw_gbps": p.busbw_gbps}))
                .collect();
            json!({
                "file": file,
                "sha256": sha256,
                "min_message_size": min,
                "max_message_size": max,
                "params": params,
                "predicted": predicted,
                "warnings": chosen.warnings,
            })
        })
        .collect();
    let dropped: Vec<Value> = tuned
        .tried
        .iter()
        .filter_map(|t| {
            let why = t.outcome.as_ref().err()?;
            Some(json!({"params": tuned.space.describe(&t.candidate), "why": why}))
        })
        .collect();
    // Every candidate that verified, chosen or not, with its predictions:
    // what the plans won against.
    let verified: Vec<Value> = tuned
        .tried
        .iter()
        .filter(|t| t.outcome.is_ok())
        .map(|t| {
            let predicted: Vec<Value> = (0..tuned.sizes.len())
                .filter_map(|s| t.at(s))
                .map(|p| json!({"size": p.size, "time_us": p.time_us, "busbw_gbps": p.busbw_gbps}))
                .collect();
            json!({"params": tuned.space.describe(&t.candidate), "predicted": predicted})
        })
        .collect();
    let mut index = about;
    index["search"] = Value::String(tuned.search.to_string());
    index["tried"] = json!(tuned.tried.len());
    index["plans"] = Value::Array(plans);
    index["verified"] = Value::Array(verified);
    index["dropped"] = Value::Array(dropped);
    index
}

/// Each verified candidate's bus bandwidth over the sizes (a grey line),
/// and the plan set's (the chosen envelope, in colour), sizes on a
/// logarithmic axis.
pub fn svg(tuned: &Tuned, title: &str) -> String {
    let (left, top, width, height) = (70.0, 40.0, 640.0, 360.0);
    let n = tuned.sizes.len().max(2) as f64 - 1.0;
    let peak = tuned
        .tried
        .iter()
        .flat_map(|t| (0..tuned.sizes.len()).filter_map(|s| t.at(s)))
        .map(|p| p.busbw_gbps)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let x = |s: usize| left + width * s as f64 / n;
    let y = |bw: f64| top + height * (1.0 - bw / peak);
    let mut out = String::new();
    let _ = writeln!(out, "{PICTURE_MARK}");
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">"#,
        left + width + 40.0,
        top + height + 60.0
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{left}" y="22" font-size="14">{}</text>"#,
        crate::timing::svg::Esc(title)
    );
    for k in 0..=4 {
        let bw = peak * f64::from(k) / 4.0;
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#ddd\"/><text x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\">{bw:.1}</text>",
            y(bw),
            left + width,
            left - 6.0,
            y(bw) + 4.0,
        );
    }
    for (s, &size) in tuned.sizes.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x(s),
            top + height + 18.0,
            crate::units::short_bytes(size)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">message size</text><text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">predicted busbw (GB/s)</text>"#,
        left + width / 2.0,
        top + height + 42.0,
        top + height / 2.0
    );
    // A line's `title`, its candidate's params, shows where the pointer
    // rests on it.
    let line = |points: Vec<(usize, f64)>, style: &str, title: &str| -> String {
        let path: Vec<String> = points
            .iter()
            .map(|&(s, bw)| format!("{:.1},{:.1}", x(s), y(bw)))
            .collect();
        format!(
            r#"<polyline points="{}" fill="none" {style}><title>{}</title></polyline>"#,
            path.join(" "),
            crate::timing::svg::Esc(title)
        )
    };
    for t in tuned.tried.iter().filter(|t| t.outcome.is_ok()) {
        let points = (0..tuned.sizes.len())
            .filter_map(|s| t.at(s).map(|p| (s, p.busbw_gbps)))
            .collect();
        let _ = writeln!(
            out,
            "{}",
            line(
                points,
                r##"stroke="#bbb" stroke-width="1""##,
                &tuned.space.describe(&t.candidate)
            )
        );
    }
    let envelope = tuned
        .segments
        .iter()
        .flat_map(|seg| (seg.first..=seg.last).map(move |s| (s, seg.candidate)))
        .filter_map(|(s, c)| tuned.tried[c].at(s).map(|p| (s, p.busbw_gbps)))
        .collect();
    let _ = writeln!(
        out,
        "{}",
        line(
            envelope,
            r##"stroke="#d62728" stroke-width="3""##,
            "the plan set"
        )
    );
    let _ = writeln!(
        out,
        r##"<text x="{:.1}" y="{:.1}" fill="#d62728">the plan set</text><text x="{:.1}" y="{:.1}" fill="#888">each candidate verified</text>"##,
        left + 10.0,
        top + 14.0,
        left + 10.0,
        top + 30.0
    );
    out.push_str("</svg>\n");
    out
}

//! The timeline as one self-contained SVG picture, for documents and
//! reviews: no script, no external font or style sheet, so that it shows
//! the same in a browser, an image viewer and a code review.

use std::fmt::{self, Write};

use super::timeline::{Flow, Slice, Timeline};
use super::trace::kind_name;
use crate::units::{human_bytes, sig3};

const WIDTH: f64 = 1200.0;
/// Room for "rank 1023 tb 127" right-aligned before the rows.
const LEFT: f64 = 124.0;
const RIGHT: f64 = 24.0;
/// Title, legend and axis labels above the first row.
const TOP: f64 = 82.0;
const ROW: f64 = 16.0;
const BAR: f64 = 12.0;
/// Rows past this many would make a picture no one reads at a glance and a
/// file of tens of megabytes; the trace has every block.
const MAX_ROWS: usize = 256;
/// Past a couple of thousand the arrows cover the rows they join, and each
/// adds a hundred bytes and nothing more to see; the trace has them all.
/// Those on the critical path are drawn first.
const MAX_FLOWS: usize = 2000;
/// A slice narrower than this still shows as a hairline.
const MIN_W: f64 = 0.5;

const STYLE: &str = "text{font:11px sans-serif;fill:#222}\
.title{font-size:14px;font-weight:bold}\
.data{fill:#4c78a8}.sync{fill:#f2a93b}\
.wait{fill:url(#hatch);pointer-events:none}\
.crit{stroke:#c2185b;stroke-width:1.5}\
.flow{stroke:#444;stroke-opacity:.5;stroke-width:.8;fill:none;marker-end:url(#arrow)}\
.grid{stroke:#e6e6e6}.sep{stroke:#c4c4c4}.band{fill:#f4f6f9}\
.end{stroke:#333;stroke-dasharray:4 3}\
.stuck{fill:#d62728}text.stuck{font-weight:bold}\
.note{fill:#666;font-style:italic}";

/// The timeline as an SVG document, about 1,200 pixels wide.
pub fn svg(t: &Timeline) -> String {
    let rows = t.tracks.len().min(MAX_ROWS);
    let hidden = t.tracks.len() - rows;
    let span = t
        .slices
        .iter()
        .map(|s| s.end_us)
        .chain(t.stuck.iter().map(|s| s.since_us))
        .fold(t.end_us, f64::max);
    let span = Some(span)
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(1.0);
    let x = |us: f64| LEFT + us.clamp(0.0, span) / span * (WIDTH - LEFT - RIGHT);
    let mid = |track: usize| TOP + track as f64 * ROW + ROW / 2.0;
    let shown = |track: usize| track < rows;
    let flows = chosen_flows(t, &shown);
    let notes = usize::from(hidden > 0) + usize::from(flows.len() < t.flows.len());
    let height = TOP + rows as f64 * ROW + 30.0 + 16.0 * notes as f64;
    let bottom = TOP + rows as f64 * ROW;

    let mut o = String::with_capacity(4096 + 260 * t.slices.len() + 90 * flows.len());
    let _ = write!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}"><style>{STYLE}</style><defs><pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="4" height="4" fill="#fff" fill-opacity=".55"/><line x1="0" y1="0" x2="0" y2="4" stroke="#222" stroke-opacity=".45" stroke-width="1.5"/></pattern><marker id="arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="5" markerHeight="5" orient="auto"><path d="M0,0L6,3L0,6z" fill="#444"/></marker></defs><rect width="100%" height="100%" fill="#fff"/>"##
    );

    // Ranks in alternate bands, a line where one starts.
    let mut band = 0;
    for r in 0..rows {
        let first = r == 0 || t.tracks[r - 1].rank != t.tracks[r].rank;
        if first && r > 0 {
            band += 1;
            let y = TOP + r as f64 * ROW;
            let _ = write!(
                o,
                r#"<line class="sep" x1="0" x2="{WIDTH}" y1="{y:.1}" y2="{y:.1}"/>"#
            );
        }
        if band % 2 == 1 {
            let y = TOP + r as f64 * ROW;
            let w = WIDTH - LEFT - RIGHT;
            let _ = write!(
                o,
                r#"<rect class="band" x="{LEFT}" y="{y:.1}" width="{w}" height="{ROW}"/>"#
            );
        }
        let k = &t.tracks[r];
        let (lx, ly) = (LEFT - 6.0, mid(r) + 4.0);
        let _ = write!(
            o,
            r#"<text x="{lx}" y="{ly:.1}" text-anchor="end">rank {} tb {}</text>"#,
            k.rank, k.tb
        );
    }

    // The time axis: ticks at 1, 2 or 5 times a power of ten.
    let unit = if span >= 1000.0 { 1000.0 } else { 1.0 };
    let step = nice_step(span / unit / 8.0);
    let decimals = (-step.log10()).ceil().max(0.0) as usize;
    let name = if unit > 1.0 { "ms" } else { "µs" };
    for i in 0..=((span / unit / step) + 1e-9).floor() as usize {
        let v = i as f64 * step;
        let tx = x(v * unit);
        let _ = write!(
            o,
            r#"<line class="grid" x1="{tx:.1}" x2="{tx:.1}" y1="{}" y2="{bottom}"/><text x="{tx:.1}" y="{}" text-anchor="middle">{v:.decimals$} {name}</text>"#,
            TOP - 4.0,
            TOP - 8.0,
        );
    }

    for s in t.slices.iter().filter(|s| shown(s.track)) {
        slice(
            &mut o,
            t,
            s,
            x,
            TOP + s.track as f64 * ROW + (ROW - BAR) / 2.0,
        );
    }
    for &f in &flows {
        let (from, to) = (&t.slices[f.from], &t.slices[f.to]);
        let (x1, y1) = (Fixed::<1>(x(from.end_us)), Fixed::<1>(mid(from.track)));
        let (x2, y2) = (
            Fixed::<1>(x(to.start_us + to.waited_us)),
            Fixed::<1>(mid(to.track)),
        );
        let _ = write!(
            o,
            r#"<line class="flow" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>"#
        );
    }
    // The predicted end, where there is one (a deadlock has none).
    let deadlocked = !t.stuck.is_empty();
    if !deadlocked && t.end_us.is_finite() && t.end_us > 0.0 {
        let ex = x(t.end_us);
        let _ = write!(
            o,
            r#"<line class="end" x1="{ex:.1}" x2="{ex:.1}" y1="{}" y2="{bottom}"/>"#,
            TOP - 4.0
        );
    }
    for st in t.stuck.iter().filter(|s| shown(s.track)) {
        let (sx, sy) = (x(st.since_us), mid(st.track));
        let k = &t.tracks[st.track];
        let _ = write!(
            o,
            r#"<path class="stuck" d="M{:.1},{:.1}l5,6l-5,6l-5,-6z"><title>rank {} tb {} stuck at op {} ({}) since {:.3} µs</title></path>"#,
            sx,
            sy - 6.0,
            k.rank,
            k.tb,
            st.op,
            Esc(&st.name),
            st.since_us,
        );
        // Near the right edge the words go to the marker's left.
        let (tx, anchor) = if sx > WIDTH - 160.0 {
            (sx - 8.0, "end")
        } else {
            (sx + 8.0, "start")
        };
        let _ = write!(
            o,
            r#"<text class="stuck" x="{tx:.1}" y="{:.1}" text-anchor="{anchor}">stuck at {}</text>"#,
            sy + 4.0,
            Esc(&st.name)
        );
    }

    let mut title = format!(
        "{} · {} · {}",
        t.title,
        t.topology,
        human_bytes(t.size_bytes)
    );
    if deadlocked {
        // No time is predicted for a kernel that never ends.
        let n = t.stuck.len();
        let _ = write!(
            title,
            " · deadlock: {n} block{} stuck, the last op ending at {}",
            if n == 1 { "" } else { "s" },
            human_time(t.end_us)
        );
    } else {
        let _ = write!(title, " · predicted {}", human_time(t.end_us));
    }
    let _ = write!(
        o,
        r#"<text class="title" x="12" y="22">{}</text>"#,
        Esc(&title)
    );
    legend(&mut o, deadlocked);

    let mut y = bottom + 22.0;
    if hidden > 0 {
        let _ = write!(
            o,
            r#"<text class="note" x="{LEFT}" y="{y}">… {hidden} more blocks not shown</text>"#
        );
        y += 16.0;
    }
    if flows.len() < t.flows.len() {
        let more = t.flows.len() - flows.len();
        let _ = write!(
            o,
            r#"<text class="note" x="{LEFT}" y="{y}">… {more} more arrows not drawn</text>"#
        );
    }
    o.push_str("</svg>\n");
    o
}

/// An op's bar, its waiting hatched at its start, and its tooltip.
fn slice(o: &mut String, t: &Timeline, s: &Slice, x: impl Fn(f64) -> f64, y: f64) {
    let x0 = x(s.start_us);
    let w = (x(s.end_us) - x0).max(MIN_W);
    let crit = if s.critical { " crit" } else { "" };
    let k = &t.tracks[s.track];
    let _ = write!(
        o,
        r#"<rect class="op {}{crit}" x="{}" y="{}" width="{}" height="{BAR}"><title>{} (rank {} tb {}, op {})&#10;{}&#10;{} – {} µs, waited {} µs</title></rect>"#,
        kind_name(s.kind),
        Fixed::<1>(x0),
        Fixed::<1>(y),
        Fixed::<1>(w),
        Esc(&s.name),
        k.rank,
        k.tb,
        s.op,
        Esc(&s.detail),
        Fixed::<3>(s.start_us),
        Fixed::<3>(s.end_us),
        Fixed::<3>(s.waited_us),
    );
    let ww = x(s.start_us + s.waited_us.max(0.0)).min(x0 + w) - x0;
    if ww >= MIN_W / 2.0 {
        let (x0, y, ww) = (Fixed::<1>(x0), Fixed::<1>(y), Fixed::<1>(ww));
        let _ = write!(
            o,
            r#"<rect class="wait" x="{x0}" y="{y}" width="{ww}" height="{BAR}"/>"#
        );
    }
}

/// The flows to draw: both ends on a row drawn, those on the critical path
/// first, at most `MAX_FLOWS`.
fn chosen_flows<'a>(t: &'a Timeline, shown: &dyn Fn(usize) -> bool) -> Vec<&'a Flow> {
    let drawable = |f: &&Flow| shown(t.slices[f.from].track) && shown(t.slices[f.to].track);
    let critical = |f: &&Flow| t.slices[f.from].critical && t.slices[f.to].critical;
    let mut out: Vec<_> = t
        .flows
        .iter()
        .filter(drawable)
        .filter(critical)
        .take(MAX_FLOWS)
        .collect();
    let room = MAX_FLOWS - out.len();
    out.extend(
        t.flows
            .iter()
            .filter(drawable)
            .filter(|f| !critical(f))
            .take(room),
    );
    out
}

/// What the colours and marks mean: a deadlock's marks, or else the
/// critical path and the predicted end. Its swatches are of class `key`,
/// not `op`: they are no op.
fn legend(o: &mut String, deadlocked: bool) {
    let y = 44.0;
    let mut lx = 12.0;
    let critical = [("data crit", "critical path")];
    let keys = [("data", "data"), ("sync", "sync")]
        .into_iter()
        .chain(critical.into_iter().filter(|_| !deadlocked))
        .chain([("sync", "waiting")]);
    for (class, label) in keys {
        let _ = write!(
            o,
            r#"<rect class="key {class}" x="{lx}" y="{y}" width="18" height="{BAR}"/>"#
        );
        if label == "waiting" {
            let _ = write!(
                o,
                r#"<rect class="wait" x="{lx}" y="{y}" width="18" height="{BAR}"/>"#
            );
        }
        let _ = write!(
            o,
            r#"<text x="{}" y="{}">{label}</text>"#,
            lx + 24.0,
            y + 10.0
        );
        lx += 40.0 + 5.9 * label.len() as f64;
    }
    let (ly, ty) = (y + 6.0, y + 10.0);
    let _ = write!(
        o,
        r#"<line class="flow" x1="{lx}" y1="{ly}" x2="{}" y2="{ly}"/><text x="{}" y="{ty}">release (signal, semaphore, barrier, data)</text>"#,
        lx + 22.0,
        lx + 28.0,
    );
    lx += 44.0 + 5.9 * 42.0;
    if deadlocked {
        let _ = write!(
            o,
            r#"<path class="stuck" d="M{lx},{y}l5,6l-5,6l-5,-6z"/><text x="{}" y="{ty}">stuck (deadlock)</text>"#,
            lx + 10.0,
        );
    } else {
        let (ex, eb) = (lx + 4.0, y + BAR);
        let _ = write!(
            o,
            r#"<line class="end" x1="{ex}" x2="{ex}" y1="{y}" y2="{eb}"/><text x="{}" y="{ty}">predicted end</text>"#,
            ex + 8.0,
        );
    }
}

/// 1, 2 or 5 times a power of ten, the first at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    p * if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    }
}

fn human_time(us: f64) -> String {
    if !us.is_finite() {
        return "no end".into();
    }
    let (v, unit) = match us {
        u if u >= 1e6 => (u / 1e6, "s"),
        u if u >= 1e3 => (u / 1e3, "ms"),
        u if u >= 1.0 || u == 0.0 => (u, "µs"),
        u => (u * 1e3, "ns"),
    };
    format!("{} {unit}", sig3(v))
}

/// `v` with `D` decimals, written by integer arithmetic: std's exact
/// formatting of floats took most of the time of a large picture.
struct Fixed<const D: u32>(f64);

impl<const D: u32> fmt::Display for Fixed<D> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let scale = 10u64.pow(D);
        let v = (self.0 * scale as f64).round();
        if v.is_nan() || v.abs() >= 9e15 {
            return write!(f, "{:.*}", D as usize, self.0);
        }
        let sign = if v < 0.0 { "-" } else { "" };
        let a = v.abs() as u64;
        if D == 0 {
            write!(f, "{sign}{a}")
        } else {
            write!(f, "{sign}{}.{:0w$}", a / scale, a % scale, w = D as usize)
        }
    }
}

/// Text as XML character data or an attribute value. Characters XML 1.0
/// cannot hold at all (most controls) become U+FFFD.
pub(crate) struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(|c: char| {
            matches!(
                c,
                '&' | '<' | '>' | '"' | '\'' | '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}'
            )
        }) {
            f.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().unwrap_or_default();
            f.write_str(match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&apos;",
                '\n' => "&#10;",
                '\t' | '\r' => " ",
                _ => "\u{FFFD}",
            })?;
            rest = &rest[i + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests;

//! The SVG timeline as a browser draws it: headless Chromium renders one
//! and the test reads the screenshot's pixels where the picture says its
//! bars, hatching and markers are. Parsing the SVG alone would not see a
//! picture that is well-formed but draws nothing (a style a browser
//! rejects, a pattern it cannot resolve, text with no font).

mod common;

use common::{Needs, CHROMIUM};
use msclc::timing::svg::svg;
use msclc::timing::{Flow, FlowKind, Slice, SliceKind, StuckAt, Timeline, Track};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    common::run(vec![common::test(
        "chromium_draws_the_timeline",
        Needs::Chromium,
        chromium_draws_the_timeline,
    )])
}

/// A ring of 4 ranks, 3 steps: block 0 puts a chunk to the next rank and
/// signals; block 1 waits for the previous rank's signal and copies. Rank
/// 0's block 1 never gets its last signal: a deadlock, for the marker.
fn ring() -> Timeline {
    let (ranks, steps) = (4u32, 3usize);
    let mut tracks = Vec::new();
    for rank in 0..ranks {
        tracks.extend([Track { rank, tb: 0 }, Track { rank, tb: 1 }]);
    }
    let mut slices = Vec::new();
    let mut flows = Vec::new();
    let mut stuck = Vec::new();
    let op = |track: usize, op: usize, name: &str, kind: SliceKind, t: [f64; 3]| Slice {
        track,
        op,
        name: name.into(),
        detail: format!("{name} chunk {op} <ring> & peer"),
        kind,
        start_us: t[0],
        end_us: t[1],
        waited_us: t[2],
        bytes: if kind == SliceKind::Data { 16 << 20 } else { 0 },
        critical: track == 7,
    };
    // Index of each step's signal and put, per rank.
    let mut signal = vec![vec![0; steps]; ranks as usize];
    let mut put = signal.clone();
    for r in 0..ranks as usize {
        for k in 0..steps {
            let t0 = k as f64 * 10.0 + r as f64 * 0.7;
            put[r][k] = slices.len();
            slices.push(op(
                2 * r,
                2 * k,
                "put",
                SliceKind::Data,
                [t0, t0 + 8.0, 0.0],
            ));
            signal[r][k] = slices.len();
            slices.push(op(
                2 * r,
                2 * k + 1,
                "signal",
                SliceKind::Sync,
                [t0 + 8.0, t0 + 8.6, 0.0],
            ));
        }
    }
    for r in 0..ranks as usize {
        let prev = (r + ranks as usize - 1) % ranks as usize;
        let mut at = 0.0;
        for k in 0..steps {
            if r == 0 && k == steps - 1 {
                stuck.push(StuckAt {
                    track: 1,
                    op: 2 * k,
                    name: "wait".into(),
                    since_us: at,
                });
                break;
            }
            let released = slices[signal[prev][k]].end_us + 0.3;
            let wait = slices.len();
            slices.push(op(
                2 * r + 1,
                2 * k,
                "wait",
                SliceKind::Sync,
                [at, released + 0.4, released - at],
            ));
            flows.push(Flow {
                from: signal[prev][k],
                to: wait,
                kind: FlowKind::Signal,
            });
            at = released + 0.4;
            flows.push(Flow {
                from: put[prev][k],
                to: slices.len(),
                kind: FlowKind::Data,
            });
            slices.push(op(
                2 * r + 1,
                2 * k + 1,
                "copy",
                SliceKind::Data,
                [at, at + 4.0, 0.0],
            ));
            at += 4.0;
        }
    }
    // Each block's ops in the order run, blocks by rank then block.
    let mut order: Vec<usize> = (0..slices.len()).collect();
    order.sort_by(|&a, &b| (slices[a].track, slices[a].op).cmp(&(slices[b].track, slices[b].op)));
    let mut new_index = vec![0; slices.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    for f in &mut flows {
        (f.from, f.to) = (new_index[f.from], new_index[f.to]);
    }
    let slices: Vec<Slice> = order.iter().map(|&i| slices[i].clone()).collect();
    let end_us = slices.iter().map(|s| s.end_us).fold(0.0, f64::max);
    Timeline {
        title: "ring allgather <hand-built example>".into(),
        topology: "h100-nvlink".into(),
        size_bytes: 64 << 20,
        tracks,
        slices,
        flows,
        end_us,
        stuck,
    }
}

/// Runs Chromium to screenshot `svg_file`, killing it after 60 s: a
/// browser that hangs (no display, a profile lock) must not hang the test.
fn screenshot(dir: &Path, svg_file: &Path, png: &Path, height: u32) {
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size=1200,{height}"))
        .arg(format!("file://{}", svg_file.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium took more than 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = child.wait_with_output().expect("chromium's output");
    assert!(
        status.success() && png.exists(),
        "chromium made no screenshot ({status}):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

struct Image {
    width: u32,
    height: u32,
    rgba: Vec<u8>,
}

impl Image {
    fn decode(png_file: &Path) -> Image {
        let file = std::fs::File::open(png_file).expect("open the screenshot");
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        // Whatever the encoder chose (palette, 16 bits, no alpha): 8-bit
        // RGB or RGBA out.
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
        let info = reader.next_frame(&mut buf).expect("a frame");
        let channels = info.color_type.samples();
        assert!(
            channels >= 3,
            "a colour screenshot, got {:?}",
            info.color_type
        );
        let rgba = buf[..info.buffer_size()]
            .chunks(channels)
            .flat_map(|p| [p[0], p[1], p[2], if channels == 4 { p[3] } else { 255 }])
            .collect();
        Image {
            width: info.width,
            height: info.height,
            rgba,
        }
    }

    fn at(&self, x: f64, y: f64) -> [u8; 3] {
        let (w, h) = (self.width, self.height);
        assert!(
            (0.0..f64::from(w)).contains(&x) && (0.0..f64::from(h)).contains(&y),
            "({x}, {y}) is outside the {w}x{h} screenshot"
        );
        let (x, y) = (x.floor() as usize, y.floor() as usize);
        let i = 4 * (y * self.width as usize + x);
        [self.rgba[i], self.rgba[i + 1], self.rgba[i + 2]]
    }
}

fn near(a: [u8; 3], b: [u8; 3], by: u8) -> bool {
    a.iter().zip(b).all(|(&p, q)| p.abs_diff(q) <= by)
}

fn luminance(c: [u8; 3]) -> f64 {
    0.2126 * f64::from(c[0]) + 0.7152 * f64::from(c[1]) + 0.0722 * f64::from(c[2])
}

/// The fill a rule of the picture's style sheet gives, as `#rrggbb`.
fn fill(svg: &str, class: &str) -> [u8; 3] {
    let rule = format!(".{class}{{fill:#");
    let at = svg
        .find(&rule)
        .unwrap_or_else(|| panic!("no {rule} in the style"))
        + rule.len();
    let hex = |i: usize| u8::from_str_radix(&svg[at + i..at + i + 2], 16).expect("hex");
    [hex(0), hex(2), hex(4)]
}

fn chromium_draws_the_timeline() {
    let t = ring();
    let picture = svg(&t);
    let doc = roxmltree::Document::parse(&picture).expect("well-formed SVG");
    let root = doc.root_element();
    let num = |n: &roxmltree::Node, a: &str| -> f64 {
        n.attribute(a).and_then(|v| v.parse().ok()).expect(a)
    };
    let height = num(&root, "height") as u32;

    let dir = common::scratch("svg-render");
    let (svg_file, png_file) = (dir.join("timeline.svg"), dir.join("timeline.png"));
    std::fs::write(&svg_file, &picture).expect("write the SVG");
    screenshot(&dir, &svg_file, &png_file, height);
    let image = Image::decode(&png_file);
    assert_eq!(
        (image.width, image.height),
        (1200, height),
        "the window's size"
    );

    // Each bar shows its kind's colour past its hatched waiting part, and
    // the waiting part shows lighter. Arrows leave bars at their right end
    // and arrive where waiting ends, crossing a bar here and there: the
    // middle of a bar is sampled, and most points, not all, must match.
    let (data, sync) = (fill(&picture, "data"), fill(&picture, "sync"));
    let bars: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("op ")))
        .collect();
    assert_eq!(bars.len(), t.slices.len());
    let hatches: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("wait"))
        .collect();
    let mut checked = [0, 0];
    let mut lighter = 0;
    for (bar, s) in bars.iter().zip(&t.slices) {
        let (x, y, w, h) = (
            num(bar, "x"),
            num(bar, "y"),
            num(bar, "width"),
            num(bar, "height"),
        );
        let hatch = hatches
            .iter()
            .find(|n| num(n, "x") == x && num(n, "y") == y);
        let waited = hatch.map_or(0.0, |n| num(n, "width"));
        let colour = if s.kind == SliceKind::Data {
            data
        } else {
            sync
        };
        if w - waited >= 14.0 {
            let points: Vec<[u8; 3]> = [0.3, 0.4, 0.5, 0.6, 0.7]
                .into_iter()
                .flat_map(|fx| [0.35, 0.65].map(|fy| (x + waited + (w - waited) * fx, y + h * fy)))
                .map(|(px, py)| image.at(px, py))
                .collect();
            let matching = points.iter().filter(|&&p| near(p, colour, 6)).count();
            assert!(
                matching >= 8,
                "{} at x={x} y={y}: {points:?}, not {colour:?}",
                s.name
            );
            checked[usize::from(s.kind == SliceKind::Sync)] += 1;
        }
        if waited >= 12.0 {
            let mean = (2..(waited as u32 - 2))
                .map(|dx| luminance(image.at(x + f64::from(dx), y + h / 2.0)))
                .sum::<f64>()
                / f64::from(waited as u32 - 4);
            assert!(
                mean > luminance(colour) + 10.0,
                "{}'s waiting is not lighter: {mean}",
                s.name
            );
            lighter += 1;
        }
    }
    assert!(
        checked[0] >= 20 && checked[1] >= 10,
        "{checked:?} data and sync bars checked"
    );
    assert!(lighter >= 3, "{lighter} waits long enough to check");

    // The deadlock's marker, in its red.
    let red = fill(&picture, "stuck");
    let marker = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("path")
                && n.attribute("class") == Some("stuck")
                && n.first_element_child().is_some()
        })
        .expect("a stuck marker");
    let d = marker.attribute("d").unwrap();
    let (mx, my) = d[1..d.find('l').unwrap()].split_once(',').unwrap();
    let (mx, my): (f64, f64) = (mx.parse().unwrap(), my.parse().unwrap());
    assert!(
        near(image.at(mx, my + 6.0), red, 6),
        "marker: {:?}",
        image.at(mx, my + 6.0)
    );

    // The title is text a font drew: dark pixels in its line.
    let dark = (12..600)
        .flat_map(|x| (8..26).map(move |y| (x, y)))
        .filter(|&(x, y)| luminance(image.at(f64::from(x), f64::from(y))) < 100.0)
        .count();
    assert!(dark > 300, "{dark} dark pixels in the title line");
    assert!(
        near(
            image.at(1195.0, f64::from(height) - 3.0),
            [255, 255, 255],
            0
        ),
        "white ground"
    );
}

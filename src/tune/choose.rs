//! Which candidate serves which sizes: at every size one of the fastest,
//! in the fewest runs of sizes (each run one plan), and the message-size
//! ranges of those plans, which tile the span asked.

/// One plan of the set: candidate `candidate` for sizes `first..=last`
/// (indices into the sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub candidate: usize,
    pub first: usize,
    pub last: usize,
}

/// What decides between equally fast candidates, the least first: one
/// the simulator did not warn of before one it did (an executor bug the
/// plan meets, simulated as intended), then the fewest thread blocks on a
/// rank (what more blocks do not speed up, they only take from the GPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TieBreak {
    pub warned: bool,
    pub blocks: u32,
}

/// The fewest segments such that at every size the candidate serving it
/// is within `within` (a fraction: 0.01 is 1%) of the fastest there.
/// `times[c][s]` is candidate c's time at size s, `None` where it has
/// none. Among the candidates that could serve a segment, the one with
/// the least time over it; of equal times, the least `ties[c]`, then the
/// first. `Err(s)`: no candidate has a time at size s.
pub fn segments(
    times: &[Vec<Option<f64>>],
    sizes: usize,
    within: f64,
    ties: &[TieBreak],
) -> Result<Vec<Segment>, usize> {
    let fast = |s: usize| -> Result<Vec<usize>, usize> {
        let best = times
            .iter()
            .filter_map(|t| t[s])
            .fold(f64::INFINITY, f64::min);
        if !best.is_finite() {
            return Err(s);
        }
        Ok((0..times.len())
            .filter(|&c| times[c][s].is_some_and(|t| t <= best * (1.0 + within) || equal(t, best)))
            .collect())
    };
    let mut out = Vec::new();
    let mut s = 0;
    while s < sizes {
        // Greedy: the longest run from `s` one candidate serves. (Taking
        // the longest each time gives the fewest runs.)
        let mut can = fast(s)?;
        let mut last = s;
        while last + 1 < sizes {
            let next = fast(last + 1)?;
            let both: Vec<usize> = can.iter().copied().filter(|c| next.contains(c)).collect();
            if both.is_empty() {
                break;
            }
            can = both;
            last += 1;
        }
        let total = |c: usize| -> f64 { (s..=last).filter_map(|k| times[c][k]).sum() };
        let candidate = can
            .iter()
            .copied()
            .min_by(|&a, &b| {
                let (ta, tb) = (total(a), total(b));
                match equal(ta, tb) {
                    true => ties[a].cmp(&ties[b]).then(a.cmp(&b)),
                    false => ta.total_cmp(&tb),
                }
            })
            .expect("a size with a time has a fastest candidate");
        out.push(Segment {
            candidate,
            first: s,
            last,
        });
        s = last + 1;
    }
    Ok(out)
}

/// Whether two times are a rounding apart: equal.
fn equal(x: f64, y: f64) -> bool {
    (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
}

/// The message sizes each segment's plan takes, `(min, max)` inclusive as
/// the executor checks them: from the first size it serves (the span's
/// `min` for the first) to one byte before the next segment's (the span's
/// `max` for the last). Together they cover `min..=max` once.
pub fn ranges(segments: &[Segment], sizes: &[u64], (min, max): (u64, u64)) -> Vec<(u64, u64)> {
    segments
        .iter()
        .enumerate()
        .map(|(k, seg)| {
            let lo = if k == 0 { min } else { sizes[seg.first] };
            let hi = match segments.get(k + 1) {
                Some(next) => sizes[next.first] - 1,
                None => max,
            };
            (lo, hi)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fastest_at_every_size_in_the_fewest_runs() {
        // Three candidates over five sizes: 0 best at first, 2 at the end,
        // 1 never best.
        let t = |v: &[f64]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        let times = vec![
            t(&[1.0, 2.0, 3.0, 8.0, 16.0]),
            t(&[1.5, 2.5, 3.5, 7.5, 15.0]),
            t(&[2.0, 3.0, 3.0, 6.0, 12.0]),
        ];
        let segs = segments(&times, 5, 0.0, &blocks(&[1, 1, 1])).unwrap();
        assert_eq!(
            segs,
            vec![
                Segment {
                    candidate: 0,
                    first: 0,
                    last: 2
                },
                Segment {
                    candidate: 2,
                    first: 3,
                    last: 4
                }
            ]
        );
        // Within 50%, candidate 2 serves everything... and 0 only the
        // start: one plan, the least time over all sizes.
        let one = segments(&times, 5, 1.0, &blocks(&[1, 1, 1])).unwrap();
        assert_eq!(
            one,
            vec![Segment {
                candidate: 2,
                first: 0,
                last: 4
            }]
        );
        let sizes = [1024, 2048, 4096, 8192, 16384];
        assert_eq!(
            ranges(&segs, &sizes, (1000, 20000)),
            vec![(1000, 8191), (8192, 20000)]
        );
    }

    /// Ties broken by thread blocks alone: no candidate warned of.
    fn blocks(blocks: &[u32]) -> Vec<TieBreak> {
        blocks
            .iter()
            .map(|&blocks| TieBreak {
                warned: false,
                blocks,
            })
            .collect()
    }

    #[test]
    fn of_equal_times_the_fewest_thread_blocks_serve() {
        let times = vec![vec![Some(2.0)], vec![Some(1.0)], vec![Some(1.0 + 1e-12)]];
        let chosen = |ties: &[TieBreak]| segments(&times, 1, 0.0, ties).unwrap()[0].candidate;
        assert_eq!(chosen(&blocks(&[1, 8, 4])), 2);
        assert_eq!(chosen(&blocks(&[1, 4, 4])), 1);
        // A faster candidate is not passed over for its blocks.
        assert_eq!(chosen(&blocks(&[8, 1, 1])), 1);
        // Of equal times, one the simulator warned of serves last.
        let mut warned = blocks(&[1, 1, 8]);
        warned[1].warned = true;
        assert_eq!(chosen(&warned), 2);
    }

    #[test]
    fn a_size_no_candidate_runs_is_named() {
        let times = vec![vec![Some(1.0), None], vec![Some(2.0), None]];
        assert_eq!(segments(&times, 2, 0.0, &blocks(&[1, 1])), Err(1));
    }
}

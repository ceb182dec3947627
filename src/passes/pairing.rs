//! Signal/wait pairing, as the executor pairs channels: rank A's k-th
//! channel of a type to B carries its signals to B's k-th channel of that
//! type back to A, and only waits on that channel see them. Every signal
//! must be matched by a wait on its paired channel: an unmatched signal
//! lets a later execution's wait pass early; a missing one hangs.
//!
//! The reference compiler counts per pair of ranks and rejects a plan
//! whose counts differ there: so do we (`check`), pointing at the channel
//! pair that lacks the waits. A plan that balances a pair of ranks' counts
//! across different channels it emits, and the executor hangs on it: we
//! emit it too (the plans are the same) and warn (`warnings`).

use crate::diag::{Code, Diagnostic, Severity, Span};
use crate::ir::{ChannelKind, ChannelNumbers, ChannelPairs, Endpoint, OpName, Origin, Plan};
use rustc_hash::FxHashMap;

fn signals(name: OpName) -> bool {
    name.is_signal() || matches!(name, OpName::PutWithSignal | OpName::PutWithSignalAndFlush)
}

/// How many ops signal on, and wait on, each channel end, and (once a
/// report needs them, `Tally::with_origins`) where those ops are: one list
/// for the whole plan, sliced by end (a plan of a million ops has
/// hundreds of thousands of ends; two growing lists for each cost more
/// than the rest of the pass). A plan whose ends all balance, the usual
/// one, is checked on the counts alone.
struct Uses {
    /// Where the signals of end `e` start (`2e`), then its waits (`2e + 1`);
    /// one more entry closes the last.
    starts: Vec<usize>,
    /// Empty until `Tally::with_origins`.
    origins: Vec<Origin>,
}

impl Uses {
    fn signal_count(&self, end: usize) -> usize {
        self.starts[2 * end + 1] - self.starts[2 * end]
    }

    fn wait_count(&self, end: usize) -> usize {
        self.starts[2 * end + 2] - self.starts[2 * end + 1]
    }

    /// The ops that signal on `end` (none before `Tally::with_origins`).
    fn signals(&self, end: usize) -> &[Origin] {
        self.origins
            .get(self.starts[2 * end]..self.starts[2 * end + 1])
            .unwrap_or_default()
    }

    /// The ops that wait on `end` (none before `Tally::with_origins`).
    fn waits(&self, end: usize) -> &[Origin] {
        self.origins
            .get(self.starts[2 * end + 1]..self.starts[2 * end + 2])
            .unwrap_or_default()
    }
}

/// A channel end whose signals and its pair's waits differ in number, or
/// that is waited on without a pair.
struct Mismatch {
    end: Endpoint,
    back: Option<Endpoint>,
    /// Signals on `end` less waits on `back` (waits on an unpaired `end`
    /// count as missing signals).
    excess: i64,
}

/// Every channel end of a plan with the signals and waits on it.
struct Tally<'p> {
    plan: &'p Plan,
    pairs: ChannelPairs,
    uses: Uses,
}

/// Calls `f` for every signal and wait on a channel end of the plan, in
/// plan order, with its slot in [`Uses::starts`] and the op's origin.
fn each_use(plan: &Plan, pairs: &ChannelPairs, mut f: impl FnMut(usize, Origin)) {
    for (r, rank) in plan.ranks.iter().enumerate() {
        for tb in &rank.threadblocks {
            for (op, _) in tb.ops_with_bodies() {
                let Some(kind) = op.channel else { continue };
                let is_signal = signals(op.name);
                if !is_signal && !op.name.is_wait() {
                    continue;
                }
                let table = tb.channel_ids(kind);
                for &local in &op.channel_ids {
                    let Some(&channel) = table.get(local as usize) else {
                        continue;
                    };
                    let Some(end) = pairs.index((r as u32, kind, channel)) else {
                        continue;
                    };
                    let origin = Origin {
                        span: op.span,
                        context: op.context,
                    };
                    f(2 * end + usize::from(!is_signal), origin);
                }
            }
        }
    }
}

impl<'p> Tally<'p> {
    /// The plan's channel ends with their signals and waits counted.
    fn new(plan: &'p Plan) -> Tally<'p> {
        let pairs = ChannelPairs::new(plan);
        let mut starts = vec![0; 2 * pairs.len() + 1];
        each_use(plan, &pairs, |slot, _| starts[slot + 1] += 1);
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        Tally {
            plan,
            pairs,
            uses: Uses {
                starts,
                origins: Vec::new(),
            },
        }
    }

    /// The tally with the op behind every signal and wait, for a report.
    fn with_origins(mut self) -> Tally<'p> {
        let starts = &self.uses.starts;
        let mut origins = vec![Origin::default(); starts[starts.len() - 1]];
        let mut next = starts.clone();
        each_use(self.plan, &self.pairs, |slot, origin| {
            origins[next[slot]] = origin;
            next[slot] += 1;
        });
        self.uses.origins = origins;
        self
    }

    /// The waits on `end`'s pair (none when it has no pair).
    fn waits_back(&self, back: Option<Endpoint>) -> &[Origin] {
        back.and_then(|b| self.pairs.index(b))
            .map_or(&[][..], |b| self.uses.waits(b))
    }

    /// Every mismatched channel end, in rank and channel order.
    fn mismatches(&self) -> impl Iterator<Item = Mismatch> + '_ {
        // By number: only a mismatch is worth naming its ends.
        (0..self.pairs.len()).filter_map(|i| {
            let signals = self.uses.signal_count(i) as i64;
            let back = self.pairs.pair_of(i);
            let excess = match back {
                Some(b) => signals - self.uses.wait_count(b) as i64,
                // Nobody waits for these signals; no signal releases these waits.
                None if signals != 0 => signals,
                None => -(self.uses.wait_count(i) as i64),
            };
            (excess != 0).then(|| Mismatch {
                end: self.pairs.endpoint(i),
                back: back.map(|b| self.pairs.endpoint(b)),
                excess,
            })
        })
    }

    fn peer(&self, end: Endpoint) -> u32 {
        peer_of(self.plan, end)
    }

    /// Per kind and ordered pair of ranks, signals less waits, as the
    /// reference compiler counts them.
    fn rank_pair_excess(&self) -> FxHashMap<(ChannelKind, u32, u32), i64> {
        let mut excess: FxHashMap<_, i64> = FxHashMap::default();
        for i in 0..self.pairs.len() {
            let end @ (rank, kind, _) = self.pairs.endpoint(i);
            let peer = self.peer(end);
            *excess.entry((kind, rank, peer)).or_default() += self.uses.signal_count(i) as i64;
            *excess.entry((kind, peer, rank)).or_default() -= self.uses.wait_count(i) as i64;
        }
        excess
    }
}

/// How a plan's signals and waits balance, once `check` passed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// On every channel pair: the executor pairs every signal with a wait.
    EveryChannel,
    /// Per pair of ranks only, as the reference compiler counts them:
    /// `warnings` finds the channel pairs where not.
    RankPairs,
}

/// The plan's signals and waits balance per pair of ranks (the reference
/// compiler's rule); the error points at a channel pair where they do not.
/// The passes after this one add no signal or wait, and replicate every
/// channel with its ops: the balance found here is the final plan's.
pub fn check(plan: &Plan) -> Result<Balance, Diagnostic> {
    let tally = Tally::new(plan);
    // Most plans balance on every channel: nothing to count per rank pair.
    if tally.mismatches().next().is_none() {
        return Ok(Balance::EveryChannel);
    }
    let unbalanced = tally.rank_pair_excess();
    let mut refused = tally.mismatches().filter(|m| {
        let (rank, kind, _) = m.end;
        let peer = tally.peer(m.end);
        let key = if m.excess > 0 || m.back.is_some() {
            (kind, rank, peer)
        } else {
            (kind, peer, rank)
        };
        unbalanced.get(&key).is_some_and(|&e| e != 0)
    });
    let Some(first) = refused.next() else {
        return Ok(Balance::RankPairs);
    };
    let rest: Vec<Mismatch> = refused.collect();
    let tally = tally.with_origins();
    let d = diagnostic(&tally, &first);
    // One mistake often unbalances two channel pairs (a wait moved to the
    // channel to another peer): the first other one at a line of its own
    // is shown too, where that wait is.
    let shown: Vec<Span> = d
        .primary
        .iter()
        .chain(&d.secondary)
        .map(|l| l.span)
        .collect();
    let other = rest
        .iter()
        .map(|m| (m, primary(&tally, m).span))
        .find(|(_, at)| !shown.contains(at));
    Err(match other {
        Some((m, at)) => {
            // Its message, less the headline every mismatch's starts
            // with (`signal/wait mismatch on memory channels: `).
            let also = diagnostic(&tally, m);
            let what = also
                .message
                .split_once(": ")
                .map_or(&*also.message, |(_, what)| what);
            d.with_secondary(at, format!("and a mismatch here: {what}"))
        }
        None => d,
    })
}

/// The channel pairs whose signals and waits differ in a plan that
/// `check` passed: the executor hangs on them. One warning per program
/// line: instances and loops repeat a mistake on many channels, and the
/// waits that lack signals on one channel pair are usually those a warning
/// already showed waiting on the wrong channel. `balance` is what `check`
/// found: a plan balanced on every channel is not counted again.
pub fn warnings(plan: &Plan, balance: Balance) -> Vec<Diagnostic> {
    if balance == Balance::EveryChannel {
        return Vec::new();
    }
    let tally = Tally::new(plan);
    if tally.mismatches().next().is_none() {
        return Vec::new();
    }
    let tally = tally.with_origins();
    let mut shown = std::collections::HashSet::new();
    let mut out = Vec::new();
    for m in tally.mismatches() {
        // Instances and loops make thousands of mismatches at a few lines:
        // only the first at a line is made into a warning.
        if !shown.insert(Some(primary(&tally, &m).span)) {
            continue;
        }
        let mut d = diagnostic(&tally, &m);
        shown.extend(d.secondary.iter().map(|l| Some(l.span)));
        d.severity = Severity::Warning;
        d.code = Code::ChannelPair;
        out.push(d.with_note(
            "the reference compiler emits this plan (it counts signals and waits per pair of ranks, and they balance), but the executor hangs on it",
        ));
    }
    out
}

/// Where the diagnostic of `m` points: its first wait where no channel
/// back signals; else the first signal its channel back does not wait
/// for, or the first wait there its channel does not signal.
fn primary(tally: &Tally, m: &Mismatch) -> Origin {
    let end = tally.pairs.index(m.end).unwrap_or(0);
    if m.back.is_none() && m.excess < 0 {
        return tally.uses.waits(end)[0];
    }
    first_unmatched(tally.uses.signals(end), tally.waits_back(m.back))
}

/// The first of `signals` past the waits, or of `waits` past the signals.
fn first_unmatched(signals: &[Origin], waits: &[Origin]) -> Origin {
    let (ns, nw) = (signals.len(), waits.len());
    if ns > nw {
        signals[nw]
    } else {
        waits[ns]
    }
}

fn diagnostic(tally: &Tally, m: &Mismatch) -> Diagnostic {
    let plan = tally.plan;
    let end = tally.pairs.index(m.end).unwrap_or(0);
    if m.back.is_none() && m.excess < 0 {
        return unpaired_waits(plan, m.end, tally.uses.waits(end));
    }
    let mut elsewhere = waits_elsewhere(tally, m.end, m.back);
    // A rank that waits on its own end of the channel it signals on (a
    // ring's `next.wait` for `prev.wait`): most likely the wait meant for
    // these signals, at the wrong end.
    if let (None, Some(own)) = (m.back, tally.uses.waits(end).first()) {
        elsewhere.push((
            own.span,
            format!(
                "rank {} waits on this same channel, its own end: a wait sees the peer's signals on the channel back, not its own",
                m.end.0
            ),
        ));
    }
    let waits = tally.waits_back(m.back);
    mismatch(
        plan,
        m.end,
        m.back,
        (tally.uses.signals(end), waits),
        elsewhere,
    )
}

/// The waits of `from`'s peer for `from`'s rank on its other channels of
/// the kind that wait more often than their pairs signal: most likely the
/// waits meant for `from`'s signals, on the wrong channel. One text per
/// program line (and whether the channels have a pair), the channels in
/// runs: instances make a line wait on hundreds of channels in a row.
fn waits_elsewhere(tally: &Tally, from: Endpoint, back: Option<Endpoint>) -> Vec<(Span, String)> {
    let (plan, pairs, uses) = (tally.plan, &tally.pairs, &tally.uses);
    let (rank, kind, _) = from;
    let peer = peer_of(plan, from);
    let numbers = ChannelNumbers::new(plan);
    // Each wait's line, its channel, and the channel that pairs with it.
    let mut waits: Vec<(Span, u32, Option<u32>)> = Vec::new();
    for end in pairs.ends_of(peer) {
        let theirs = pairs.endpoint(end);
        if theirs.1 != kind || Some(theirs) == back || peer_of(plan, theirs) != rank {
            continue;
        }
        let paired = pairs.pair(theirs);
        let signalled = paired
            .and_then(|p| pairs.index(p))
            .map_or(0, |p| uses.signal_count(p));
        if uses.wait_count(end) <= signalled {
            continue;
        }
        let number = numbers.number(theirs).0;
        let paired = paired.map(|p| numbers.number(p).0);
        waits.extend(uses.waits(end).iter().map(|o| (o.span, number, paired)));
    }
    waits.sort_by_key(|&(s, channel, paired)| (s.file, s.start, s.end, paired.is_some(), channel));
    waits.dedup();
    let mut out = Vec::new();
    for group in waits.chunk_by(|a, b| a.0 == b.0 && a.2.is_some() == b.2.is_some()) {
        let channels: Vec<u32> = group.iter().map(|w| w.1).collect();
        let (channel, has, pair) = match group.len() {
            1 => ("channel", "has", "pairs"),
            _ => ("channels", "have", "pair"),
        };
        let waits_on = format!(
            "rank {peer} waits on its {} {channel} {} to rank {rank}",
            kind.name(),
            in_runs(&channels)
        );
        let pairing = if group[0].2.is_none() {
            format!("which {has} no pair on rank {rank}")
        } else {
            let mut paired: Vec<u32> = group.iter().filter_map(|w| w.2).collect();
            paired.sort_unstable();
            format!(
                "which {pair} with rank {rank}'s {channel} {} to rank {peer}",
                in_runs(&paired)
            )
        };
        out.push((group[0].0, format!("{waits_on} here, {pairing}")));
    }
    out
}

/// Sorted channel numbers, a run of three or more as one: "#3", "#3 and
/// #4", "#1, #3 to #5 and #9".
fn in_runs(numbers: &[u32]) -> String {
    let mut runs: Vec<String> = Vec::new();
    for run in numbers.chunk_by(|a, b| b.checked_sub(*a) == Some(1)) {
        match run {
            [first, _, .., last] => runs.push(format!("#{first} to #{last}")),
            _ => runs.extend(run.iter().map(|n| format!("#{n}"))),
        }
    }
    match runs.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => runs.concat(),
    }
}

fn peer_of(plan: &Plan, (rank, kind, channel): Endpoint) -> u32 {
    plan.ranks[rank as usize].channel_peers(kind)[channel as usize]
}

/// The error for the signals on `from` that its paired channel `back` does
/// not wait for as often (or waits for more often).
fn mismatch(
    plan: &Plan,
    from: Endpoint,
    back: Option<Endpoint>,
    (signals, waits): (&[Origin], &[Origin]),
    elsewhere: Vec<(Span, String)>,
) -> Diagnostic {
    let peer = peer_of(plan, from);
    let (ns, nw) = (signals.len(), waits.len());
    let names = ChannelNumbers::new(plan);
    let sender = names.name(from);
    let message = match back {
        Some(b) => format!(
            "signal/wait mismatch on {} channels: {sender} signals {}, but its paired channel back, {}, waits {}",
            from.1.name(),
            times(ns, "time"),
            names.name(b),
            times(nw, "time"),
        ),
        None => format!(
            "signal/wait mismatch on {} channels: {sender} signals {}, but rank {peer} has no {} channel back to rank {} to wait on",
            from.1.name(),
            times(ns, "time"),
            from.1.name(),
            from.0
        ),
    };
    let primary = first_unmatched(signals, waits);
    let label = if ns > nw {
        format!(
            "{} more than rank {peer} waits for on the paired channel",
            times(ns - nw, "signal")
        )
    } else {
        format!(
            "{} more than rank {} signals on the paired channel",
            times(nw - ns, "wait"),
            from.0
        )
    };
    let mut d = Diagnostic::error(Code::SignalWait, primary.span, message, label);
    let mut places = counted(signals, |n| {
        format!(
            "{} of rank {} on its channel to rank {peer}",
            times(n, "signal"),
            from.0
        )
    });
    places.extend(counted(waits, |n| {
        format!("{} of rank {peer} on its channel back", times(n, "wait"))
    }));
    places.extend(elsewhere);
    let made = |e: Endpoint| plan.channel_origin(e.0, e.1, e.2).map(|o| o.span);
    match (made(from), back.and_then(made)) {
        (Some(a), Some(b)) if a == b => places.push((
            a,
            format!("{sender} and its paired channel back are made here"),
        )),
        (a, b) => {
            places.extend(a.map(|a| (a, format!("{sender} is made here"))));
            places.extend(b.map(|b| (b, "its paired channel back is made here".to_string())));
        }
    }
    d = with_places(d, primary.span, places);
    d = plan.in_context(d, primary.context);
    d.with_note(
        "a rank's k-th channel of a type to a peer pairs with the peer's k-th channel of that type back, and a wait sees only the signals of its paired channel: wait on the channel paired with the one that signals, as often as it signals (put_with_signal counts as a signal)",
    )
}

/// The error for waits on a channel whose peer has no channel back.
fn unpaired_waits(plan: &Plan, on: Endpoint, waits: &[Origin]) -> Diagnostic {
    let peer = peer_of(plan, on);
    let name = ChannelNumbers::new(plan).name(on);
    let mut d = Diagnostic::error(Code::SignalWait,
        waits[0].span,
        format!(
            "signal/wait mismatch on {} channels: {name} waits {}, but rank {peer} has no {} channel back to rank {} to signal on",
            on.1.name(),
            times(waits.len(), "time"),
            on.1.name(),
            on.0
        ),
        "this wait is never released",
    );
    let mut places = counted(waits, |n| format!("{} on it", times(n, "wait")));
    if let Some(o) = plan.channel_origin(on.0, on.1, on.2) {
        places.push((o.span, format!("{name} is made here")));
    }
    d = with_places(d, waits[0].span, places);
    d = plan.in_context(d, waits[0].context);
    d.with_note(format!(
        "make a {} channel from rank {peer} to rank {} for the signals",
        on.1.name(),
        on.0
    ))
}

/// One label per program line, with how many of `uses` it made: a loop
/// makes many signals at one line.
fn counted(uses: &[Origin], text: impl Fn(usize) -> String) -> Vec<(Span, String)> {
    let mut spans: Vec<Span> = uses.iter().map(|o| o.span).collect();
    spans.sort_by_key(|s| (s.file, s.start, s.end));
    let mut out = Vec::new();
    for group in spans.chunk_by(|a, b| a == b) {
        out.push((group[0], text(group.len())));
    }
    out
}

/// The most texts one label joins: the rest are counted.
const TEXTS_AT_A_PLACE: usize = 4;

/// Adds `places` as secondary labels in source order, one per place (the
/// texts of a place joined), folding those at the primary label's place
/// into it.
fn with_places(mut d: Diagnostic, primary: Span, mut places: Vec<(Span, String)>) -> Diagnostic {
    places.sort_by_key(|(s, _)| (s.file, s.start, s.end));
    for group in places.chunk_by(|a, b| a.0 == b.0) {
        let span = group[0].0;
        // In the order given, each text once: a loop's waits at one line
        // may name thousands of channels, and each many times.
        let mut seen = std::collections::HashSet::new();
        let texts: Vec<&str> = group
            .iter()
            .map(|(_, text)| text.as_str())
            .filter(|text| seen.insert(*text))
            .collect();
        let mut text = texts[..texts.len().min(TEXTS_AT_A_PLACE)].join("; ");
        if texts.len() > TEXTS_AT_A_PLACE {
            let more = texts.len() - TEXTS_AT_A_PLACE;
            text.push_str(&format!("; and {more} more like these"));
        }
        match &mut d.primary {
            Some(label) if span == primary => label.message = format!("{}; {text}", label.message),
            _ => d = d.with_secondary(span, text),
        }
    }
    d
}

/// "1 signal", "3 signals".
fn times(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::in_runs;

    #[test]
    fn channels_are_named_in_runs() {
        assert_eq!(in_runs(&[7]), "#7");
        assert_eq!(in_runs(&[3, 4]), "#3 and #4");
        assert_eq!(in_runs(&[1, 3, 4, 5, 9]), "#1, #3 to #5 and #9");
        assert_eq!(
            in_runs(&[16384, 16385, 16386, 17407]),
            "#16384 to #16386 and #17407"
        );
    }
}

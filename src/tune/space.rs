//! What may vary: each param that lists its values (`in [..]`) or that
//! `--vary` names, less those `-D` fixes; and the candidates tried, every
//! combination or, past `--max-candidates`, a search that says how.

use crate::driver::params::Declared;
use std::collections::HashSet;

/// One param that varies: its values as `-D` writes them, and which of
/// them is the program's default, if it is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    pub values: Vec<String>,
    pub default: Option<usize>,
    /// The default: as the values are written where it is a literal,
    /// else as the program writes it.
    pub default_text: String,
}

/// The params that vary, in the program's order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Space {
    pub axes: Vec<Axis>,
}

/// A candidate: for each axis, the index of its value, or `None` for the
/// program's default (what the program gives when no `-D` sets it).
pub type Candidate = Vec<Option<usize>>;

impl Space {
    /// The space of a program's params: `vary` gives a param's values
    /// instead of (or where there is none) its list; `fixed` names the
    /// params `-D` sets, which do not vary. A `--vary` name the program
    /// does not declare is an error naming those it does.
    pub fn new(
        declared: &[Declared],
        default_text: impl Fn(&Declared) -> String,
        vary: &[(String, Vec<String>)],
        fixed: &[(String, String)],
    ) -> Result<Space, String> {
        for (k, (name, values)) in vary.iter().enumerate() {
            if vary[..k].iter().any(|(earlier, _)| earlier == name) {
                return Err(format!(
                    "--vary {name} is given twice: give each param's values in one --vary {name}=V1,V2,.."
                ));
            }
            let Some(param) = declared.iter().find(|p| p.name == name) else {
                let names: Vec<&str> = declared.iter().map(|p| p.name).collect();
                return Err(format!(
                    "--vary {name}: the program declares no param `{name}` (its params: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            };
            // Each value read now, as `-D` reads it: not one candidate each
            // dropped later for it.
            if let Some(bad) = values
                .iter()
                .find(|v| crate::driver::params::value_of(param.ty, v).is_none())
            {
                return Err(format!(
                    "--vary {name}={bad}: `{bad}` is not a value of param `{name}`, of type `{}`",
                    param.ty
                ));
            }
            if fixed.iter().any(|(f, _)| f == name) {
                return Err(format!(
                    "--vary {name} and -D {name}: a param is either set or varied"
                ));
            }
        }
        let mut axes = Vec::new();
        for param in declared {
            if fixed.iter().any(|(f, _)| f == param.name) {
                continue;
            }
            let values: Vec<String> = match vary.iter().find(|(n, _)| n == param.name) {
                Some((_, values)) => values.clone(),
                None => match param.literals() {
                    Some(literals) => literals.iter().map(|l| l.define_text()).collect(),
                    None => continue,
                },
            };
            // Each value once (`--vary tbg=1,1`, or `1,0x1`): a candidate
            // once, simulated once. (In a set, by the value's canonical
            // text: a param may list 200,000.)
            // The default is one of them however either is written
            // (`--vary tbg=0x4,8` and a default of 4): one candidate too.
            let canonical = |v: &str| {
                crate::driver::params::value_of(param.ty, v).map(|value| value.to_string())
            };
            let literal = crate::vocab::Literal::of(param.default).map(|l| l.define_text());
            let default_value = literal.as_deref().and_then(canonical);
            let (mut seen, mut kept, mut default) = (HashSet::new(), Vec::new(), None);
            for v in values {
                let value = canonical(&v);
                if !seen.insert(value.clone()) {
                    continue;
                }
                if value.is_some() && value == default_value {
                    default = Some(kept.len());
                }
                kept.push(v);
            }
            axes.push(Axis {
                name: param.name.to_string(),
                default,
                values: kept,
                // As the values are written (a string unquoted, as `-D`
                // and `--vary` take it), where it is a literal.
                default_text: literal.unwrap_or_else(|| default_text(param)),
            });
        }
        Ok(Space { axes })
    }

    /// Combinations of the axes' values (saturating).
    pub fn size(&self) -> u128 {
        self.axes
            .iter()
            .fold(1u128, |n, a| n.saturating_mul(a.values.len() as u128))
    }

    /// The `-D` settings of `candidate`.
    pub fn defines(&self, candidate: &Candidate) -> Vec<(String, String)> {
        self.axes
            .iter()
            .zip(candidate)
            .filter_map(|(axis, v)| v.map(|i| (axis.name.clone(), axis.values[i].clone())))
            .collect()
    }

    /// `tbg=4 protocol=LL`, every axis, defaults included.
    pub fn describe(&self, candidate: &Candidate) -> String {
        self.axes
            .iter()
            .zip(candidate)
            .map(|(axis, v)| match v {
                Some(i) => format!("{}={}", axis.name, axis.values[*i]),
                None => format!("{}={}", axis.name, axis.default_text),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The candidate of the program's defaults.
    pub fn defaults(&self) -> Candidate {
        vec![None; self.axes.len()]
    }

    /// `candidate` with each axis at its default written as `None`, so
    /// that one combination has one form.
    fn normal(&self, mut candidate: Candidate) -> Candidate {
        for (axis, v) in self.axes.iter().zip(candidate.iter_mut()) {
            if v.is_some() && *v == axis.default {
                *v = None;
            }
        }
        candidate
    }

    /// The candidates to try, the program's defaults first, and how they
    /// were chosen: every combination when there are at most `max`, else
    /// the defaults, each single change from them, and the rest drawn at
    /// random (a fixed seed: the same run tries the same candidates).
    pub fn candidates(&self, max: usize) -> (Vec<Candidate>, Search) {
        let max = max.max(1);
        let mut out = vec![self.defaults()];
        let add = |c: Candidate, out: &mut Vec<Candidate>| {
            let c = self.normal(c);
            if !out.contains(&c) {
                out.push(c);
            }
        };
        let total = self.size();
        if total <= max as u128 {
            // Odometer order: the last axis turns fastest.
            let mut digits = vec![0usize; self.axes.len()];
            'all: loop {
                add(digits.iter().map(|&d| Some(d)).collect(), &mut out);
                for k in (0..digits.len()).rev() {
                    digits[k] += 1;
                    if digits[k] < self.axes[k].values.len() {
                        continue 'all;
                    }
                    digits[k] = 0;
                }
                break;
            }
            let tried = out.len();
            return (out, Search::Every { tried });
        }
        // The single changes, a value of each param in turn: cut short by
        // `max`, every param has had as many of its values tried.
        let longest = self.axes.iter().map(|a| a.values.len()).max().unwrap_or(0);
        'singles: for i in 0..longest {
            for (k, axis) in self.axes.iter().enumerate() {
                if i >= axis.values.len() {
                    continue;
                }
                if out.len() >= max {
                    break 'singles;
                }
                let mut c = self.defaults();
                c[k] = Some(i);
                add(c, &mut out);
            }
        }
        let singles = out.len();
        // (Each axis's default is no change.)
        let changes: usize = self
            .axes
            .iter()
            .map(|a| a.values.len() - usize::from(a.default.is_some()))
            .sum();
        let mut state = SEED;
        let mut draws = 0u64;
        while out.len() < max && draws < 64 * max as u64 {
            draws += 1;
            let c = self
                .axes
                .iter()
                .map(|a| Some((next(&mut state) % a.values.len() as u64) as usize))
                .collect();
            add(c, &mut out);
        }
        let random = out.len() - singles;
        (
            out,
            Search::Sampled {
                of: total,
                singles,
                changes,
                random,
            },
        )
    }
}

/// How the candidates were chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum Search {
    /// Every combination (with the defaults, if they are not one).
    Every { tried: usize },
    /// Of `of` combinations: the defaults and the single changes from
    /// them (`singles` in all, of the `changes` there are), and `random`
    /// more.
    Sampled {
        of: u128,
        singles: usize,
        changes: usize,
        random: usize,
    },
}

impl std::fmt::Display for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Search::Every { tried } => write!(f, "every combination: {tried} candidates"),
            Search::Sampled {
                of,
                singles,
                changes,
                random,
            } if singles - 1 < *changes => write!(
                f,
                "{of} combinations, more than --max-candidates: the defaults and {} of the {changes} changes of one param from them (a value of each param in turn)",
                singles - 1
            ),
            Search::Sampled {
                of,
                singles,
                random,
                ..
            } => write!(
                f,
                "{of} combinations, more than --max-candidates: the defaults and each value of one param with the rest at their defaults ({singles}), and {random} more drawn at random (seed {SEED:#x})"
            ),
        }
    }
}

const SEED: u64 = 0x5eed;

/// SplitMix64: a small, well-mixed generator, enough to draw candidates.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(sizes: &[usize]) -> Space {
        Space {
            axes: sizes
                .iter()
                .enumerate()
                .map(|(k, &n)| Axis {
                    name: format!("p{k}"),
                    values: (0..n).map(|v| v.to_string()).collect(),
                    default: Some(0),
                    default_text: "0".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_small_space_is_tried_whole_defaults_first() {
        let s = space(&[3, 2]);
        let (c, how) = s.candidates(10);
        assert_eq!(how, Search::Every { tried: 6 });
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], vec![None, None]);
        let mut seen = c.clone();
        seen.dedup();
        assert_eq!(seen.len(), 6, "no combination twice: {c:?}");
    }

    #[test]
    fn a_large_space_is_sampled_to_the_bound() {
        let s = space(&[10, 10, 10]);
        let (c, how) = s.candidates(40);
        assert_eq!(c.len(), 40);
        let Search::Sampled {
            of,
            singles,
            changes,
            random,
        } = how
        else {
            panic!("{how:?}")
        };
        assert_eq!((of, singles, changes, random), (1000, 28, 27, 12));
        // The same run tries the same candidates.
        assert_eq!(s.candidates(40).0, c);
    }

    #[test]
    fn single_changes_cut_short_take_each_param_in_turn() {
        let s = space(&[8, 2]);
        let (c, how) = s.candidates(4);
        // The defaults, then p0's second value, p1's, p0's third.
        assert_eq!(
            c,
            vec![
                vec![None, None],
                vec![Some(1), None],
                vec![None, Some(1)],
                vec![Some(2), None]
            ]
        );
        assert_eq!(
            how.to_string(),
            "16 combinations, more than --max-candidates: the defaults and 3 of the 8 changes of one param from them (a value of each param in turn)"
        );
    }
}

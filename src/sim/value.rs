//! What a chunk holds in the simulator: not numbers but the multiset of
//! input contributions summed into it, so that a wrong result can be told in
//! the collective's own terms ("lacks rank 6's input chunk 5").

use crate::ir::ReduceOp;
use std::collections::hash_map::{Entry, HashMap};
use std::rc::Rc;

/// One rank's input chunk as written by its user before a given execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Contribution {
    pub execution: u32,
    pub rank: u32,
    pub chunk: u32,
}

/// A sorted multiset of contributions and the reduction that combined
/// them, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    items: Items,
    reduced: Reduced,
}

/// Most cells hold one contribution (every input chunk, and every copy of
/// one): it is kept inline. A sum is a node over its operands, shared by
/// its copies: a reduction costs its operand count, not the length of the
/// list it makes (a ring's partial sums, each one longer than the last,
/// would cost the cube of the ranks as lists). Lists are made when a
/// result is checked, and where nodes nest deeper than `MAX_DEPTH` (which
/// keeps their walk and their drop shallow); a list counts how often each
/// contribution went in, so a chunk reduced into itself n times is a list
/// of its terms with counts, not of 2^n terms.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Items {
    One(Contribution),
    Many(Rc<[Counted]>),
    Sum(Rc<Node>),
}

/// A contribution and how often it went into a sum (at most `u64::MAX`:
/// a count past it is no collective's anyway).
type Counted = (Contribution, u64);

#[derive(Debug, PartialEq, Eq)]
struct Node {
    /// Nodes on the longest path down to a list or a contribution.
    depth: u32,
    operands: Vec<Contents>,
}

const MAX_DEPTH: u32 = 64;

/// The bytes of one reduction's node, besides its operands: the `Rc`'s
/// counts and the `Node` (what `budget.rs` counts per value reduced).
pub(super) const NODE_BYTES: u64 =
    (2 * std::mem::size_of::<usize>() + std::mem::size_of::<Node>()) as u64;

impl Items {
    fn depth(&self) -> u32 {
        match self {
            Items::Sum(node) => node.depth,
            _ => 0,
        }
    }

    /// The contributions, sorted, each once with its count. Linear in the
    /// distinct nodes and list entries below `self`: a node reached along
    /// several paths is walked once, its count the sum of its parents'.
    fn list(&self) -> Vec<Counted> {
        // Nodes in an order that puts every node before its operands
        // (reverse post-order of a walk that enters each node once).
        let mut post: Vec<&Node> = Vec::new();
        let mut index: HashMap<*const Node, usize> = HashMap::new();
        let mut stack: Vec<(&Node, usize)> = Vec::new();
        let root = match self {
            Items::Sum(node) => &**node,
            Items::One(c) => return vec![(*c, 1)],
            Items::Many(list) => return list.to_vec(),
        };
        stack.push((root, 0));
        index.insert(root, usize::MAX);
        while let Some((node, next)) = stack.pop() {
            match node.operands.get(next) {
                Some(operand) => {
                    stack.push((node, next + 1));
                    if let Items::Sum(child) = &operand.items {
                        if let Entry::Vacant(e) = index.entry(Rc::as_ptr(child)) {
                            e.insert(usize::MAX);
                            stack.push((child, 0));
                        }
                    }
                }
                None => {
                    index.insert(node, post.len());
                    post.push(node);
                }
            }
        }
        let mut times = vec![0u64; post.len()];
        times[post.len() - 1] = 1;
        let mut counts: Vec<Counted> = Vec::new();
        for (k, node) in post.iter().enumerate().rev() {
            let t = times[k];
            for operand in &node.operands {
                match &operand.items {
                    Items::One(c) => counts.push((*c, t)),
                    Items::Many(list) => {
                        counts.extend(list.iter().map(|&(c, n)| (c, n.saturating_mul(t))))
                    }
                    Items::Sum(child) => {
                        let i = index[&Rc::as_ptr(child)];
                        times[i] = times[i].saturating_add(t);
                    }
                }
            }
        }
        merge_counts(counts)
    }
}

/// `counts` sorted by contribution, each contribution once with the sum
/// of its counts.
fn merge_counts(mut counts: Vec<Counted>) -> Vec<Counted> {
    counts.sort_unstable_by_key(|&(c, _)| c);
    let mut merged: Vec<Counted> = Vec::with_capacity(counts.len());
    for (c, n) in counts {
        match merged.last_mut() {
            Some((last, total)) if *last == c => *total = total.saturating_add(n),
            _ => merged.push((c, n)),
        }
    }
    merged
}

/// How the contributions of a value were combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reduced {
    Not,
    With(ReduceOp),
    /// With different operations along the way: no collective's result.
    Mixed,
}

impl Contents {
    pub fn one(c: Contribution) -> Contents {
        Contents {
            items: Items::One(c),
            reduced: Reduced::Not,
        }
    }

    /// The one contribution this holds, if it holds exactly one.
    pub fn single(&self) -> Option<Contribution> {
        match &self.items {
            Items::One(c) => Some(*c),
            Items::Many(list) if list.len() == 1 && list[0].1 == 1 => Some(list[0].0),
            _ => None,
        }
    }

    /// `operands` combined with `op`: a node over them (see [`Items`]).
    /// One operand is returned as it is.
    pub fn reduce_all(mut operands: Vec<Contents>, op: ReduceOp) -> Option<Contents> {
        if operands.len() <= 1 {
            return operands.pop();
        }
        let uniform = operands
            .iter()
            .all(|v| matches!(v.reduced, Reduced::Not) || v.reduced == Reduced::With(op));
        let reduced = if uniform {
            Reduced::With(op)
        } else {
            Reduced::Mixed
        };
        let depth = 1 + operands.iter().map(|v| v.items.depth()).max().unwrap_or(0);
        let node = Items::Sum(Rc::new(Node { depth, operands }));
        let items = if depth > MAX_DEPTH {
            Items::Many(node.list().into())
        } else {
            node
        };
        Some(Contents { items, reduced })
    }

    /// `self` and `other` combined with `op`.
    #[cfg(test)]
    pub fn reduce(&self, other: &Contents, op: ReduceOp) -> Contents {
        Contents::reduce_all(vec![self.clone(), other.clone()], op).expect("two operands")
    }

    /// An identity for the multiset this holds while it is alive, shared by
    /// every copy of it (copies of a sum share it), with how it was reduced:
    /// for remembering what a check of it found. `None` for one contribution.
    pub fn shared_id(&self) -> Option<(usize, u8)> {
        let id = match &self.items {
            Items::One(_) => return None,
            Items::Many(list) => Rc::as_ptr(list) as *const Counted as usize,
            Items::Sum(node) => Rc::as_ptr(node) as usize,
        };
        let reduced = match self.reduced {
            Reduced::Not => 0,
            Reduced::With(op) => 1 + op as u8,
            Reduced::Mixed => u8::MAX,
        };
        Some((id, reduced))
    }

    /// Says how `self` differs from `want` (combined with `op` where it
    /// holds several contributions), in words, or `None` if equal. Min and
    /// max do not care how often a contribution went in; a sum does.
    pub fn difference(&self, want: &[Contribution], op: ReduceOp) -> Option<String> {
        match self.reduced {
            Reduced::Mixed => return Some("was combined with different reduce operations".into()),
            Reduced::With(used) if used != op => {
                return Some(format!(
                    "was reduced with {}, not {}",
                    used.name(),
                    op.name()
                ))
            }
            _ => {}
        }
        let mut have = self.items.list();
        if op != ReduceOp::Sum {
            for (_, n) in &mut have {
                *n = 1;
            }
        }
        // The execution whose result this is: a contribution of it goes
        // without saying, one of another execution is named as such.
        let execution = want.first().map(|c| c.execution);
        let describe = |c: &Contribution| describe(c, execution);
        let want = merge_counts(want.iter().map(|&c| (c, 1)).collect());
        if have == want {
            return None;
        }
        let count = |list: &[Counted], c: &Contribution| {
            list.binary_search_by_key(c, |&(x, _)| x)
                .map_or(0, |i| list[i].1)
        };
        let missing: Vec<&Contribution> = want
            .iter()
            .map(|(c, _)| c)
            .filter(|c| count(&have, c) == 0)
            .collect();
        if let Some(c) = missing.first() {
            let more = if missing.len() > 1 {
                format!(" (and {} more)", missing.len() - 1)
            } else {
                String::new()
            };
            return Some(format!("lacks {}{more}", describe(c)));
        }
        let extra = have.iter().find(|(c, n)| *n > count(&want, c));
        Some(match extra {
            Some((c, n)) => match count(&want, c) {
                0 => format!("has {}, which does not belong there", describe(c)),
                1 => format!("has {} more than once ({n} times)", describe(c)),
                w => format!("has {} {n} times, not {w}", describe(c)),
            },
            None => "differs".to_string(),
        })
    }
}

/// `c` in words; its execution only where it is not `checked`, the
/// execution whose result holds it.
fn describe(c: &Contribution, checked: Option<u32>) -> String {
    let chunk = format!("rank {}'s input chunk {}", c.rank, c.chunk);
    match checked {
        Some(execution) if execution == c.execution => chunk,
        _ => format!("{chunk} of execution {}", c.execution),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rank: u32, chunk: u32) -> Contribution {
        Contribution {
            execution: 1,
            rank,
            chunk,
        }
    }

    #[test]
    fn sums_merge_and_differences_read_naturally() {
        let sum = Contents::one(c(1, 0)).reduce(&Contents::one(c(0, 0)), ReduceOp::Sum);
        assert_eq!(sum.difference(&[c(0, 0), c(1, 0)], ReduceOp::Sum), None);
        assert_eq!(
            sum.difference(&[c(0, 0), c(1, 0), c(2, 0)], ReduceOp::Sum)
                .as_deref(),
            Some("lacks rank 2's input chunk 0")
        );
        let twice = sum.reduce(&Contents::one(c(1, 0)), ReduceOp::Sum);
        assert_eq!(
            twice
                .difference(&[c(0, 0), c(1, 0)], ReduceOp::Sum)
                .as_deref(),
            Some("has rank 1's input chunk 0 more than once (2 times)")
        );
    }

    #[test]
    fn only_another_executions_chunk_is_named_with_its_execution() {
        let stale = Contents::one(c(0, 0));
        let now = Contribution {
            execution: 2,
            ..c(0, 0)
        };
        let both = stale.reduce(&Contents::one(now), ReduceOp::Sum);
        assert_eq!(
            both.difference(&[now], ReduceOp::Sum).as_deref(),
            Some("has rank 0's input chunk 0 of execution 1, which does not belong there")
        );
    }

    #[test]
    fn a_chunk_reduced_into_itself_is_counted_not_listed() {
        // 200 doublings: 2^200 terms as a list; a count (saturated) here.
        let mut v = Contents::one(c(0, 0));
        for _ in 0..200 {
            v = v.reduce(&v, ReduceOp::Sum);
        }
        let said = v
            .difference(&[c(0, 0)], ReduceOp::Sum)
            .expect("a difference");
        assert!(
            said.starts_with("has rank 0's input chunk 0 more than once ("),
            "{said}"
        );
        let mut m = Contents::one(c(0, 0));
        for _ in 0..200 {
            m = m.reduce(&m, ReduceOp::Max);
        }
        assert_eq!(m.difference(&[c(0, 0)], ReduceOp::Max), None);
    }

    #[test]
    fn min_and_max_ignore_repeats_but_not_mixing() {
        let max = Contents::one(c(0, 0)).reduce(&Contents::one(c(1, 0)), ReduceOp::Max);
        let again = max.reduce(&Contents::one(c(1, 0)), ReduceOp::Max);
        assert_eq!(again.difference(&[c(0, 0), c(1, 0)], ReduceOp::Max), None);
        assert_eq!(
            again
                .difference(&[c(0, 0), c(1, 0)], ReduceOp::Sum)
                .as_deref(),
            Some("was reduced with max, not sum")
        );
        let mixed = max.reduce(&Contents::one(c(2, 0)), ReduceOp::Sum);
        assert_eq!(
            mixed
                .difference(&[c(0, 0), c(1, 0), c(2, 0)], ReduceOp::Max)
                .as_deref(),
            Some("was combined with different reduce operations")
        );
    }
}

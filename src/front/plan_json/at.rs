//! `At`: a value of the plan document and the path that leads to it, with
//! the readers that turn it into the IR's values or fail with that path.

use super::json::Json;
use super::{PlanError, Res};
use crate::ir::*;

/// A value and where it is in the document: its parent and the key or
/// index that leads from there. The path is written out only for a
/// problem (a plan has millions of values, a problem one).
#[derive(Clone, Copy)]
pub(super) struct At<'a> {
    pub(super) value: &'a Json<'a>,
    parent: Option<&'a At<'a>>,
    step: Step<'a>,
}

#[derive(Clone, Copy)]
pub(super) enum Step<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> At<'a> {
    pub(super) fn root(value: &'a Json<'a>) -> At<'a> {
        At {
            value,
            parent: None,
            step: Step::Root,
        }
    }

    /// A top-level field read apart from the document (the ranks, read as
    /// they stream by): its path, with no value of its own.
    pub(super) fn top_level(key: &'a str) -> At<'a> {
        At {
            value: &Json::Null,
            parent: None,
            step: Step::Key(key),
        }
    }

    /// `gpus[1].threadblocks[0].ops[5]`.
    pub(super) fn path(&self) -> String {
        let mut out = self.parent.map_or_else(String::new, At::path);
        match self.step {
            Step::Root => {}
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
        out
    }

    pub(super) fn fail<T>(&self, message: impl Into<String>) -> Res<T> {
        Err(PlanError {
            path: self.path(),
            message: message.into(),
        })
    }

    pub(super) fn key<'s>(&'s self, key: &'s str) -> Res<At<'s>> {
        match self.value.get(key) {
            Some(value) => Ok(self.child(value, Step::Key(key))),
            None if self.value.is_object() => self.fail(format!("missing field `{key}`")),
            None => self.fail("expected an object"),
        }
    }

    pub(super) fn opt<'s>(&'s self, key: &'s str) -> Option<At<'s>> {
        self.value
            .get(key)
            .map(|value| self.child(value, Step::Key(key)))
    }

    pub(super) fn child<'s>(&'s self, value: &'s Json<'s>, step: Step<'s>) -> At<'s> {
        At {
            value,
            parent: Some(self),
            step,
        }
    }

    pub(super) fn items(&self) -> Res<Vec<At<'_>>> {
        let Some(list) = self.value.as_array() else {
            return self.fail("expected a list");
        };
        Ok(list
            .iter()
            .enumerate()
            .map(|(i, value)| self.child(value, Step::Index(i)))
            .collect())
    }

    pub(super) fn u64(&self) -> Res<u64> {
        match self.value.as_u64() {
            Some(v) => Ok(v),
            None => self.fail(format!(
                "expected a non-negative integer, found {}",
                self.value
            )),
        }
    }

    /// An integer of either JSON form: from `i64::MIN` to `u64::MAX`, as
    /// the reference may write a message size.
    pub(super) fn wide_int(&self) -> Res<i128> {
        match (self.value.as_i64(), self.value.as_u64()) {
            (Some(v), _) => Ok(v.into()),
            (_, Some(v)) => Ok(v.into()),
            _ => self.fail(format!(
                "expected an integer between {} and {}, found {}",
                i64::MIN,
                u64::MAX,
                self.value
            )),
        }
    }

    pub(super) fn i64(&self) -> Res<i64> {
        match self.value.as_i64() {
            Some(v) => Ok(v),
            None => self.fail(format!(
                "expected an integer between {} and {}, found {}",
                i64::MIN,
                i64::MAX,
                self.value
            )),
        }
    }

    /// The value of `key` read by `read`, or `default` where it is absent.
    pub(super) fn opt_or<T>(&self, key: &str, default: T, read: impl Fn(&At) -> Res<T>) -> Res<T> {
        match self.opt(key) {
            Some(at) => read(&at),
            None => Ok(default),
        }
    }

    /// A u32 within `range` (`what` says what it counts): a value past
    /// 32 bits is said against the range too, not against `u32::MAX`.
    pub(super) fn u32_in(&self, range: std::ops::RangeInclusive<u32>, what: &str) -> Res<u32> {
        let v = self.u64()?;
        if let Some(v) = u32::try_from(v).ok().filter(|v| range.contains(v)) {
            Ok(v)
        } else {
            self.fail(format!(
                "{v} {what}; expected {} to {}",
                range.start(),
                range.end()
            ))
        }
    }

    pub(super) fn u32(&self) -> Res<u32> {
        let v = self.u64()?;
        u32::try_from(v).or_else(|_| {
            self.fail(format!(
                "{v} is too large: at most {} here (a 32-bit number)",
                u32::MAX
            ))
        })
    }

    pub(super) fn bool(&self) -> Res<bool> {
        match self.value.as_bool() {
            Some(v) => Ok(v),
            None => self.fail(format!("expected true or false, found {}", self.value)),
        }
    }

    pub(super) fn str(&self) -> Res<&'a str> {
        match self.value.as_str() {
            Some(v) => Ok(v),
            None => self.fail(format!("expected a string, found {}", self.value)),
        }
    }

    pub(super) fn u32s<C: FromIterator<u32>>(&self) -> Res<C> {
        self.items()?.iter().map(At::u32).collect()
    }

    /// A list of ids of `what`, each below `count`, the number `owner`
    /// ("the rank", "the thread block") has.
    pub(super) fn ids_below(&self, count: usize, what: &str, owner: &str) -> Res<Ids> {
        let values: Ids = self.u32s()?;
        match values.iter().find(|v| **v as usize >= count) {
            Some(bad) => self.fail(format!("{what} {bad} but {owner} has {count}")),
            None => Ok(values),
        }
    }

    /// One of `choices`, by name.
    pub(super) fn one_of<T: Copy>(&self, what: &str, choices: &[(&str, T)]) -> Res<T> {
        let s = self.str()?;
        match choices.iter().find(|(name, _)| *name == s) {
            Some((_, v)) => Ok(*v),
            None => {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                self.fail(format!(
                    "unknown {what} \"{}\" (expected one of: {})",
                    crate::diag::escaped(s),
                    names.join(", ")
                ))
            }
        }
    }
}

//! Vector clocks for the simulator's happens-before order.

use std::rc::Rc;

/// What a thread knows of every thread's finished epochs: `data` through
/// release/acquire synchronisation (writes are visible), `exec` through any
/// synchronisation, relaxed included (earlier reads are over). Shared
/// copy-on-write: signals, packets and barriers hold snapshots, and a plan
/// with thousands of thread blocks must not copy a clock per message. An
/// empty list stands for all zeros.
#[derive(Debug, Clone, PartialEq)]
pub struct Clocks {
    pub data: Rc<Vec<u32>>,
    pub exec: Rc<Vec<u32>>,
}

pub fn at(list: &[u32], i: usize) -> u32 {
    list.get(i).copied().unwrap_or(0)
}

/// Raises `into` to at least `other`, copying only if something changes.
pub fn join_shared(into: &mut Rc<Vec<u32>>, other: &Rc<Vec<u32>>, width: usize) {
    if Rc::ptr_eq(into, other) || other.iter().enumerate().all(|(i, v)| *v <= at(into, i)) {
        return;
    }
    let list = Rc::make_mut(into);
    list.resize(width.max(list.len()), 0);
    for (a, b) in list.iter_mut().zip(other.iter()) {
        *a = (*a).max(*b);
    }
}

pub fn raise(list: &mut Rc<Vec<u32>>, i: usize, value: u32, width: usize) {
    if at(list, i) >= value {
        return;
    }
    let list = Rc::make_mut(list);
    list.resize(width.max(list.len()), 0);
    list[i] = value;
}

impl Clocks {
    pub fn zero(width: usize) -> Clocks {
        Clocks {
            data: Rc::new(vec![0; width]),
            exec: Rc::new(vec![0; width]),
        }
    }

    pub fn join(&mut self, other: &Clocks) {
        let width = self.exec.len().max(other.exec.len());
        join_shared(&mut self.data, &other.data, width);
        join_shared(&mut self.exec, &other.exec, width);
    }

    /// Only the execution ordering of `self` (what a relaxed signal carries).
    pub fn relaxed(&self) -> Clocks {
        Clocks {
            data: Rc::new(Vec::new()),
            exec: self.exec.clone(),
        }
    }

    pub fn set(&mut self, thread: usize, epoch: u32) {
        let width = self.exec.len();
        raise(&mut self.data, thread, epoch, width);
        raise(&mut self.exec, thread, epoch, width);
    }
}

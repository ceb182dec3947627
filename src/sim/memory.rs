//! Every rank's buffers, cell by cell: one array of chunk x part cells per
//! rank and buffer kind, allocated when the buffer is first touched, sized
//! from the plan (twice the scratch with a double scratch buffer) and grown
//! if a reference lies past it. No hashing per access, and a cell nobody
//! touched costs only its slot.

use super::{Cell, Loc};
use crate::ir::{BufferKind, Plan};

pub(super) struct Memory {
    parts: u32,
    /// Per rank: chunks of input, output and scratch.
    sizes: Vec<[u32; 3]>,
    /// Per rank: the cells of input, output and scratch.
    buffers: Vec<[Vec<Cell>; 3]>,
}

/// A cell's slot, made by [`Memory::entry`]: `or_default` makes the
/// buffer if needed and gives the cell (as a map's entry would).
pub(super) struct CellEntry<'a> {
    memory: &'a mut Memory,
    loc: Loc,
}

impl<'a> CellEntry<'a> {
    pub fn or_default(self) -> &'a mut Cell {
        self.memory.cell_mut(self.loc)
    }
}

fn kind_index(kind: BufferKind) -> usize {
    match kind {
        BufferKind::Input => 0,
        BufferKind::Output => 1,
        BufferKind::Scratch => 2,
    }
}

impl Memory {
    pub fn new(plan: &Plan, parts: u32) -> Memory {
        let scratch_copies = if plan.options.use_double_scratch_buffer {
            2
        } else {
            1
        };
        Memory {
            parts,
            sizes: plan
                .ranks
                .iter()
                .map(|r| {
                    [
                        r.input_chunks,
                        r.output_chunks,
                        r.scratch_chunks.saturating_mul(scratch_copies),
                    ]
                })
                .collect(),
            buffers: (0..plan.ranks.len()).map(|_| Default::default()).collect(),
        }
    }

    fn slot(&self, loc: &Loc) -> (usize, usize, usize) {
        let place = loc.place;
        let index = place.chunk as usize * self.parts as usize + loc.part as usize;
        (place.rank as usize, kind_index(place.kind), index)
    }

    pub fn get(&self, loc: &Loc) -> Option<&Cell> {
        let (rank, kind, index) = self.slot(loc);
        self.buffers.get(rank)?[kind].get(index)
    }

    pub fn entry(&mut self, loc: Loc) -> CellEntry<'_> {
        CellEntry { memory: self, loc }
    }

    fn cell_mut(&mut self, loc: Loc) -> &mut Cell {
        let (rank, kind, index) = self.slot(&loc);
        if rank >= self.buffers.len() {
            self.buffers.resize_with(rank + 1, Default::default);
        }
        let cells = &mut self.buffers[rank][kind];
        if index >= cells.len() {
            let planned = self
                .sizes
                .get(rank)
                .map_or(0, |s| s[kind] as usize * self.parts as usize);
            cells.resize_with(planned.max(index + 1), Cell::default);
        }
        &mut cells[index]
    }
}

//! An arbitrary byte stream as a wheel scenario: a limit, a start tick and a sequence of
//! [`Op`]s, run against the model of `wheel_harness.rs`. Every stream decodes (missing
//! bytes read as zero), so the fuzz target `wheel_ops` and its stable replay share [`run`].
//! The cheap invariants are checked after every operation, every entry at the end.

use super::wheel_harness::{Checks, Harness, Op, When};

/// Most operations taken from one input.
const MAX_OPS: usize = 1_000;
/// Log2 of the least number of entries the wheel moves down per step: 4 instead of the
/// default 256, so that an upper slot is moved down in several chunks with a few entries.
const DRAIN_CHUNK_SHIFT: u32 = 2;
/// Most entries one input inserts: enough for several chunks of `DRAIN_CHUNK_SHIFT`, for
/// the pool to grow twice (64, 128 nodes) and for a batch of removes to fill
/// `UNLINK_BATCH` (64); few enough for the fuzzer to run tens of thousands a second.
const MAX_INSERTS: u64 = 128;
/// Shifts of the level granularities (powers of 64), the overflow range and beyond.
const SHIFTS: [u32; 10] = [6, 12, 18, 24, 30, 36, 37, 42, 48, 63];
/// How far a bulk insert spreads its deadlines.
const SPREADS: [u64; 4] = [1, 64, 4_096, 1 << 18];

/// Reads numbers off the front of the input; zero once it is used up.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn byte(&mut self) -> u8 {
        let (&first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        first
    }

    /// `n` bytes, little-endian.
    fn number(&mut self, n: usize) -> u64 {
        (0..n).fold(0, |acc, i| acc | u64::from(self.byte()) << (8 * i))
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.number(2) % bound
    }

    fn shift(&mut self) -> u32 {
        SHIFTS[usize::from(self.byte()) % SHIFTS.len()]
    }

    fn delta(&mut self) -> i64 {
        i64::from(self.byte() % 5) - 2
    }

    /// A deadline, weighted like the property tests' `deadline()`.
    fn deadline(&mut self) -> When {
        match self.byte() % 8 {
            0 => When::After(u64::from(self.byte()) % 70),
            1 => When::After(self.below(5_000)),
            2 => When::After(self.number(5) % (1 << 40)),
            3 => When::After((1u64 << self.shift()).saturating_add_signed(self.delta())),
            4 => When::Aligned {
                shift: self.shift(),
                delta: self.delta(),
            },
            5 => When::Before(self.below(1_000)),
            6 => When::At(u64::MAX - self.below(1_000)),
            _ => When::At(self.number(8)),
        }
    }

    /// An advance target, weighted like the property tests' `step()`.
    fn step(&mut self) -> When {
        match self.byte() % 6 {
            0 => When::After(0),
            1 => When::After(1 + u64::from(self.byte()) % 69),
            2 => When::After(70 + self.number(3) % 100_000),
            3 => When::Aligned {
                shift: self.shift(),
                delta: self.delta(),
            },
            4 => When::After(self.number(5) % (1 << 40)),
            _ => When::Before(1 + u64::from(self.byte()) % 99),
        }
    }

    fn pick(&mut self) -> usize {
        self.number(2) as usize
    }

    fn op(&mut self) -> Op {
        match self.byte() % 10 {
            0 | 1 => Op::Insert(self.deadline()),
            2 => Op::Bulk {
                count: 1 + self.below(300),
                base: self.deadline(),
                spread: SPREADS[usize::from(self.byte()) % SPREADS.len()],
            },
            3 => Op::Remove(self.pick()),
            4 => Op::Reset(self.pick(), self.deadline()),
            5 => Op::GetMut(self.pick()),
            6 => Op::Advance(self.step()),
            7 => Op::Expire(self.step(), self.byte() % 2 == 0),
            8 => Op::AdvanceToNext,
            _ => Op::Stale(self.pick()),
        }
    }

    fn start(&mut self) -> u64 {
        match self.byte() % 4 {
            0 => 0,
            1 => self.number(5) % (1 << 40),
            2 => self.number(8),
            _ => u64::MAX - self.number(5) % (1 << 38),
        }
    }

    fn limit(&mut self) -> Option<usize> {
        let byte = self.byte();
        (byte % 4 == 0).then_some(usize::from(byte / 4) % 40)
    }
}

/// Decodes `data` and runs it against the model; panics on any disagreement.
pub fn run(data: &[u8]) {
    let mut bytes = Bytes(data);
    let limit = bytes.limit();
    let start = bytes.start();
    let follow_next_expiry = bytes.byte() % 2 == 0;
    let mut harness = Harness::new(limit, start, Checks::AtEnd, DRAIN_CHUNK_SHIFT);
    let mut inserts_left = MAX_INSERTS;
    for _ in 0..MAX_OPS {
        if bytes.is_empty() {
            break;
        }
        let mut op = bytes.op();
        match &mut op {
            Op::Insert(_) => inserts_left = inserts_left.saturating_sub(1),
            Op::Bulk { count, .. } => {
                *count = (*count).min(inserts_left);
                inserts_left -= *count;
            }
            _ => {}
        }
        harness.run(&op);
    }
    if follow_next_expiry {
        harness.finish();
    } else {
        harness.drain();
    }
}

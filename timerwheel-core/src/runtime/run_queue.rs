//! The executor's queue of due runs not yet started, in deadline order, runs of equal
//! deadlines in the order they were queued.
//!
//! Two parts, because runs nearly always arrive in order: a list for those that arrive no
//! earlier than the last one queued (a push at the back, a pop at the front), and a heap
//! for those due before it: a periodic timer behind its schedule whose next point is past
//! already, a timer added already due. A take is the earlier of the two heads. Inserting
//! the early ones into the list instead costs a shift of the runs behind them, which under
//! a backlog of 100,000 runs took most of the tick thread's time.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use super::clock::Deadline;
use super::sync::time::Instant;
use super::TimerId;

/// A due run not yet started, its deadline, and since when it waits.
pub(crate) struct Waiting {
    pub(crate) id: TimerId,
    pub(crate) deadline: Deadline,
    pub(crate) since: Instant,
    /// The order queued, which breaks ties of deadline.
    seq: u64,
}

impl Waiting {
    fn key(&self) -> (Deadline, u64) {
        (self.deadline, self.seq)
    }
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Waiting {}

impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

#[derive(Default)]
pub(crate) struct RunQueue {
    /// Runs queued in order: each no earlier than the one before.
    in_order: VecDeque<Waiting>,
    /// Runs queued before the back of `in_order`, earliest on top.
    early: BinaryHeap<Reverse<Waiting>>,
    queued: u64,
}

impl RunQueue {
    pub(crate) fn push(&mut self, id: TimerId, deadline: Deadline, since: Instant) {
        self.queued += 1;
        let run = Waiting {
            id,
            deadline,
            since,
            seq: self.queued,
        };
        match self.in_order.back() {
            Some(last) if last.deadline > deadline => self.early.push(Reverse(run)),
            _ => self.in_order.push_back(run),
        }
    }

    /// The run to start next.
    pub(crate) fn pop(&mut self) -> Option<Waiting> {
        match (self.in_order.front(), self.early.peek()) {
            (Some(first), Some(Reverse(early))) if early < first => {
                self.early.pop().map(|Reverse(run)| run)
            }
            (Some(_), _) => self.in_order.pop_front(),
            (None, _) => self.early.pop().map(|Reverse(run)| run),
        }
    }

    /// Since when the longest waiting of the two runs next in line waits.
    pub(crate) fn oldest_since(&self) -> Option<Instant> {
        let first = self.in_order.front().map(|run| run.since);
        let early = self.early.peek().map(|Reverse(run)| run.since);
        first.into_iter().chain(early).min()
    }

    pub(crate) fn len(&self) -> usize {
        self.in_order.len() + self.early.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn clear(&mut self) {
        self.in_order.clear();
        self.early.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_leave_in_deadline_order_ties_in_the_order_queued() {
        let mut queue = RunQueue::default();
        let now = Instant::now();
        let pushes = [
            (5, 1),
            (7, 2),
            (3, 3),
            (5, 4),
            (9, 5),
            (3, 6),
            (1, 7),
            (9, 8),
        ];
        for (tick, n) in pushes {
            queue.push(TimerId::from_u64(n).unwrap(), Deadline::at_tick(tick), now);
        }
        assert_eq!(queue.len(), 8);
        let taken: Vec<_> = std::iter::from_fn(|| queue.pop())
            .map(|run| run.id.as_u64())
            .collect();
        assert_eq!(taken, [7, 3, 6, 1, 4, 2, 5, 8]);
        assert!(queue.is_empty());
    }
}

//! The order timers were added in, on a wheel that keeps it: a manual or virtual one. Their
//! deadlines are rounded up to the tick, so timers added at one instant with one delay
//! tie, and among equal deadlines they run in the order added (docs/contract.md). The
//! wheel gives no such order: a slot's timers come out of its chains in turn, each chain
//! newest first. A wheel with threads keeps none: its deadlines are exact to the
//! nanosecond, and one thread's adds, one after another, have deadlines in their order.

/// The number of each add, by the index of the timer's node (a node reused by a later add
/// takes that add's number).
#[derive(Default)]
pub(crate) struct AddOrder {
    /// `None` on a wheel that keeps no order.
    numbers: Option<Vec<u64>>,
    next: u64,
}

impl AddOrder {
    /// The order of a manual or virtual wheel.
    pub(crate) fn kept() -> Self {
        AddOrder {
            numbers: Some(Vec::new()),
            next: 0,
        }
    }

    /// Whether this wheel keeps the order.
    pub(crate) fn is_kept(&self) -> bool {
        self.numbers.is_some()
    }

    /// The timer of node `index` was added now. Out of line the numbering, which a wheel
    /// with threads, on its add's hot path, never does.
    #[inline]
    pub(crate) fn record(&mut self, index: u32) {
        if self.is_kept() {
            self.number(index);
        }
    }

    #[cold]
    #[inline(never)]
    fn number(&mut self, index: u32) {
        let numbers = self.numbers.as_mut().expect("kept");
        let index = index as usize;
        if numbers.len() <= index {
            numbers.resize(index + 1, 0);
        }
        numbers[index] = self.next;
        self.next += 1;
    }

    /// Where the timer of node `index` came among the adds; 0 on a wheel that keeps no
    /// order.
    pub(crate) fn of(&self, index: u32) -> u64 {
        self.numbers
            .as_ref()
            .and_then(|numbers| numbers.get(index as usize).copied())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_node_takes_the_number_of_its_new_add() {
        let mut order = AddOrder::kept();
        order.record(5);
        order.record(2);
        assert!(order.of(5) < order.of(2));
        order.record(5);
        assert!(order.of(5) > order.of(2));
    }

    #[test]
    fn a_wheel_that_keeps_no_order_numbers_every_add_0() {
        let mut order = AddOrder::default();
        order.record(3);
        order.record(1);
        assert_eq!((order.of(3), order.of(1)), (0, 0));
    }
}

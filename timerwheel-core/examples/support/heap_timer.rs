//! The baseline of the same shape as the runtime: a BinaryHeap with lazy deletion behind a
//! Mutex, and a thread that sleeps on a Condvar until the head's deadline and runs what is
//! due. A deleted entry stays in the heap until it reaches the head (a generation per slot
//! tells it is dead), as in java.util.Timer or ScheduledThreadPoolExecutor without purge.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub type Callback = Box<dyn FnMut() + Send>;

struct Slot {
    generation: u32,
    task: Option<Callback>,
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    stop: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

pub struct HeapTimer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// A timer of the heap baseline: slot and generation.
#[derive(Clone, Copy)]
pub struct HeapId(u32, u32);

impl HeapTimer {
    pub fn new() -> Self {
        let shared = Arc::new(Shared::default());
        let runner = Arc::clone(&shared);
        let thread = std::thread::spawn(move || run(&runner));
        HeapTimer {
            shared,
            thread: Some(thread),
        }
    }

    pub fn add(&self, delay: Duration, task: Callback) -> HeapId {
        let deadline = Instant::now() + delay;
        let mut state = self.shared.state.lock().unwrap();
        let index = state.free.pop().unwrap_or_else(|| {
            state.slots.push(Slot {
                generation: 0,
                task: None,
            });
            state.slots.len() as u32 - 1
        });
        let slot = &mut state.slots[index as usize];
        slot.task = Some(task);
        let generation = slot.generation;
        let earlier = state
            .heap
            .peek()
            .is_none_or(|Reverse(head)| deadline < head.0);
        state.heap.push(Reverse((deadline, index, generation)));
        drop(state);
        if earlier {
            self.shared.wake.notify_one();
        }
        HeapId(index, generation)
    }

    pub fn cancel(&self, id: HeapId) -> bool {
        let mut state = self.shared.state.lock().unwrap();
        let slot = &mut state.slots[id.0 as usize];
        if slot.generation != id.1 || slot.task.is_none() {
            return false;
        }
        let task = slot.task.take();
        slot.generation = slot.generation.wrapping_add(1);
        state.free.push(id.0);
        drop(state);
        drop(task);
        true
    }
}

impl Drop for HeapTimer {
    fn drop(&mut self) {
        self.shared.state.lock().unwrap().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared) {
    let mut state = shared.state.lock().unwrap();
    while !state.stop {
        let Some(&Reverse((deadline, index, generation))) = state.heap.peek() else {
            state = shared.wake.wait(state).unwrap();
            continue;
        };
        if state.slots[index as usize].generation != generation {
            state.heap.pop();
            continue;
        }
        let now = Instant::now();
        if deadline > now {
            state = shared.wake.wait_timeout(state, deadline - now).unwrap().0;
            continue;
        }
        state.heap.pop();
        let slot = &mut state.slots[index as usize];
        let task = slot.task.take();
        slot.generation = slot.generation.wrapping_add(1);
        state.free.push(index);
        drop(state);
        if let Some(mut task) = task {
            task();
        }
        state = shared.state.lock().unwrap();
    }
}

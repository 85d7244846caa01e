//! The node pool: a slab of nodes addressed by `u32` index, a free list threaded through
//! the `next` field, and a generation per node so that stale keys are recognised. The
//! [`Key`]s that name entries are made here, from a node's index and generation.
//!
//! Nodes live in one [`Region`], which grows by doubling its reservation; a freed node is
//! reused before the pool grows.

use std::fmt;
use std::sync::atomic::AtomicU8;

use super::region::{Prefault, Region};

/// "No node": the end of a list.
pub(super) const NIL: u32 = u32::MAX;

/// `Node::list` of a node on the free list.
pub(super) const FREE: u16 = u16::MAX;
/// `Node::list` of a node that is allocated but linked in no list (expired, not yet taken).
pub(super) const DETACHED: u16 = u16::MAX - 1;
/// Set in `Node::list` of a removed node that is still linked in that list; set in
/// `DETACHED` and `FREE` too, so that a clear bit means "linked in a wheel list, live".
pub(super) const RETIRED: u16 = 1 << 15;

/// `Node::shared_cancel`: the entry may not be cancelled with shared access.
pub(super) const SHUT: u8 = 0;
/// `Node::shared_cancel`: the entry may be cancelled with shared access while it is pending
/// ([`Wheel::open_to_shared_cancel`](super::Wheel::open_to_shared_cancel)).
pub(super) const OPEN: u8 = 1;
/// `Node::shared_cancel`: a shared cancel took the entry; it waits to be removed.
pub(super) const CANCELLED: u8 = 2;

/// Names an entry of a [`Wheel`](super::Wheel): a node index and the node's generation at
/// insert, so a key outlives its entry harmlessly (every call with a stale key finds nothing).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    index: u32,
    generation: u32,
}

impl Key {
    /// The key as one number: generation in the high half, index in the low. Never 0.
    pub fn to_u64(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }

    /// A key from [`to_u64`](Self::to_u64); `None` for a number no key has.
    pub fn from_u64(raw: u64) -> Option<Key> {
        let generation = (raw >> 32) as u32;
        (generation != 0).then_some(Key {
            index: raw as u32,
            generation,
        })
    }

    /// The node index: reused by later entries once this one is gone.
    pub fn index(self) -> u32 {
        self.index
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({}@{})", self.index, self.generation)
    }
}

pub(super) struct Node<T> {
    pub(super) deadline: u64,
    pub(super) next: u32,
    pub(super) prev: u32,
    pub(super) generation: u32,
    /// The list this node is linked in, or `DETACHED` / `FREE`.
    pub(super) list: u16,
    /// `SHUT`, `OPEN` or `CANCELLED`: the only field written with shared access, in the
    /// padding after `list`.
    pub(super) shared_cancel: AtomicU8,
    pub(super) value: Option<T>,
}

pub(super) struct Pool<T> {
    nodes: Region<Node<T>>,
    free_head: u32,
    live: usize,
    limit: usize,
}

/// Starts loading node `index` of nodes lying at `nodes_at`: its first and last byte, since
/// most nodes span two cache lines. The address is computed, not checked: a stale base or
/// an index no pool holds gives an address a prefetch ignores.
#[inline]
pub(super) fn prefetch_node<T>(nodes_at: usize, index: u32) {
    let size = size_of::<Node<T>>();
    let node = nodes_at.wrapping_add((index as usize).wrapping_mul(size));
    super::prefetch(std::ptr::without_provenance::<u8>(node));
    super::prefetch(std::ptr::without_provenance::<u8>(
        node.wrapping_add(size - 1),
    ));
}

impl<T> Pool<T> {
    /// A pool that holds at most `limit` live nodes (and never more than `NIL` nodes).
    pub(super) fn new(limit: usize) -> Self {
        let limit = limit.min(NIL as usize);
        Pool {
            nodes: Region::new(limit),
            free_head: NIL,
            live: 0,
            limit,
        }
    }

    /// Whether a freed node waits for reuse.
    pub(super) fn has_free(&self) -> bool {
        self.free_head != NIL
    }

    pub(super) fn live(&self) -> usize {
        self.live
    }

    /// Takes a node for `value`, detached; hands the value back when the pool is full.
    #[inline(always)]
    pub(super) fn alloc(&mut self, deadline: u64, value: T) -> Result<u32, T> {
        if self.live >= self.limit {
            return Err(value);
        }
        let index = match self.free_head {
            NIL => match self.push_new() {
                Some(index) => index,
                None => return Err(value),
            },
            index => index,
        };
        let node = &mut self.nodes[index as usize];
        self.free_head = node.next;
        node.deadline = deadline;
        node.list = DETACHED;
        *node.shared_cancel.get_mut() = SHUT;
        node.value = Some(value);
        self.live += 1;
        // Freed nodes come back in the order their entries ended, scattered over the pool:
        // the next allocation's node is loaded while this one is linked and returned.
        self.prefetch(self.free_head);
        Ok(index)
    }

    /// Starts loading node `index`, if there is one (see [`prefetch_node`]).
    #[inline]
    fn prefetch(&self, index: u32) {
        if index != NIL {
            prefetch_node::<T>(self.nodes.address(), index);
        }
    }

    /// A new node at the end of the region; `None` when the region is full.
    #[inline]
    fn push_new(&mut self) -> Option<u32> {
        let fresh = Node {
            deadline: 0,
            next: NIL,
            prev: NIL,
            generation: 1,
            list: FREE,
            shared_cancel: AtomicU8::new(SHUT),
            value: None,
        };
        self.nodes.push(fresh).ok().map(|index| index as u32)
    }

    /// Memory the last allocations ask to be faulted in ahead (see [`Prefault`]).
    pub(super) fn take_prefault(&mut self) -> Option<Prefault> {
        self.nodes.take_prefault()
    }

    /// Returns a detached node to the free list and its value to the caller.
    pub(super) fn free(&mut self, index: u32) -> T {
        debug_assert_eq!(self.nodes[index as usize].list, DETACHED);
        let value = self.retire(index);
        self.recycle(index);
        value
    }

    /// Takes the value out of a node and ends its entry: the generation moves on, so every
    /// key of the old entry is stale from now on. The node is not reused before
    /// [`recycle`](Self::recycle).
    #[inline]
    pub(super) fn retire(&mut self, index: u32) -> T {
        let node = &mut self.nodes[index as usize];
        node.generation = node.generation.wrapping_add(1).max(1);
        self.live -= 1;
        node.value.take().expect("an allocated node holds a value")
    }

    /// Puts a retired node on the free list.
    pub(super) fn recycle(&mut self, index: u32) {
        let node = &mut self.nodes[index as usize];
        node.list = FREE;
        node.next = self.free_head;
        self.free_head = index;
    }

    /// The index behind `key` if it names a live node.
    #[inline]
    pub(super) fn resolve(&self, key: Key) -> Option<u32> {
        self.live_node(key).map(|_| key.index)
    }

    /// The node behind `key` if it names a live node.
    #[inline]
    pub(super) fn live_node(&self, key: Key) -> Option<&Node<T>> {
        let node = self.nodes.get(key.index as usize)?;
        (node.generation == key.generation && node.list != FREE).then_some(node)
    }

    pub(super) fn key(&self, index: u32) -> Key {
        Key {
            index,
            generation: self.nodes[index as usize].generation,
        }
    }

    pub(super) fn node(&self, index: u32) -> &Node<T> {
        &self.nodes[index as usize]
    }

    pub(super) fn node_mut(&mut self, index: u32) -> &mut Node<T> {
        &mut self.nodes[index as usize]
    }

    /// Where the nodes lie (see [`Wheel::nodes_address`](super::Wheel::nodes_address)).
    pub(super) fn address(&self) -> usize {
        self.nodes.address()
    }

    /// Nodes ever used, live or free: every index is below it.
    pub(super) fn nodes(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// Whether node `index` (below [`nodes`](Self::nodes)) holds an entry.
    pub(super) fn is_live(&self, index: u32) -> bool {
        self.nodes[index as usize].value.is_some()
    }

    /// Indices of every live node.
    pub(super) fn live_indices(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.nodes()).filter(|&i| self.is_live(i))
    }
}

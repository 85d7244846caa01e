//! The hierarchical timing wheel as a plain data structure (skeleton; implementation follows).
#![allow(missing_docs, unused_variables)]

/// Names an entry of a [`Wheel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    index: u32,
    generation: u32,
}

impl Key {
    pub fn to_u64(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }
    pub fn from_u64(raw: u64) -> Option<Key> {
        let generation = (raw >> 32) as u32;
        (generation != 0).then_some(Key {
            index: raw as u32,
            generation,
        })
    }
    pub fn index(self) -> u32 {
        self.index
    }
}

#[derive(Debug)]
pub struct Full<T>(pub T);

pub struct Wheel<T> {
    _v: Vec<T>,
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Wheel<T> {
    pub fn new() -> Self {
        todo!()
    }
    pub fn with_limit(limit: usize) -> Self {
        todo!()
    }
    pub fn now(&self) -> u64 {
        todo!()
    }
    pub fn len(&self) -> usize {
        todo!()
    }
    pub fn is_empty(&self) -> bool {
        todo!()
    }
    pub fn insert(&mut self, deadline: u64, value: T) -> Result<Key, Full<T>> {
        todo!()
    }
    pub fn remove(&mut self, key: Key) -> Option<T> {
        todo!()
    }
    pub fn reset(&mut self, key: Key, deadline: u64) -> bool {
        todo!()
    }
    pub fn get(&self, key: Key) -> Option<&T> {
        todo!()
    }
    pub fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        todo!()
    }
    pub fn deadline(&self, key: Key) -> Option<u64> {
        todo!()
    }
    pub fn is_pending(&self, key: Key) -> bool {
        todo!()
    }
    pub fn advance(&mut self, now: u64, f: impl FnMut(Key, T)) -> usize {
        todo!()
    }
    pub fn expire(&mut self, now: u64, f: impl FnMut(Key)) -> usize {
        todo!()
    }
    pub fn next_expiry(&self) -> Option<u64> {
        todo!()
    }
    pub fn drain(&mut self, f: impl FnMut(Key, T)) -> usize {
        todo!()
    }
}

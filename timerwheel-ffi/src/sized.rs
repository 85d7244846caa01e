//! The structs a caller allocates, `tw_config` and `tw_stats`, begin with their size as the
//! caller was compiled (`size_t size`) and grow only at their end. The library reads or
//! writes no more bytes than that size says, so a program compiled against an older, smaller
//! struct keeps working with a newer library (docs/c.md, "ABI policy"). A size that ends
//! inside a field covers the fields before it only: the library reads or writes a field
//! whole or not at all.

use std::mem::offset_of;
use std::ptr::{self, NonNull};

use crate::types::{tw_config, tw_durable_stats, tw_stats, tw_status};

/// A C struct whose first field is its size in bytes.
///
/// # Safety
/// Implementors are `#[repr(C)]`, their first field is a `usize` holding the size, and
/// every field is an integer, so that any bytes make a valid value.
pub unsafe trait SizedStruct: Copy {
    /// The size of the layout that a size of 0 stands for: the struct as 0.2.0, the first
    /// version with a size field, defined it. It never changes.
    const FIRST_SIZE: usize;

    /// Where each field ends, in order (the size field's included).
    const FIELD_ENDS: &'static [usize];

    /// Stores the size field.
    fn set_size(&mut self, size: usize);
}

// SAFETY: tw_config is repr(C), starts with `size: usize`, and has only integer fields and
// a raw pointer (store_path), which any bytes make valid: it is only read as a C string by
// tw_create, under tw_create's contract.
unsafe impl SizedStruct for tw_config {
    const FIRST_SIZE: usize = offset_of!(tw_config, virtual_start_unix_ms) + size_of::<i64>();
    const FIELD_ENDS: &'static [usize] = &[
        offset_of!(tw_config, tick_us),
        offset_of!(tw_config, min_workers),
        offset_of!(tw_config, max_workers),
        offset_of!(tw_config, worker_keepalive_ms),
        offset_of!(tw_config, max_timers),
        offset_of!(tw_config, manual),
        offset_of!(tw_config, clock),
        offset_of!(tw_config, virtual_start_unix_ms),
        offset_of!(tw_config, slow_callback_us),
        offset_of!(tw_config, store_path),
        offset_of!(tw_config, durability),
        offset_of!(tw_config, store_batch),
        offset_of!(tw_config, store_delay_us),
        offset_of!(tw_config, missed_points),
        size_of::<tw_config>(),
    ];

    fn set_size(&mut self, size: usize) {
        self.size = size;
    }
}

/// Where each field of `T` ends, for a struct whose fields after the size are 8 bytes each.
pub(crate) const fn eight_byte_field_ends<T, const N: usize>() -> [usize; N] {
    assert!(N == size_of::<T>() / size_of::<u64>());
    let mut ends = [0; N];
    let mut i = 0;
    while i < N {
        ends[i] = size_of::<usize>() + i * size_of::<u64>();
        i += 1;
    }
    ends
}

// SAFETY: tw_stats is repr(C), starts with `size: usize`, and has only integer fields.
unsafe impl SizedStruct for tw_stats {
    const FIRST_SIZE: usize = offset_of!(tw_stats, callback_panics) + size_of::<u64>();
    // After the size, every field is a u64.
    const FIELD_ENDS: &'static [usize] =
        &eight_byte_field_ends::<tw_stats, { size_of::<tw_stats>() / size_of::<u64>() }>();

    fn set_size(&mut self, size: usize) {
        self.size = size;
    }
}

// SAFETY: tw_durable_stats is repr(C), starts with `size: usize`, and has only integer
// fields.
unsafe impl SizedStruct for tw_durable_stats {
    /// Its first layout, 0.2.0's, is the whole struct as it is now.
    const FIRST_SIZE: usize = offset_of!(tw_durable_stats, last_error) + size_of::<i64>();
    // After the size, every field is a u64 or an i64.
    const FIELD_ENDS: &'static [usize] = &eight_byte_field_ends::<
        tw_durable_stats,
        { size_of::<tw_durable_stats>() / size_of::<u64>() },
    >();

    fn set_size(&mut self, size: usize) {
        self.size = size;
    }
}

/// The caller's size: its size field, or `T::FIRST_SIZE` for 0. `TW_ERR_INVALID` when the
/// size could not even hold the size field.
///
/// # Safety
/// `ptr` is valid for reading the size field.
unsafe fn caller_size<T: SizedStruct>(ptr: NonNull<T>) -> Result<usize, tw_status> {
    // SAFETY: by this function's contract; the size field is the first one.
    match unsafe { ptr.cast::<usize>().read() } {
        0 => Ok(T::FIRST_SIZE),
        size if size < size_of::<usize>() => Err(tw_status::TW_ERR_INVALID),
        size => Ok(size),
    }
}

/// How many of this library's bytes a caller's `size` covers with whole fields.
fn whole_fields<T: SizedStruct>(size: usize) -> usize {
    T::FIELD_ENDS
        .iter()
        .copied()
        .take_while(|&end| end <= size)
        .last()
        .unwrap_or(0)
}

/// Reads the caller's struct over `defaults`: the fields its size covers whole replace the
/// defaults' own, the fields past them (one it ends inside included) keep their defaults. A caller's struct larger than
/// this library's is accepted only when its extra bytes are all zero (no setting this
/// library does not know is silently dropped); `TW_ERR_INVALID` otherwise.
///
/// # Safety
/// `ptr` is valid for reading as many bytes as its size field says (the layout of 0.2.0
/// when it is 0).
pub unsafe fn read_sized<T: SizedStruct>(ptr: NonNull<T>, defaults: T) -> Result<T, tw_status> {
    // SAFETY: by this function's contract.
    let size = unsafe { caller_size(ptr) }?;
    let known = whole_fields::<T>(size);
    let bytes = ptr.cast::<u8>().as_ptr();
    let ours = size.min(size_of::<T>());
    // SAFETY: the caller's struct holds `size` readable bytes (this function's contract).
    let extra = unsafe { std::slice::from_raw_parts(bytes.add(ours), size - ours) };
    if extra.iter().any(|&byte| byte != 0) {
        return Err(tw_status::TW_ERR_INVALID);
    }
    let mut value = defaults;
    // SAFETY: `known` bytes are readable from the caller's struct and writable in `value`,
    // which is a distinct local; any bytes make a valid `T` (the trait's contract).
    unsafe { ptr::copy_nonoverlapping(bytes, ptr::from_mut(&mut value).cast::<u8>(), known) };
    value.set_size(size_of::<T>());
    Ok(value)
}

/// Writes `value` into the caller's struct, the fields that fit whole in its size field
/// (the layout of 0.2.0 when it is 0), and stores there how many bytes were written.
///
/// # Safety
/// `ptr` is valid for reading the size field and for writing as many bytes as it says.
pub unsafe fn write_sized<T: SizedStruct>(ptr: NonNull<T>, mut value: T) -> Result<(), tw_status> {
    // SAFETY: by this function's contract.
    let written = whole_fields::<T>(unsafe { caller_size(ptr) }?);
    value.set_size(written);
    // SAFETY: `written` bytes are writable in the caller's struct (this function's
    // contract) and readable from `value`, a distinct local.
    unsafe {
        ptr::copy_nonoverlapping(
            ptr::from_ref(&value).cast::<u8>(),
            ptr.cast::<u8>().as_ptr(),
            written,
        )
    };
    Ok(())
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;

    /// The layouts of 0.2.0: fields are only ever added after these, none moves.
    #[test]
    fn layouts_of_0_2_0_stay() {
        let config = [
            offset_of!(tw_config, size),
            offset_of!(tw_config, tick_us),
            offset_of!(tw_config, min_workers),
            offset_of!(tw_config, max_workers),
            offset_of!(tw_config, worker_keepalive_ms),
            offset_of!(tw_config, max_timers),
            offset_of!(tw_config, manual),
            offset_of!(tw_config, clock),
            offset_of!(tw_config, virtual_start_unix_ms),
        ];
        assert_eq!(config, [0, 8, 16, 20, 24, 32, 40, 44, 48]);
        assert_eq!(tw_config::FIRST_SIZE, 56);
        assert_eq!(
            offset_of!(tw_config, slow_callback_us),
            56,
            "no padding before 0.3's field"
        );
        assert_eq!(offset_of!(tw_stats, pending), 8);
        assert_eq!(offset_of!(tw_stats, late_max_us), 112);
        assert_eq!(tw_stats::FIRST_SIZE, 128);
        assert_eq!(offset_of!(tw_durable_stats, last_seq), 8);
        assert_eq!(offset_of!(tw_durable_stats, last_error), 80);
        assert_eq!(tw_durable_stats::FIRST_SIZE, size_of::<tw_durable_stats>());
        #[cfg(feature = "fleet")]
        {
            use crate::fleet::tw_fleet_settings;
            assert_eq!(offset_of!(tw_fleet_settings, buffer), 48);
            assert_eq!(tw_fleet_settings::FIRST_SIZE, 56);
            assert_eq!(offset_of!(tw_fleet_settings, missed_points), 56);
        }
    }

    #[test]
    fn a_size_inside_a_field_covers_the_fields_before_it() {
        assert_eq!(whole_fields::<tw_config>(12), 8, "half of tick_us");
        assert_eq!(whole_fields::<tw_config>(20), 20);
        assert_eq!(whole_fields::<tw_config>(52), 48);
        assert_eq!(whole_fields::<tw_config>(56), 56, "0.2.0's last field");
        assert_eq!(whole_fields::<tw_config>(tw_config::FIRST_SIZE), 56);
        assert_eq!(whole_fields::<tw_config>(1000), size_of::<tw_config>());
        assert_eq!(whole_fields::<tw_stats>(20), 16);
        assert_eq!(whole_fields::<tw_stats>(1000), size_of::<tw_stats>());
    }
}

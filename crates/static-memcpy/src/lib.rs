//! `memcpy` and `memmove` for the static musl build of the operator (the image's binary).
//!
//! musl's x86_64 `memcpy` copies with `rep movsq` and finishes with a byte-at-a-time loop. Both cost
//! tens of cycles to start whatever the size, and a Rust program makes many small copies (futures
//! moved into tasks, buffers, strings): in the convergence bench, musl's `memcpy` took 15.7% of the
//! operator's CPU (BENCHMARKS.md). glibc chooses vector copies at run time; the static musl build
//! has no such choice. No maintained crate replaces the C library's copies for a whole program, so
//! these are written here, as plainly as possible: sizes up to 32 bytes with at most four loads and
//! four stores, larger ones in 16-byte chunks (SSE2, which every x86_64 has).
//!
//! The symbols are exported only in a musl build for x86_64; other builds keep their C library's.
//! The static linker then takes them from here and leaves musl's `memcpy.o` and `memmove.o` out (it
//! needs both gone: musl's `memmove` calls into its `memcpy`).
//!
//! `no_builtins`: without it LLVM would recognise the chunk loops below as a copy and call `memcpy`,
//! which here is themselves.

#![no_builtins]
#![cfg_attr(not(test), no_std)]

use core::ptr;

/// Reads a `T` from `p`, whatever its alignment.
///
/// # Safety
/// `p` must be valid for reading `size_of::<T>()` bytes.
#[inline(always)]
unsafe fn load<T>(p: *const u8) -> T {
    unsafe { ptr::read_unaligned(p.cast::<T>()) }
}

/// Writes `value` to `p`, whatever its alignment.
///
/// # Safety
/// `p` must be valid for writing `size_of::<T>()` bytes.
#[inline(always)]
unsafe fn store<T>(p: *mut u8, value: T) {
    unsafe { ptr::write_unaligned(p.cast::<T>(), value) }
}

/// The size of the chunks larger copies move.
const CHUNK: usize = 16;

/// Copies `n` bytes, `size_of::<T>() <= n <= 2 * size_of::<T>()`, with one `T` from the start and
/// one ending at the end, both loaded before either is stored.
///
/// # Safety
/// `src` valid for reading and `dest` for writing `n` bytes.
#[inline(always)]
unsafe fn copy_ends<T>(dest: *mut u8, src: *const u8, n: usize) {
    let width = core::mem::size_of::<T>();
    unsafe {
        let (head, tail): (T, T) = (load(src), load(src.add(n - width)));
        store(dest, head);
        store(dest.add(n - width), tail);
    }
}

/// Copies `n <= 32` bytes. Every load comes before any store, so the ranges may overlap.
///
/// # Safety
/// `src` valid for reading and `dest` for writing `n` bytes.
#[inline(always)]
unsafe fn copy_small(dest: *mut u8, src: *const u8, n: usize) {
    unsafe {
        // Two loads of a width cover every size from that width to twice it: the first from the
        // start, the second ending at the end (they overlap in the middle).
        if n >= 16 {
            copy_ends::<u128>(dest, src, n);
        } else if n >= 8 {
            copy_ends::<u64>(dest, src, n);
        } else if n >= 4 {
            copy_ends::<u32>(dest, src, n);
        } else if n >= 2 {
            copy_ends::<u16>(dest, src, n);
        } else if n == 1 {
            store(dest, load::<u8>(src));
        }
    }
}

/// Copies `n > 32` bytes from the start to the end. Also right when `dest` is below an overlapping
/// `src`: each chunk is loaded before the stores reach it, and the last chunk, which the others'
/// stores may reach, is loaded first.
///
/// # Safety
/// `src` valid for reading and `dest` for writing `n` bytes; `n > 32`.
#[inline(always)]
unsafe fn copy_forward(dest: *mut u8, src: *const u8, n: usize) {
    unsafe {
        let last: u128 = load(src.add(n - CHUNK));
        let mut i = 0;
        while i < n - CHUNK {
            store(dest.add(i), load::<u128>(src.add(i)));
            i += CHUNK;
        }
        store(dest.add(n - CHUNK), last);
    }
}

/// Copies `n > 32` bytes from the end to the start: right when `dest` is above an overlapping `src`
/// (the first chunk loaded before the others' stores can reach it).
///
/// # Safety
/// `src` valid for reading and `dest` for writing `n` bytes; `n > 32`.
#[inline(always)]
unsafe fn copy_backward(dest: *mut u8, src: *const u8, n: usize) {
    unsafe {
        let first: u128 = load(src);
        let mut i = n;
        while i > CHUNK {
            i -= CHUNK;
            store(dest.add(i), load::<u128>(src.add(i)));
        }
        store(dest, first);
    }
}

/// `memcpy`: `n` bytes from `src` to `dest`, which do not overlap. Public so that every build (and
/// its tests) compiles what the musl build exports.
///
/// # Safety
/// As C's `memcpy`.
#[inline(always)]
pub unsafe fn copy(dest: *mut u8, src: *const u8, n: usize) {
    unsafe {
        if n <= 2 * CHUNK {
            copy_small(dest, src, n);
        } else {
            copy_forward(dest, src, n);
        }
    }
}

/// `memmove`: `n` bytes from `src` to `dest`, which may overlap.
///
/// # Safety
/// As C's `memmove`.
#[inline(always)]
pub unsafe fn move_bytes(dest: *mut u8, src: *const u8, n: usize) {
    unsafe {
        if n <= 2 * CHUNK {
            copy_small(dest, src, n);
        } else if (dest as usize) <= (src as usize) || (dest as usize) >= (src as usize) + n {
            copy_forward(dest, src, n);
        } else {
            copy_backward(dest, src, n);
        }
    }
}

/// # Safety
/// As C's `memcpy`.
#[cfg(all(target_env = "musl", target_arch = "x86_64", not(test)))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    unsafe { copy(dest, src, n) };
    dest
}

/// # Safety
/// As C's `memmove`.
#[cfg(all(target_env = "musl", target_arch = "x86_64", not(test)))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    unsafe { move_bytes(dest, src, n) };
    dest
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size up to a few chunks past the small copies, at every alignment of either side.
    const SIZES: std::ops::RangeInclusive<usize> = 0..=100;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn copies_every_size_at_every_alignment_and_nothing_beside() {
        for n in SIZES.chain([255, 256, 257, 4096, 9133]) {
            for src_offset in 0..16 {
                for dest_offset in 0..16 {
                    let src = pattern(n + 32);
                    let mut dest = vec![0xAAu8; n + 32];
                    unsafe {
                        copy(
                            dest.as_mut_ptr().add(dest_offset),
                            src.as_ptr().add(src_offset),
                            n,
                        )
                    };
                    let mut expected = vec![0xAAu8; n + 32];
                    expected[dest_offset..dest_offset + n].copy_from_slice(&src[src_offset..src_offset + n]);
                    assert_eq!(dest, expected, "n {n}, src +{src_offset}, dest +{dest_offset}");
                }
            }
        }
    }

    #[test]
    fn moves_overlapping_ranges_either_way_as_if_through_a_buffer() {
        for n in SIZES.chain([255, 256, 257, 4096]) {
            for distance in [1usize, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 48, 64] {
                let len = n + distance + 1;
                for (from, to) in [(0, distance), (distance, 0)] {
                    let mut buffer = pattern(len);
                    let mut expected = buffer.clone();
                    expected.copy_within(from..from + n, to);
                    unsafe {
                        let base = buffer.as_mut_ptr();
                        move_bytes(base.add(to), base.add(from), n);
                    }
                    assert_eq!(buffer, expected, "n {n}, from {from} to {to}");
                }
            }
        }
    }

    #[test]
    fn moves_a_range_onto_itself_unchanged() {
        for n in SIZES {
            let mut buffer = pattern(n);
            let expected = buffer.clone();
            unsafe {
                let base = buffer.as_mut_ptr();
                move_bytes(base, base, n);
            }
            assert_eq!(buffer, expected, "n {n}");
        }
    }
}

//! The global allocator of every fuzz target: the system allocator, plus a ceiling on
//! the size of any one allocation while a check decodes untrusted bytes.
//!
//! zerorx's decoders promise never to allocate by a length the input declares before
//! the bytes it covers have arrived. Every decoded element takes at least one input
//! byte, so anything honest allocates at most a small multiple of the input length; a
//! capacity taken from a declared count (up to 2^31) blows through the ceiling at once.
//! libFuzzer's own `-malloc_limit_mb` needs a sanitizer's malloc hooks, which a build
//! without AddressSanitizer lacks; this check works in every build.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of allocation one input byte may justify: a `(Value, Value)` map entry is 80
/// bytes and a `Vec` may hold up to twice what it uses.
pub const BYTES_PER_INPUT_BYTE: usize = 256;
/// Allocation any input may make regardless of its length (small `Vec`s' first
/// growth steps, error values).
pub const SLACK: usize = 16 * 1024;

static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The system allocator with a per-allocation ceiling.
pub struct Guard;

impl Guard {
    fn allowed(size: usize) -> bool {
        let limit = LIMIT.load(Ordering::Relaxed);
        if size <= limit {
            return true;
        }
        // The ceiling is lifted so the abort that follows can allocate for its
        // backtrace, which shows where the allocation came from. The message is
        // built without allocating (a stack buffer, unbuffered stderr). The null
        // return makes the standard library abort, which libFuzzer records as a
        // crash with the input that caused it.
        LIMIT.store(usize::MAX, Ordering::Relaxed);
        let mut msg = Line::default();
        msg.push(b"\nzerorx-fuzz: allocation of ");
        msg.number(size);
        msg.push(b" bytes above the ceiling of ");
        msg.number(limit);
        msg.push(b" for this input (sized by an untrusted length?)\n");
        let _ = std::io::stderr().write_all(msg.as_bytes());
        false
    }
}

/// A message built on the stack: the allocator cannot allocate to report itself.
struct Line {
    buf: [u8; 160],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            buf: [0; 160],
            len: 0,
        }
    }
}

impl Line {
    fn push(&mut self, s: &[u8]) {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s[..n]);
        self.len += n;
    }

    fn number(&mut self, mut v: usize) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the
// `GlobalAlloc` contract; refusing an allocation by returning null is allowed.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Guard::allowed(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's `layout` obligations pass straight through.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Guard::allowed(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this `layout` (every allocation here
        // is made by `System`).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !Guard::allowed(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Guard = Guard;

/// The ceiling for decoding an input of `input_len` bytes.
pub fn ceiling(input_len: usize) -> usize {
    input_len
        .saturating_mul(BYTES_PER_INPUT_BYTE)
        .saturating_add(SLACK)
}

/// Runs `f` with every single allocation limited to [`ceiling`]`(input_len)` bytes.
/// The targets are single-threaded, so a global setting is enough.
pub fn bounded<T>(input_len: usize, f: impl FnOnce() -> T) -> T {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            LIMIT.store(self.0, Ordering::Relaxed);
        }
    }
    let _restore = Restore(LIMIT.swap(ceiling(input_len), Ordering::Relaxed));
    f()
}

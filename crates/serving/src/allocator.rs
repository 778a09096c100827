//! jemalloc, the allocator of both binaries, and the options they run it with. A binary names its
//! allocator itself (`#[global_allocator]` must be a static of the program, and which allocator a
//! program runs is the program's choice):
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: serving::allocator::Jemalloc = serving::allocator::Jemalloc;
//! ```
//!
//! The options are an exported symbol that jemalloc reads before `main`, defined here once. A symbol
//! exported by a library reaches the program: rustc's linker step references every exported symbol of
//! the libraries it links, so the definition is kept and takes precedence over jemalloc's own weak
//! one. The price is that every program linking this module gets the options; hence the `jemalloc`
//! feature, which only the binaries' packages turn on.
//!
//! Why jemalloc rather than glibc's malloc: in the API server, writes slowed as its heap grew under
//! glibc (malloc's own time rose from 7% to 17% of the CPU over three rounds of 10,000 resources and
//! their Events) and did not under jemalloc; in the operator, glibc kept about 9 MB freed but resident
//! after a burst of 10,000 reconciles, fragments `malloc_trim` could not return, where jemalloc settled
//! 5 MiB lower (`cargo bench -p operator --bench convergence`, BENCHMARKS.md).

pub use tikv_jemallocator::Jemalloc;

/// jemalloc's options: a background thread returns pages unused for a second (jemalloc's default
/// waits ten), so the RSS follows the live heap soon after a burst of lists, writes or reconciles.
#[allow(
    unsafe_code,
    reason = "jemalloc reads its options from this exported symbol before main; there is no safe setter"
)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static OPTIONS: Option<&'static std::ffi::c_char> =
    // SAFETY: a C string literal is valid, NUL-terminated and lives for the whole program.
    Some(unsafe { &*c"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0".as_ptr() });

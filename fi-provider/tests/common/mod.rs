//! Finding the provider library the tests load, and pointing libfabric at it.

use std::path::PathBuf;
use std::sync::{Once, OnceLock};

/// A directory holding `libzerorx-fi.so` (a link to the library cargo built beside
/// this test), for `FI_PROVIDER_PATH`. Made once per test process (tests run in
/// parallel threads).
pub fn provider_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(make_provider_dir).clone()
}

fn make_provider_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // `cargo test` builds the library beside the test binary (target/<profile>/deps):
    // that copy is the one this test run compiled.
    let deps = exe
        .parent()
        .expect("the test binary lives in target/<profile>/deps");
    let lib = deps.join("libzerorx_fi.so");
    assert!(
        lib.is_file(),
        "{} is missing: `cargo test -p zerorx-fi` builds it",
        lib.display()
    );
    let dir = deps.join("fi-provider-test");
    std::fs::create_dir_all(&dir).expect("creating the provider directory");
    let link = dir.join("libzerorx-fi.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&lib, &link).expect("linking libzerorx-fi.so");
    dir
}

/// Sets `FI_PROVIDER_PATH` for this process, once, before libfabric initialises.
#[allow(dead_code)]
pub fn load_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let dir = provider_dir();
        std::env::set_var("FI_PROVIDER_PATH", &dir);
    });
}

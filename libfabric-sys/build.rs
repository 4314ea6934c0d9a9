//! Generates the libfabric bindings from the headers installed on this machine.
//!
//! Most of libfabric's data path (`fi_send`, `fi_tsend`, `fi_read`, `fi_cq_read`, `fi_mr_reg`,
//! `fi_close`, ...) is `static inline` in the headers and dispatches through ops tables, so the
//! shared library exports no symbol for it. bindgen's `wrap_static_fns` emits one C wrapper per
//! such function; that file is compiled here with `cc`, so no hand-written shim has to track the
//! header version.

use std::env;
use std::path::{Path, PathBuf};
use std::process;

use bindgen::callbacks::{IntKind, ParseCallbacks};

/// What to do when something this build needs is missing.
const INSTALL_HINT: &str =
    "install the libfabric headers and libclang: `apt-get install libfabric-dev libclang-dev` \
     (`scripts/test` does this on a fresh machine)";

/// Oldest libfabric the bindings were checked against (Debian 12 ships 1.17.0).
const MIN_VERSION: &str = "1.17";

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());

    let lib = pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .probe("libfabric")
        .unwrap_or_else(|e| {
            fail(&format!(
                "libfabric >= {MIN_VERSION} not found; {INSTALL_HINT}\npkg-config said: {e}"
            ))
        });

    let mut include_dirs = lib.include_paths.clone();
    include_dirs.extend(["/usr/include", "/usr/local/include"].map(PathBuf::from));
    if !include_dirs
        .iter()
        .any(|d| d.join("rdma/fi_tagged.h").is_file())
    {
        fail(&format!(
            "libfabric headers (rdma/fi_tagged.h) not found in {include_dirs:?}; {INSTALL_HINT}"
        ));
    }

    let wrappers = out.join("fi_static_wrappers");
    let header = manifest.join("wrapper.h");
    let mut builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .allowlist_function("fi_.*")
        .allowlist_type("fi_.*|fid_.*")
        .allowlist_var("FI_.*")
        .prepend_enum_name(false)
        .derive_default(true)
        .parse_callbacks(Box::new(FlagWidth))
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrappers);
    for dir in &lib.include_paths {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }

    // bindgen panics (rather than returning an error) when it cannot load libclang.
    let generated =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || builder.generate()));
    let bindings = match generated {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => fail(&format!(
            "bindgen failed on the libfabric headers: {e}; {INSTALL_HINT}"
        )),
        Err(_) => fail(&format!(
            "bindgen could not run (is libclang installed?); {INSTALL_HINT}"
        )),
    };
    bindings
        .write_to_file(out.join("bindings.rs"))
        .unwrap_or_else(|e| fail(&format!("writing bindings.rs into {}: {e}", out.display())));

    compile_wrappers(&wrappers.with_extension("c"), &manifest, &lib.include_paths);
    // pkg-config already emitted `cargo:rustc-link-lib=fabric` and its search paths.
}

/// Builds the C file holding one `fi_*__extern` wrapper per static inline function.
fn compile_wrappers(source: &Path, manifest: &Path, includes: &[PathBuf]) {
    let mut build = cc::Build::new();
    build.file(source).include(manifest).warnings(false);
    for dir in includes {
        build.include(dir);
    }
    build.compile("zerorx_fi_static_wrappers");
}

/// libfabric's flag macros are 64-bit (`1ULL << n`) but small values come out as `u32` by
/// default, so every `FI_*` constant is widened to `u64` except the error codes of
/// `fi_errno.h`, which are C `int`s compared against negated return values.
#[derive(Debug)]
struct FlagWidth;

impl ParseCallbacks for FlagWidth {
    fn int_macro(&self, name: &str, value: i64) -> Option<IntKind> {
        if is_errno_name(name, value) {
            Some(IntKind::Int)
        } else if name.starts_with("FI_") {
            Some(IntKind::U64)
        } else {
            None
        }
    }
}

/// `FI_E*` codes are errno values or `FI_ERRNO_OFFSET` (256) plus a small number.
fn is_errno_name(name: &str, value: i64) -> bool {
    (name.starts_with("FI_E") && (0..512).contains(&value) && !name.starts_with("FI_EP_"))
        || name == "FI_ERRNO_OFFSET"
}

/// Stops the build; the first line (the one cargo shows as a warning) says what to install.
fn fail(message: &str) -> ! {
    eprintln!("error: zerorx-libfabric-sys: {message}");
    let headline = message.lines().next().unwrap_or(message);
    println!("cargo:warning=zerorx-libfabric-sys: {headline}");
    process::exit(1);
}

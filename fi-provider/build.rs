//! Links the provider library so libfabric's `dlclose` (at `fi_fini`) never unmaps it:
//! a domain's worker thread or a thread-local destructor of Rust code may still be
//! running then, and unmapping code under them would crash the process at exit.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    println!("cargo:rerun-if-changed=build.rs");
}

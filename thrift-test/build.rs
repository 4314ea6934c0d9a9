//! ThriftTest (the cross-language test's service), the codegen tests' IDLs and the
//! store and app examples', generated the way a user's build script does it.

fn main() {
    for (idl, out) in [
        ("idl/ThriftTest.thrift", "thrift_test.rs"),
        ("idl/coverage.thrift", "coverage.rs"),
        ("idl/store.thrift", "store.rs"),
        ("idl/names.thrift", "names.rs"),
        ("idl/app.thrift", "app.rs"),
    ] {
        if let Err(e) = zerorx_thrift_build::Builder::new()
            .file(idl)
            .out_file(out)
            .compile()
        {
            eprintln!("{idl}: {e}");
            std::process::exit(1);
        }
    }
}

// volo's own code generator (pilota-build through volo-build), from bench.thrift.
fn main() {
    volo_build::Builder::thrift()
        .add_service("bench.thrift")
        .filename(std::path::PathBuf::from("bench_gen.rs"))
        .write()
        .expect("volo code generation from bench.thrift");
}

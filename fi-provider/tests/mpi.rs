//! Open MPI over the provider: `tests/mpi/check.c` (point-to-point with
//! `MPI_ANY_SOURCE`/`MPI_ANY_TAG`, messages from 0 B to 16 MiB, `MPI_Ssend`, tag
//! selection from unexpected messages, all-pairs traffic, `MPI_Allreduce`,
//! `MPI_Iprobe`/`MPI_Improbe`/`MPI_Mrecv`, `MPI_ERR_TRUNCATE`, `MPI_Barrier`, every
//! byte checked) on 4 ranks with `--mca pml cm --mca mtl ofi
//! --mca mtl_ofi_provider_include zerorx`.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn need(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "{tool} is not installed: `apt-get install {package}` (scripts/test does)"
    );
}

/// Open MPI asks for `FI_THREAD_DOMAIN`, so by default each rank's domain is
/// progressed by the rank's own thread inside its calls.
#[test]
fn open_mpi_programs_run_over_the_provider_with_every_byte_checked() {
    run_check(None, "progressed by the calling thread");
}

/// The same programs with a worker thread per domain (`FI_ZERORX_PROGRESS=thread`).
#[test]
fn open_mpi_programs_run_over_worker_thread_domains_too() {
    run_check(Some("thread"), "progressed by a worker thread");
}

/// Builds and runs tests/mpi/check.c on 4 ranks over zerorx, with
/// `FI_ZERORX_PROGRESS` set to `progress` (if any); every rank's log must say its
/// domain is `progressed`.
fn run_check(progress: Option<&str>, progressed: &str) {
    need("mpicc", "libopenmpi-dev");
    need("mpirun", "openmpi-bin");
    let dir = common::provider_dir();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mpi/check.c");
    let bin = dir.join(format!("mpi-check-{}", progress.unwrap_or("default")));
    let cc = Command::new("mpicc")
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .expect("running mpicc");
    assert!(
        cc.status.success(),
        "mpicc failed:\n{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out_path = bin.with_extension("stdout");
    let err_path = bin.with_extension("stderr");
    let mut child = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .args(["--mca", "pml", "cm", "--mca", "mtl", "ofi"])
        .args(["--mca", "mtl_ofi_provider_include", "zerorx"])
        // Point-to-point and collectives go through the MTL; no BTL may carry them.
        .args(["--mca", "btl", "self", "--mca", "mtl_base_verbose", "100"])
        .args([
            "-x",
            "FI_PROVIDER_PATH",
            "-x",
            "FI_LOG_LEVEL",
            "-x",
            "FI_LOG_PROV",
        ])
        .args(["-x", "FI_ZERORX_PROGRESS"])
        .arg(&bin)
        .env("FI_PROVIDER_PATH", &dir)
        // Info from zerorx only: its warnings and how each domain is progressed.
        .env("FI_LOG_LEVEL", "info")
        .env("FI_LOG_PROV", "zerorx")
        .env("FI_ZERORX_PROGRESS", progress.unwrap_or(""))
        // Files, not pipes: nobody reads a pipe until mpirun ends, and the info log
        // would fill one and stall it.
        .stdout(Stdio::from(
            std::fs::File::create(&out_path).expect("stdout file"),
        ))
        .stderr(Stdio::from(
            std::fs::File::create(&err_path).expect("stderr file"),
        ))
        .spawn()
        .expect("running mpirun");
    let start = Instant::now();
    let limit = Duration::from_secs(300);
    while child.try_wait().expect("waiting for mpirun").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().expect("mpirun's status");
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let text = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        start.elapsed() <= limit,
        "the MPI check did not finish in {limit:?}\n{text}"
    );
    assert!(status.success(), "the MPI check failed\n{text}");
    assert!(
        stdout.contains("all checks passed on 4 ranks"),
        "no success line\n{text}"
    );
    let chose = format!("{stdout}{stderr}")
        .lines()
        .filter(|l| l.contains("mtl:ofi:provider: zerorx"))
        .count();
    assert_eq!(chose, 4, "every rank's MTL must have picked zerorx\n{text}");
    let domains = stderr
        .lines()
        .filter(|l| l.contains("fi_domain: ") && l.contains(progressed))
        .count();
    assert_eq!(
        domains, 4,
        "every rank's domain must be {progressed}\n{text}"
    );
}

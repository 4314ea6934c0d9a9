//! The CI gate on counts: a committed file holds zerorx's allocations and
//! instructions per request for each counted workload; a run fails when allocations
//! rise at all or instructions rise more than [`INSTRUCTION_SLACK`] above it. These are
//! counts, not timings: the commit that lowers them updates the file
//! (`--count-write-baseline`).

use super::Counts;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// How far instructions per request may rise above the baseline (the counts repeat
/// within about 1 %; the rest is room for a different compiler or glibc).
pub const INSTRUCTION_SLACK: f64 = 0.05;

/// Allocations per request may differ from the baseline by this much before it counts
/// as a rise: 1 allocation in 100,000 requests is start-up noise, not the path.
const ALLOC_EPSILON: f64 = 0.01;

/// One workload's figures.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// Heap allocations per request.
    pub allocs_per_request: f64,
    /// User-space instructions per request (median of the repeats).
    pub instructions_per_request: f64,
}

/// The baseline file: workload name → zerorx's figures.
pub type Baseline = BTreeMap<String, Entry>;

fn load(path: &Path) -> Result<Baseline, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Baseline::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn entry(c: &Counts) -> Entry {
    Entry {
        allocs_per_request: (c.allocs * 100.0).round() / 100.0,
        instructions_per_request: c.instructions_median().round(),
    }
}

/// Compares `counts` (zerorx's, for `workload`) with the baseline in `path`. Ok with
/// a line saying how they compare; Err naming what rose, both figures printed.
pub fn check(path: &Path, workload: &str, counts: &Counts) -> Result<String, String> {
    let base = load(path)?;
    let Some(b) = base.get(workload) else {
        return Err(format!(
            "{} has no baseline for {workload}: run with --count-write-baseline {0}",
            path.display()
        ));
    };
    let now = entry(counts);
    let limit = b.instructions_per_request * (1.0 + INSTRUCTION_SLACK);
    let mut rose = Vec::new();
    if now.allocs_per_request > b.allocs_per_request + ALLOC_EPSILON {
        rose.push(format!(
            "allocations per request rose: {:.2} now, {:.2} in the baseline",
            now.allocs_per_request, b.allocs_per_request
        ));
    }
    if now.instructions_per_request > limit {
        rose.push(format!(
            "instructions per request rose more than {:.0} %: {:.0} now, {:.0} in the baseline (limit {limit:.0})",
            INSTRUCTION_SLACK * 100.0,
            now.instructions_per_request,
            b.instructions_per_request
        ));
    }
    let summary = format!(
        "{workload} {}: {:.2} allocations and {:.0} instructions per request; baseline {:.2} and {:.0} ({})",
        counts.server,
        now.allocs_per_request,
        now.instructions_per_request,
        b.allocs_per_request,
        b.instructions_per_request,
        path.display()
    );
    if rose.is_empty() {
        Ok(summary)
    } else {
        Err(format!(
            "{summary}\n{}\n(a change that earns a higher count updates the baseline with --count-write-baseline)",
            rose.join("\n")
        ))
    }
}

/// Writes `counts` as `workload`'s baseline into `path`, keeping other workloads'.
pub fn write(path: &Path, workload: &str, counts: &Counts) -> Result<(), String> {
    let mut base = load(path)?;
    base.insert(workload.to_owned(), entry(counts));
    let text = serde_json::to_string_pretty(&base).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(instr: f64, allocs: f64) -> Counts {
        Counts {
            server: "zerorx".into(),
            instructions: vec![instr],
            allocs,
            alloc_bytes: 0.0,
            syscalls: None,
            top: Vec::new(),
        }
    }

    #[test]
    fn the_gate_passes_within_the_slack_and_fails_on_any_allocation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("base.json");
        let missing = check(&path, "W2", &counts(1000.0, 0.0)).unwrap_err();
        assert!(missing.contains("no baseline for W2"), "{missing}");
        write(&path, "W2", &counts(1000.0, 0.0)).expect("write");
        write(&path, "RPC-64B", &counts(3000.0, 1.0)).expect("write another");
        check(&path, "W2", &counts(1049.0, 0.0)).expect("4.9 % is within the slack");
        check(&path, "W2", &counts(700.0, 0.0)).expect("lower passes");
        let more = check(&path, "W2", &counts(1051.0, 0.0)).unwrap_err();
        assert!(more.contains("rose more than 5 %"), "{more}");
        let alloc = check(&path, "W2", &counts(900.0, 0.05)).unwrap_err();
        assert!(alloc.contains("allocations per request rose"), "{alloc}");
        check(&path, "RPC-64B", &counts(3000.0, 1.0)).expect("the other entry kept");
    }
}

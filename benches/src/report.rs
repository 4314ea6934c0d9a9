//! Turning cells into medians, ratios and goal verdicts: the tables printed at the end
//! of a run and the JSON written with `--json`.

use crate::procfs::MachineSplit;
use crate::servers::ServerKind;
use crate::workloads::{Metric, Unit, Workload};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One server × workload × round measurement.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Round number, from 1.
    pub round: usize,
    /// Position of this server within the round's rotated order, from 0.
    pub order: usize,
    /// Workload id.
    pub workload: String,
    /// Server name.
    pub server: String,
    /// Metric key → value (empty when the cell failed).
    pub metrics: BTreeMap<String, f64>,
    /// Machine busy % (all CPUs) just before the cell, i.e. other tenants' load.
    pub background_busy_pct: f64,
    /// Machine-wide CPU split inside the measured window.
    pub machine: MachineSplit,
    /// How many times the cell was measured: more than once when the host stole more
    /// than `--max-steal` of the window (the last measurement is kept).
    pub attempts: u32,
    /// Why the cell failed, if it did.
    pub error: Option<String>,
}

/// Median, min and max of a set of numbers.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// How many values.
    pub n: usize,
}

impl Spread {
    /// The spread of `values`, or `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }
}

/// The summary of one metric for one server.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Workload id.
    pub workload: String,
    /// Metric key.
    pub metric: String,
    /// Server name.
    pub server: String,
    /// The values over rounds.
    pub value: Spread,
    /// The reference server of the ratio.
    pub vs: String,
    /// value / reference value, paired within each round.
    pub ratio: Option<Spread>,
    /// The goal, if this is a zerorx server and the metric has one.
    pub goal: Option<String>,
    /// Whether the median meets the goal.
    pub met: Option<bool>,
}

/// Summarises `cells` for `workloads` × `servers`.
pub fn summarise(cells: &[Cell], workloads: &[Workload], servers: &[ServerKind]) -> Vec<Row> {
    let mut rows = Vec::new();
    let value = |round: usize, w: Workload, s: ServerKind, key: &str| -> Option<f64> {
        cells
            .iter()
            .find(|c| {
                c.round == round
                    && c.workload == w.id()
                    && c.server == s.name()
                    && c.error.is_none()
            })
            .and_then(|c| c.metrics.get(key).copied())
    };
    let rounds: Vec<usize> = {
        let mut r: Vec<usize> = cells.iter().map(|c| c.round).collect();
        r.sort_unstable();
        r.dedup();
        r
    };
    for &w in workloads {
        for metric in w.metrics() {
            for &s in servers {
                let values: Vec<f64> = rounds
                    .iter()
                    .filter_map(|&r| value(r, w, s, metric.key))
                    .collect();
                let Some(spread) = Spread::of(&values) else {
                    continue;
                };
                let reference = s.reference();
                let ratios: Vec<f64> = rounds
                    .iter()
                    .filter_map(|&r| {
                        let a = value(r, w, s, metric.key)?;
                        let b = value(r, w, reference, metric.key)?;
                        (b > 0.0).then(|| a / b)
                    })
                    .collect();
                let ratio = Spread::of(&ratios);
                let goal = metric.goal.filter(|_| s.is_zerorx());
                rows.push(Row {
                    workload: w.id().into(),
                    metric: metric.key.into(),
                    server: s.name().into(),
                    value: spread,
                    vs: reference.name().into(),
                    ratio,
                    goal: goal.map(|g| g.describe()),
                    met: goal.and_then(|g| g.met(spread.median, ratio.map(|r| r.median))),
                });
            }
        }
    }
    rows
}

/// Formats `v` in `unit` for a table.
pub fn format_value(v: f64, unit: Unit) -> String {
    match unit {
        Unit::PerSec | Unit::Count if v >= 1e6 => format!("{:.2}M", v / 1e6),
        Unit::PerSec | Unit::Count if v >= 1e4 => format!("{:.1}k", v / 1e3),
        Unit::PerSec => format!("{v:.0}"),
        Unit::Count => format!("{v:.0}"),
        Unit::Micros => format!("{v:.1}"),
        Unit::GbPerSec => format!("{v:.3}"),
        Unit::SecPerGb => format!("{v:.3}"),
        Unit::Bytes => format!("{v:.0}"),
        Unit::Percent => format!("{v:.0}%"),
        Unit::Ratio => format!("{v:.2}"),
    }
}

fn metric_of(w: Workload, key: &str) -> Option<&'static Metric> {
    w.metrics().iter().find(|m| m.key == key)
}

/// The tables: one per workload, one line per metric × server.
pub fn tables(rows: &[Row], workloads: &[Workload]) -> String {
    let mut out = String::new();
    for &w in workloads {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.workload == w.id()).collect();
        if mine.is_empty() {
            continue;
        }
        let rounds = mine.iter().map(|r| r.value.n).max().unwrap_or(0);
        let _ = writeln!(out, "\n{} {} [{} rounds]", w.id(), w.title(), rounds);
        let _ = writeln!(
            out,
            "  {:<30} {:<10} {:>9} {:>19} {:>6} {:>13} {:<9} {:<9} met",
            "metric", "peer", "median", "min-max", "ratio", "min-max", "vs", "goal"
        );
        let mut last_metric = "";
        for r in mine {
            let Some(metric) = metric_of(w, &r.metric) else {
                continue;
            };
            let label = if r.metric == last_metric {
                ""
            } else {
                metric.label
            };
            last_metric = &r.metric;
            let fmt = |v| format_value(v, metric.unit);
            let (ratio, ratio_range) = match r.ratio {
                Some(q) => (
                    format!("{:.2}", q.median),
                    format!("{:.2}-{:.2}", q.min, q.max),
                ),
                None => ("-".into(), "-".into()),
            };
            let is_ref = r.server == r.vs;
            let _ = writeln!(
                out,
                "  {:<30} {:<10} {:>9} {:>19} {:>6} {:>13} {:<9} {:<9} {}",
                label,
                r.server,
                fmt(r.value.median),
                format!("{}-{}", fmt(r.value.min), fmt(r.value.max)),
                if is_ref { "1".into() } else { ratio },
                if is_ref { String::new() } else { ratio_range },
                if is_ref { "" } else { r.vs.as_str() },
                r.goal.as_deref().unwrap_or(""),
                match r.met {
                    Some(true) => "MET",
                    Some(false) => "not met",
                    None => "",
                }
            );
        }
    }
    out
}

/// The goals of zerorx (one worker) in one short list: workload, metric, median
/// ratio or value, goal, verdict.
pub fn goal_summary(rows: &[Row]) -> String {
    let mut out = String::from("\nGoals (zerorx, 1 worker, vs tokio current_thread):\n");
    for r in rows
        .iter()
        .filter(|r| r.server == ServerKind::Zerorx.name() && r.goal.is_some())
    {
        let shown = match (r.goal.as_deref(), r.ratio) {
            (Some(g), Some(q)) if g.ends_with('x') => {
                format!("ratio {:.2} [{:.2}-{:.2}]", q.median, q.min, q.max)
            }
            _ => format!(
                "value {:.1} [{:.1}-{:.1}]",
                r.value.median, r.value.min, r.value.max
            ),
        };
        let _ = writeln!(
            out,
            "  {:<6} {:<20} {:<28} goal {:<9} {}",
            r.workload,
            r.metric,
            shown,
            r.goal.as_deref().unwrap_or(""),
            match r.met {
                Some(true) => "MET",
                Some(false) => "NOT MET",
                None => "no reference",
            }
        );
    }
    out
}

/// `--profile`: per workload and server, the median over rounds of the server's CPU
/// per operation in each category, the shared floor and its own cost, and zerorx's
/// own cost over tokio-ct's (rounds paired).
pub fn attribution(cells: &[Cell], workloads: &[Workload], servers: &[ServerKind]) -> String {
    use crate::profile::Category;
    let mut out = String::from(
        "\nwhere each server's CPU goes, µs per operation (perf samples of the measured \
         windows; floor = copies + tcp/ip + other-kernel, own = the rest)\n",
    );
    let metric = |c: &Cell, k: &str| c.metrics.get(k).copied();
    let ok = |w: Workload, s: ServerKind| {
        cells
            .iter()
            .filter(move |c| c.error.is_none() && c.workload == w.id() && c.server == s.name())
    };
    for &w in workloads {
        let mut header = format!("{}\n  {:<10}", w.id(), "server");
        for c in Category::ALL {
            header += &format!(" {:>12}", c.name());
        }
        header += &format!(" {:>9} {:>9}\n", "floor", "own");
        let mut body = String::new();
        for &s in servers {
            let median = |k: &str| {
                Spread::of(&ok(w, s).filter_map(|c| metric(c, k)).collect::<Vec<_>>())
                    .map(|x| x.median)
            };
            let Some(own) = median("own_us_per_op") else {
                continue;
            };
            body += &format!("  {:<10}", s.name());
            for c in Category::ALL {
                let v = median(&format!("cpu_{}_us_per_op", c.key())).unwrap_or(0.0);
                body += &format!(" {v:>12.2}");
            }
            body += &format!(
                " {:>9.2} {own:>9.2}\n",
                median("floor_us_per_op").unwrap_or(0.0)
            );
        }
        if body.is_empty() {
            continue;
        }
        out += &header;
        out += &body;
        let ratios: Vec<f64> = ok(w, ServerKind::Zerorx)
            .filter_map(|z| {
                let t = ok(w, ServerKind::TokioCt).find(|t| t.round == z.round)?;
                Some(metric(z, "own_us_per_op")? / metric(t, "own_us_per_op")?.max(1e-9))
            })
            .collect();
        if let Some(r) = Spread::of(&ratios) {
            out += &format!(
                "  zerorx own cost / tokio-ct's: {:.2}x [{:.2}-{:.2}] (goal <= 0.8x for W2 and W5)\n",
                r.median, r.min, r.max
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(round: usize, server: ServerKind, key: &str, v: f64) -> Cell {
        Cell {
            round,
            order: 0,
            workload: "W2".into(),
            server: server.name().into(),
            metrics: [(key.to_string(), v)].into_iter().collect(),
            background_busy_pct: 0.0,
            machine: MachineSplit::default(),
            attempts: 1,
            error: None,
        }
    }

    #[test]
    fn spread_of_values() {
        assert_eq!(Spread::of(&[]), None);
        let s = Spread::of(&[3.0, 1.0, 2.0]).expect("spread");
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let s = Spread::of(&[4.0, 1.0, 2.0, 3.0]).expect("spread");
        assert_eq!(s.median, 2.5);
        assert_eq!(Spread::of(&[f64::NAN]), None);
    }

    #[test]
    fn ratios_pair_within_rounds_and_goals_are_judged() {
        // Round 1: zerorx 120 vs tokio 100 (1.2); round 2: 90 vs 100 (0.9);
        // round 3: 130 vs 100 (1.3). Median ratio 1.2 meets ">= 1.1".
        let mut cells = Vec::new();
        for (r, z) in [(1, 120.0), (2, 90.0), (3, 130.0)] {
            cells.push(cell(r, ServerKind::Zerorx, "req_per_s", z));
            cells.push(cell(r, ServerKind::TokioCt, "req_per_s", 100.0));
        }
        // A failed cell does not count.
        let mut failed = cell(4, ServerKind::Zerorx, "req_per_s", 1.0);
        failed.error = Some("boom".into());
        cells.push(failed);
        let rows = summarise(
            &cells,
            &[Workload::W2],
            &[ServerKind::Zerorx, ServerKind::TokioCt],
        );
        let z = rows
            .iter()
            .find(|r| r.server == "zerorx" && r.metric == "req_per_s")
            .expect("zerorx row");
        let q = z.ratio.expect("ratio");
        assert!((q.median - 1.2).abs() < 1e-9 && (q.min - 0.9).abs() < 1e-9);
        assert_eq!(z.value.n, 3);
        assert_eq!(z.met, Some(true));
        let t = rows
            .iter()
            .find(|r| r.server == "tokio-ct" && r.metric == "req_per_s")
            .expect("tokio row");
        assert_eq!(t.goal, None);
        assert!(tables(&rows, &[Workload::W2]).contains("MET"));
        assert!(goal_summary(&rows).contains("ratio 1.20"));
    }

    #[test]
    fn values_format_by_unit() {
        assert_eq!(format_value(123_456.0, Unit::PerSec), "123.5k");
        assert_eq!(format_value(2_500_000.0, Unit::PerSec), "2.50M");
        assert_eq!(format_value(12.34, Unit::Micros), "12.3");
        assert_eq!(format_value(87.0, Unit::Percent), "87%");
    }
}

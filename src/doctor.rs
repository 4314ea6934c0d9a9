//! The kernel capability report that `zerorx doctor` prints, as text and JSON: probe,
//! ZCRX verdicts, tuning and, for a NIC queue, its steering. The command line itself
//! (arguments, `--require`) is the `zerorx-cli` crate's.

use serde::Serialize;
use std::fmt::Write as _;
use zcrx::probe::{names, Capabilities, ZcrxVerdict};
use zcrx::steering::{DataSplit, QueueChoice, Reading, SteeringReport};

/// The verdict for a queue asked for on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueProbe {
    /// Interface name.
    pub interface: String,
    /// Queue index.
    pub queue: u32,
    /// What the registration attempt found.
    pub result: ZcrxVerdict,
    /// What steers packets on the interface.
    pub steering: SteeringReport,
    /// The queue asked about with `--flow`: peer, local, and where it lands or why
    /// that cannot be told.
    pub flow: Option<FlowQueue>,
}

/// The answer to `--flow`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowQueue {
    /// The sending side.
    pub peer: std::net::SocketAddr,
    /// The receiving (local) side.
    pub local: std::net::SocketAddr,
    /// The queue and what chose it, or why it cannot be told.
    pub queue: Result<QueueChoice, String>,
}

impl QueueProbe {
    /// Probes `queue` of `interface` and reads its steering; predicts `flow`'s queue.
    pub fn run(
        interface: String,
        queue: u32,
        flow: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    ) -> QueueProbe {
        let steering = zcrx::steering::report(&interface);
        let flow = flow.map(|(peer, local)| FlowQueue {
            peer,
            local,
            queue: steering.queue_for(peer, local),
        });
        QueueProbe {
            result: zcrx::probe::probe_queue(&interface, queue),
            interface,
            queue,
            steering,
            flow,
        }
    }
}

/// A reading as text: the value through `f`, or `unknown:` and the reason.
fn show<T>(r: &Reading<T>, f: impl Fn(&T) -> String) -> String {
    match r {
        Reading::Known(v) => f(v),
        Reading::Unavailable(why) => format!("unknown: {why}"),
    }
}

fn render_steering(out: &mut String, s: &SteeringReport, flow: Option<&FlowQueue>) {
    let _ = writeln!(out, "\nsteering on {}", s.interface);
    let _ = writeln!(
        out,
        "  rx queues        {}",
        show(&s.rx_queues, u32::to_string)
    );
    let or_not = |v: Option<u32>| v.map_or("not reported".to_owned(), |n| n.to_string());
    let rings = show(&s.rings, |r| {
        let split = match r.tcp_data_split {
            Some(DataSplit::Enabled) => "on",
            Some(DataSplit::Disabled) => "off",
            Some(DataSplit::Unknown) => "unknown",
            None => "not reported",
        };
        format!(
            "header/data split {split}, hds-thresh {}, rx ring {}",
            or_not(r.hds_thresh),
            or_not(r.rx)
        )
    });
    let _ = writeln!(out, "  rings            {rings}");
    let rss = show(&s.rss, |r| {
        if r.indirection.is_empty() {
            return "the device reports no indirection table".to_owned();
        }
        let queues: std::collections::BTreeSet<u32> = r.indirection.iter().copied().collect();
        format!(
            "hash function {}, {}-byte key, {} table entries over queues {queues:?}",
            r.hash_function.map_or("?".into(), |f| format!("{f:#x}")),
            r.key.len(),
            r.indirection.len(),
        )
    });
    let _ = writeln!(out, "  rss              {rss}");
    let rules = show(&s.flow_rules, |rules| {
        if rules.is_empty() {
            return "none".to_owned();
        }
        let each: Vec<String> = rules
            .iter()
            .map(|r| {
                format!(
                    "#{} {} {}:{} -> {}",
                    r.location,
                    r.flow,
                    r.dst_ip.map_or("*".into(), |ip| ip.to_string()),
                    r.dst_port,
                    r.queue.map_or("drop".into(), |q| format!("queue {q}"))
                )
            })
            .collect();
        each.join("; ")
    });
    let _ = writeln!(out, "  ntuple rules     {rules}");
    let queues = show(&s.queues, |queues| {
        if queues.is_empty() {
            return "none listed".to_owned();
        }
        let each: Vec<String> = queues
            .iter()
            .map(|q| {
                let napi = q.napi_id.map_or("no napi".into(), |n| format!("napi {n}"));
                let zc = if q.io_uring { ", io_uring bound" } else { "" };
                format!("{} ({napi}{zc})", q.id)
            })
            .collect();
        each.join(", ")
    });
    let _ = writeln!(out, "  rx queue list    {queues}");
    for problem in s.zero_copy_problems() {
        let _ = writeln!(out, "  for zero-copy    {problem}");
    }
    if let Some(f) = flow {
        let answer = match &f.queue {
            Ok(c) => format!("queue {} (by {})", c.queue, c.by),
            Err(why) => format!("cannot tell: {why}"),
        };
        let _ = writeln!(out, "  flow {} -> {}: {answer}", f.peer, f.local);
    }
}

/// A comma-separated list, or `none`.
fn list(items: Vec<String>) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The report as a table for a person.
pub fn render_text(caps: &Capabilities, queue: Option<&QueueProbe>) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(out, "zerorx doctor");
    let _ = writeln!(out, "  kernel           {}", caps.kernel_release);
    let _ = writeln!(out, "  page size        {} bytes", caps.page_size);

    let _ = writeln!(out, "\nio_uring");
    match &caps.io_uring.problem {
        None => {
            let _ = writeln!(out, "  usable           yes");
        }
        Some(block) => {
            let _ = writeln!(out, "  usable           no: {block}");
            let _ = writeln!(out, "  fix              {}", block.fix());
        }
    }

    let _ = writeln!(out, "\nsetup flags");
    for f in &caps.setup_flags {
        let err = f
            .error
            .as_deref()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        let _ = writeln!(out, "  {:<16} {}{err}", f.name, yes_no(f.supported));
    }

    let _ = writeln!(out, "\nopcodes");
    if let Some(err) = &caps.opcode_probe_error {
        let _ = writeln!(
            out,
            "  probe failed ({err}); every opcode reads as unsupported"
        );
    }
    for o in &caps.opcodes {
        let _ = writeln!(out, "  {:<16} {}", o.name, yes_no(o.supported));
    }
    let b = &caps.buffer_rings;
    let _ = writeln!(out, "  {:<16} {}", "buffer rings", yes_no(b.provided_ring));
    let _ = writeln!(out, "  {:<16} {}", "bundles", yes_no(b.bundle));
    let _ = writeln!(out, "  {:<16} {}", "incremental", yes_no(b.incremental));

    let _ = writeln!(out, "\nQUERY (IORING_REGISTER_QUERY)");
    let q = &caps.query;
    match (&q.opcodes, &q.error) {
        (Some(op), _) => {
            let _ = writeln!(out, "  present          yes");
            let _ = writeln!(
                out,
                "  opcodes          {} request, {} register, {} query; setup mask {:#x}",
                op.nr_request_opcodes,
                op.nr_register_opcodes,
                op.nr_query_opcodes,
                op.ring_setup_flags
            );
        }
        (None, err) => {
            let why = err.as_deref().unwrap_or("no answer");
            let _ = writeln!(out, "  present          {} ({why})", yes_no(q.present));
        }
    }
    if let Some(op) = &q.opcodes {
        let _ = writeln!(
            out,
            "  query ops        {}",
            list(names::query_ops(op.nr_query_opcodes))
        );
    }
    match (&q.zcrx, &q.zcrx_error) {
        (Some(z), _) => {
            let _ = writeln!(
                out,
                "  zcrx             register_flags {:#x}, area_flags {:#x}, {} ctrl ops, features {:#x}",
                z.register_flags, z.area_flags, z.nr_ctrl_opcodes, z.features
            );
            for (label, named) in [
                ("register flags", names::register_flags(z.register_flags)),
                ("area flags", names::area_flags(z.area_flags)),
                ("ctrl ops", names::ctrl_ops(z.nr_ctrl_opcodes)),
                ("features", names::features(z.features)),
            ] {
                let _ = writeln!(out, "  {label:<16} {}", list(named));
            }
        }
        (None, Some(err)) => {
            let _ = writeln!(out, "  zcrx             not answered ({err}): Linux < 6.19");
        }
        (None, None) => {
            let _ = writeln!(out, "  zcrx             not asked");
        }
    }
    if let Some(s) = &q.scq {
        let _ = writeln!(
            out,
            "  scq              ring header {} bytes, aligned to {}",
            s.hdr_size, s.hdr_alignment
        );
    }
    if let Some(e) = &q.zcrx_event {
        let _ = writeln!(
            out,
            "  zcrx events      {}; stats block {} bytes, offset aligned to {}",
            list(names::event_types(e.event_flags)),
            e.stats_size,
            e.stats_off_alignment
        );
    }

    let z = &caps.zcrx;
    let _ = writeln!(out, "\nZCRX features");
    let mut row = |name: &str, value: String| {
        let _ = writeln!(out, "  {name:<16} {value}");
    };
    row("RECV_ZC", yes_no(z.recv_zc).into());
    let built = match caps.zcrx_in_kernel {
        Some(b) => yes_no(b).to_owned(),
        None => "unknown".to_owned(),
    };
    row("in kernel", built);
    row(
        "from query",
        if z.query {
            "yes".into()
        } else {
            "no (fallback rules)".into()
        },
    );
    row("import", yes_no(z.import).into());
    row("nodev", yes_no(z.nodev).into());
    row("dmabuf", yes_no(z.dmabuf).into());
    row("flush_rq", yes_no(z.flush_rq).into());
    row("export", yes_no(z.export).into());
    row("rx_page_size", yes_no(z.rx_page_size).into());
    row("events", yes_no(z.events).into());
    row("add_area", yes_no(z.add_area).into());
    row("multi per ring", yes_no(z.multiple_per_ring).into());
    row(
        "rq header",
        format!(
            "{} bytes, entries aligned to {}",
            z.rq_hdr_size, z.rq_hdr_alignment
        ),
    );

    let _ = writeln!(out, "\ninterfaces (ZCRX on queue 0)");
    for i in &caps.interfaces {
        let driver = i.driver.as_deref().unwrap_or("-");
        let parent = if i.has_parent_device {
            "device"
        } else {
            "no device"
        };
        let _ = writeln!(
            out,
            "  {:<10} #{:<3} {driver:<12} {parent:<9} {} rx queues",
            i.name, i.ifindex, i.rx_queues
        );
        render_verdict(&mut out, &i.queue0);
    }
    if let Some(p) = queue {
        let _ = writeln!(out, "\nqueue {} of {}", p.queue, p.interface);
        render_verdict(&mut out, &p.result);
        render_steering(&mut out, &p.steering, p.flow.as_ref());
    }

    let m = &caps.receive_mode;
    let _ = writeln!(out, "\nreceive mode: {}", m.mode);
    if let (Some(i), Some(q)) = (&m.interface, m.queue) {
        let _ = writeln!(out, "  bind             {i} queue {q}");
    }
    let _ = writeln!(out, "  reason           {}", m.reason);
    let nodev = if caps.nodev_testing {
        "available: ZCRX_REG_NODEV can exercise RECV_ZC on loopback"
    } else {
        "not available (ZCRX_REG_NODEV needs Linux 7.1+)"
    };
    let _ = writeln!(out, "  nodev testing    {nodev}");
    out
}

fn render_verdict(out: &mut String, verdict: &ZcrxVerdict) {
    match verdict {
        ZcrxVerdict::Possible => {
            let _ = writeln!(out, "      ZCRX possible");
        }
        ZcrxVerdict::Unavailable(reason) => {
            let _ = writeln!(out, "      ZCRX not possible: {reason}");
            let _ = writeln!(out, "      fix: {}", reason.fix());
        }
    }
}

/// The runtime's tunable settings as a default [`Builder`](crate::Builder) would take
/// them here: each `ZERORX_*` variable, its value and where it came from.
pub fn render_tuning(tuning: &std::io::Result<Vec<crate::runtime::tuning::Setting>>) -> String {
    let mut out = String::from("\ntuning (ZERORX_* environment; a value set in code wins)\n");
    match tuning {
        Ok(settings) => {
            for s in settings {
                let _ = writeln!(out, "  {:<20} {} ({})", s.variable, s.value, s.source);
            }
        }
        Err(e) => {
            let _ = writeln!(out, "  invalid: {e}");
        }
    }
    out
}

/// The report as pretty JSON: the [`Capabilities`] object, plus `queue_probe` if asked
/// and `tuning` (or `tuning_error`).
pub fn render_json(
    caps: &Capabilities,
    queue: Option<&QueueProbe>,
    tuning: &std::io::Result<Vec<crate::runtime::tuning::Setting>>,
) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(caps)?;
    if let Some(map) = value.as_object_mut() {
        if let Some(p) = queue {
            map.insert("queue_probe".to_owned(), serde_json::to_value(p)?);
        }
        match tuning {
            Ok(t) => map.insert("tuning".to_owned(), serde_json::to_value(t)?),
            Err(e) => map.insert("tuning_error".to_owned(), e.to_string().into()),
        };
    }
    serde_json::to_string_pretty(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steering_section_shows_rules_rss_problems_and_the_flow() {
        use zcrx::steering::{FlowRule, Rings, Rss};
        let steering = SteeringReport {
            interface: "eth1".into(),
            rx_queues: Reading::Known(4),
            rings: Reading::Known(Rings {
                rx: Some(1024),
                rx_max: Some(4096),
                tcp_data_split: Some(DataSplit::Disabled),
                hds_thresh: Some(0),
                hds_thresh_max: None,
            }),
            rss: Reading::Known(Rss {
                hash_function: Some(1),
                key: vec![0x6d; 40],
                indirection: (0..128).map(|i| i % 4).collect(),
            }),
            flow_rules: Reading::Known(vec![FlowRule {
                location: 5,
                flow: "tcp4".into(),
                dst_ip: None,
                dst_port: 9090,
                queue: Some(2),
            }]),
            queues: Reading::Known(vec![
                zcrx::steering::RxQueue {
                    id: 0,
                    napi_id: Some(8193),
                    io_uring: false,
                },
                zcrx::steering::RxQueue {
                    id: 2,
                    napi_id: Some(8195),
                    io_uring: true,
                },
            ]),
        };
        let peer = "10.0.0.1:40000".parse().expect("addr");
        let local = "10.0.0.2:9090".parse().expect("addr");
        let flow = FlowQueue {
            peer,
            local,
            queue: steering.queue_for(peer, local),
        };
        let mut out = String::new();
        render_steering(&mut out, &steering, Some(&flow));
        for want in [
            "rx queues        4",
            "header/data split off, hds-thresh 0, rx ring 1024",
            "hash function 0x1, 40-byte key, 128 table entries over queues {0, 1, 2, 3}",
            "#5 tcp4 *:9090 -> queue 2",
            "rx queue list    0 (napi 8193), 2 (napi 8195, io_uring bound)",
            "for zero-copy    header/data split is off",
            "flow 10.0.0.1:40000 -> 10.0.0.2:9090: queue 2 (by ntuple rule 5)",
        ] {
            assert!(out.contains(want), "{want:?} missing from:\n{out}");
        }
    }
}

//! The report as text for a person.

use super::{LatencySummary, Report};
use crate::errors::ErrorKind;
use crate::server::stats::PoolFigures;
use std::fmt::Write;

/// Microseconds in the unit that reads best: "87 µs", "1.24 ms", "2.50 s".
pub fn us(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.2} ms", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.0} µs")
    } else {
        format!("{v:.1} µs")
    }
}

/// A count with thousands separators.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A size in bytes: "64 B", "16 KiB", "1.5 MiB".
pub fn size(b: u64) -> String {
    const K: u64 = 1024;
    match b {
        b if b >= K * K * K => format!("{:.1} GiB", b as f64 / (K * K * K) as f64),
        b if b >= K * K && b % (K * K) == 0 => format!("{} MiB", b / (K * K)),
        b if b >= K * K => format!("{:.1} MiB", b as f64 / (K * K) as f64),
        b if b >= K && b % K == 0 => format!("{} KiB", b / K),
        b if b >= K => format!("{:.1} KiB", b as f64 / K as f64),
        b => format!("{b} B"),
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn latency_line(l: &LatencySummary) -> String {
    format!(
        "p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        us(l.p50_us),
        us(l.p90_us),
        us(l.p99_us),
        us(l.p999_us),
        us(l.max_us)
    )
}

/// Renders the whole report.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = render_into(&mut o, r);
    o
}

fn render_into(o: &mut String, r: &Report) -> std::fmt::Result {
    let target = if r.target.embedded {
        format!(
            "embedded server (pid {}, {} workers) on {}",
            r.target.server_pid.unwrap_or(0),
            r.target.server_threads.unwrap_or(0),
            r.target.addr
        )
    } else if r.scenario == crate::cli::Scenario::Fabric {
        r.target.addr.clone()
    } else {
        format!("server at {}", r.target.addr)
    };
    writeln!(o, "{} — scenario {}, {target}", r.tool, r.scenario)?;
    let l = &r.load;
    let sizes: Vec<String> = l.sizes.iter().map(|&s| size(s as u64)).collect();
    let shape = match l.rate_per_s {
        Some(rate) => format!("open loop at {rate:.0} req/s"),
        None => "closed loop".into(),
    };
    let span = match (l.duration_s, l.requests) {
        (_, Some(n)) => format!("{} requests", count(n)),
        (Some(d), None) => format!("{d:.1} s"),
        (None, None) => "until stopped".into(),
    };
    let per_conn = l
        .per_conn
        .map(|n| format!(", {n} requests per connection"))
        .unwrap_or_default();
    writeln!(
        o,
        "load: {} connections on {} client workers, depth {}, sizes {}, {}{per_conn}; {shape}; {span}",
        l.connections,
        l.client_threads,
        l.depth,
        sizes.join(", "),
        l.kinds.join("+"),
    )?;
    writeln!(o)?;
    writeln!(
        o,
        "receive mode     {} — {}",
        r.receive_mode.mode, r.receive_mode.reason
    )?;
    if !r.receive_mode.tuning.is_empty() {
        writeln!(o, "server tuning    {}", r.receive_mode.tuning.join(", "))?;
    }
    if let Some(s) = &r.server {
        let copy: u64 = s
            .workers
            .iter()
            .filter_map(|w| w.pool)
            .map(|p| p.bytes)
            .sum();
        let zc: Vec<_> = s.workers.iter().filter_map(|w| w.zc_pool).collect();
        let zc_sum = |f: fn(&PoolFigures) -> u64| zc.iter().map(f).sum::<u64>();
        write!(
            o,
            "receive paths    {} through the copy pools, {} through zero-copy instances \
             ({} placed without a copy, {} copied by the kernel)",
            size(copy),
            size(zc_sum(|p| p.bytes)),
            size(zc_sum(|p| p.zero_copy_bytes)),
            size(zc_sum(|p| p.copied_bytes))
        )?;
        let events = zc_sum(|p| p.copy_events) + zc_sum(|p| p.alloc_fail_events);
        if events > 0 || zc_sum(|p| p.kernel_copy_bytes) > 0 {
            write!(
                o,
                "; kernel events: {} copy, {} out of buffers; the kernel's copy count {}",
                count(zc_sum(|p| p.copy_events)),
                count(zc_sum(|p| p.alloc_fail_events)),
                size(zc_sum(|p| p.kernel_copy_bytes))
            )?;
        }
        writeln!(o)?;
    }
    writeln!(
        o,
        "throughput       {} req/s   {:.1} MB/s sent   {:.1} MB/s received   ({} replies in {:.2} s)",
        count(r.throughput.req_per_s.round() as u64),
        r.throughput.mb_per_s_sent,
        r.throughput.mb_per_s_received,
        count(r.requests.ok),
        r.elapsed_s
    )?;
    let from = if r.latency.from_intended_send {
        "from the intended send time"
    } else {
        "from the send"
    };
    writeln!(o, "latency          {}  ({from})", latency_line(&r.latency))?;
    writeln!(
        o,
        "connections      {} opened ({:.1}/s), connect {}",
        count(r.connections.opened),
        r.connections.per_s,
        latency_line(&r.connections.connect)
    )?;
    if r.errors.is_empty() {
        writeln!(o, "errors           none")?;
    } else {
        writeln!(o, "errors")?;
        for k in ErrorKind::ALL {
            if let Some(n) = r.errors.get(k.name()) {
                writeln!(o, "  {:<14} {:>10}  {}", k.name(), count(*n), k.meaning())?;
            }
        }
        let shown = r.error_samples.len().min(20);
        writeln!(
            o,
            "  first {shown} of {} recorded (all in --json):",
            r.error_samples.len()
        )?;
        for s in r.error_samples.iter().take(shown) {
            writeln!(o, "    {s}")?;
        }
    }
    let cw: Vec<String> = r
        .client_workers
        .iter()
        .map(|s| format!("w{} {:.1} %", s.worker, s.percent))
        .collect();
    writeln!(o, "client workers   {}", cw.join("  "))?;
    if let Some(s) = &r.server {
        let sw: Vec<String> = s
            .shares
            .iter()
            .map(|x| format!("w{} {:.1} %", x.worker, x.percent))
            .collect();
        writeln!(
            o,
            "server workers   {}   (share of {}; busiest/mean {:.2})",
            sw.join("  "),
            if s.share_of.is_empty() {
                "requests"
            } else {
                &s.share_of
            },
            s.imbalance
        )?;
        if s.rpc.is_some() {
            writeln!(
                o,
                "  worker   receives  enters/receive  CQEs/enter  sq_full  cq_overflow"
            )?;
            for w in &s.workers {
                let recv = w.pool.map_or(0, |p| p.completions);
                writeln!(
                    o,
                    "  {:>6} {:>10} {:>15.3} {:>11.1} {:>8} {:>12}",
                    w.worker,
                    count(recv),
                    w.runtime.enter_calls as f64 / recv.max(1) as f64,
                    w.runtime.cqes as f64 / w.runtime.enter_calls.max(1) as f64,
                    w.runtime.sq_full,
                    w.runtime.cq_overflows
                )?;
            }
        } else {
            writeln!(
                o,
                "  worker   requests   conns  assembled  enters/req  CQEs/enter  sq_full  cq_overflow"
            )?;
            for w in &s.workers {
                let req = w.counters.requests.max(1) as f64;
                writeln!(
                    o,
                    "  {:>6} {:>10} {:>7} {:>10} {:>11.3} {:>11.1} {:>8} {:>12}",
                    w.worker,
                    count(w.counters.requests),
                    count(w.counters.accepted),
                    count(w.counters.assembled),
                    w.runtime.enter_calls as f64 / req,
                    w.runtime.cqes as f64 / w.runtime.enter_calls.max(1) as f64,
                    w.runtime.sq_full,
                    w.runtime.cq_overflows
                )?;
            }
        }
        writeln!(
            o,
            "receive pools (server, per worker: the copy pool, then its zero-copy instance)"
        )?;
        writeln!(
            o,
            "  worker  pool  chunks  high-water  in use  returns pending  ENOBUFS  ENOSPC  ENOMEM   zero-copy      copied"
        )?;
        for w in &s.workers {
            let pools = [("copy", w.pool), ("zc", w.zc_pool)];
            if w.pool.is_none() && w.zc_pool.is_none() {
                writeln!(o, "  {:>6}  no receive pool", w.worker)?;
            }
            for (name, p) in pools {
                let Some(p) = p else { continue };
                writeln!(
                    o,
                    "  {:>6}  {:>4} {:>7} {:>11} {:>7} {:>16} {:>8} {:>7} {:>7} {:>11} {:>11}",
                    w.worker,
                    name,
                    p.chunks_total,
                    p.high_water,
                    p.in_use,
                    p.returns_pending,
                    count(p.enobufs),
                    p.enospc,
                    p.enomem,
                    size(p.zero_copy_bytes),
                    size(p.copied_bytes)
                )?;
            }
        }
        writeln!(
            o,
            "receive re-arms  (per worker: ENOBUFS / ENOSPC / ENOMEM / EINTR / ended / budget; \
             steering fall-backs, hand-overs; parked zero-copy receives restarted)"
        )?;
        for w in &s.workers {
            let r = &w.runtime.rearms;
            writeln!(
                o,
                "  {:>6}  {} / {} / {} / {} / {} / {};  {}, {};  {}",
                w.worker,
                count(r.no_buffers),
                count(r.cq_full),
                count(r.no_free_chunk),
                count(r.interrupted),
                count(r.ended),
                count(r.budget),
                w.runtime.recv_steering_fallbacks,
                w.runtime.recv_handovers,
                count(w.runtime.recv_zc_restarts)
            )?;
        }
        writeln!(
            o,
            "zero-copy sends  (per worker: sent zero-copy / copied by the kernel; sockets \
             sending plain)"
        )?;
        for w in &s.workers {
            writeln!(
                o,
                "  {:>6}  {} / {};  {}",
                w.worker,
                count(w.runtime.send_zc),
                count(w.runtime.send_zc_copied),
                count(w.runtime.send_zc_off)
            )?;
        }
        match &s.rpc {
            Some(rpc) => {
                let c = &rpc.counters;
                writeln!(
                    o,
                    "thrift server    {} requests ({} oneway, {} fire processed), {} replies, {} connections",
                    count(c.requests),
                    count(c.oneway_requests),
                    count(rpc.fired.max(0) as u64),
                    count(c.replies),
                    count(c.connections_accepted)
                )?;
                writeln!(
                    o,
                    "  copied frames {} ({}), in-flight waits {}, protocol errors {}, too large {}, \
                     truncated {}, io errors {}, write timeouts {}, idle timeouts {}",
                    count(c.frames_copied),
                    size(c.bytes_copied),
                    count(c.in_flight_waits),
                    count(c.protocol_errors),
                    count(c.frames_too_large),
                    count(c.truncated),
                    count(c.io_errors),
                    count(c.write_timeouts),
                    count(c.idle_timeouts)
                )?;
            }
            None => {
                let t = &s.totals;
                writeln!(
                    o,
                    "server closes    {} clean, {} truncated, {} reset, {} silent, {} idle timeout, \
                     {} send failed, {} reset before accept, {} accept errors",
                    t.clean_closes,
                    t.truncated,
                    t.resets,
                    t.silent,
                    t.idle_timeouts,
                    t.send_errors,
                    t.aborted_before_accept,
                    t.accept_errors
                )?;
            }
        }
    }
    if !r.faults.is_empty() {
        writeln!(o, "faults injected")?;
        writeln!(
            o,
            "  kind         rate/s  attempted  as expected  wrong  not injected  skipped  the server must"
        )?;
        for f in &r.faults {
            let c = &f.counts;
            writeln!(
                o,
                "  {:<11} {:>7.2} {:>10} {:>12} {:>6} {:>13} {:>8}  {}",
                f.kind.name(),
                f.rate_per_s,
                count(c.attempted),
                count(c.as_expected),
                count(c.unexpected),
                count(c.not_injected),
                count(c.skipped),
                f.expectation
            )?;
        }
        for sample in r.fault_samples.iter().take(10) {
            writeln!(o, "    {sample}")?;
        }
    }
    if !r.server_checks.is_empty() {
        writeln!(
            o,
            "server counts    (the server's own counters against what the harness did)"
        )?;
        writeln!(o, "  {:<50} {:>9} {:>9}  rule", "", "server", "harness")?;
        for c in &r.server_checks {
            writeln!(
                o,
                "  {:<50} {:>9} {:>9}  {:<8} {}",
                c.what,
                count(c.observed),
                count(c.expected),
                c.rule,
                if c.ok { "ok" } else { "MISMATCH" }
            )?;
        }
    }
    let mem = |name: &str, s: &crate::rss::RssSeries| {
        format!(
            "{name} {} → {} (peak {}){}",
            mib(s.start_kib),
            mib(s.end_kib),
            mib(s.peak_kib),
            if s.growing { " GROWING" } else { "" }
        )
    };
    let mut m = vec![mem("harness", &r.rss.harness)];
    if let Some(s) = &r.rss.server {
        m.push(mem("server", s));
    }
    writeln!(o, "memory (RSS)     {}", m.join(";  "))?;
    for n in &r.notes {
        writeln!(o, "note             {n}")?;
    }
    writeln!(o)?;
    writeln!(o, "verdict          {}", r.verdict.line)?;
    for reason in r.verdict.reasons.iter().skip(1) {
        writeln!(o, "                 also: {reason}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_well() {
        assert_eq!(us(87.4), "87 µs");
        assert_eq!(us(1234.0), "1.23 ms");
        assert_eq!(us(2_500_000.0), "2.50 s");
        assert_eq!(us(3.25), "3.2 µs");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(12), "12");
        assert_eq!(size(64), "64 B");
        assert_eq!(size(16 * 1024), "16 KiB");
        assert_eq!(size(1536 * 1024), "1.5 MiB");
        assert_eq!(size(3 << 30), "3.0 GiB");
    }

    #[test]
    fn a_report_renders_every_section() {
        let mut r = Report::default();
        r.errors.insert("lost".into(), 1);
        r.error_samples.push(crate::errors::ErrorSample {
            kind: ErrorKind::Lost,
            id: Some(0x1_0000_0002),
            conn: 1,
            detail: "server closed".into(),
        });
        r.server = Some(super::super::ServerSection::default());
        r.verdict.line = "FAIL: x".into();
        let t = render(&r);
        for needle in [
            "throughput",
            "latency",
            "lost",
            "0x100000002",
            "receive pool",
            "verdict          FAIL: x",
        ] {
            assert!(t.contains(needle), "{needle} missing in\n{t}");
        }
    }
}

//! What the server's state dump says of a run that did not settle: each connection
//! still open on the server with the op it waits on, instead of a count mismatch.

use zerorx::runtime::{DumpStatus, IoUringOp, RuntimeDump, TaskId};

/// Connections listed in a note at most; the rest are counted.
const LISTED: usize = 8;

/// The server's open connections (every op but a listener's accept), the tasks that
/// wait on a timer and no op, and those that wait on nothing the runtime knows of, in
/// words; `None` when the dump shows none of them.
pub fn describe(dump: &RuntimeDump) -> Option<String> {
    let mut parts = Vec::new();
    let mut conns = Vec::new();
    let mut unknown = 0;
    // Tasks that wait on a timer and no op: (name, ms until the nearest).
    let mut timed: Vec<(TaskId, i64)> = Vec::new();
    for w in &dump.workers {
        if w.status != DumpStatus::Answered {
            parts.push(format!(
                "worker {} gave no full dump ({})",
                w.index, w.status
            ));
        }
        for op in &w.ops {
            // Every op but a listener's accept belongs to a connection: connected
            // sockets read `local -> peer`, one whose peer has reset has no peer left.
            if op.opcode == IoUringOp::Accept {
                continue;
            }
            let socket = op
                .socket
                .map_or("not a socket".to_string(), |s| s.to_string());
            conns.push(format!(
                "w{} fd {} ({socket}): {}{} {} for {:.1} s, {}",
                w.index,
                op.fd.unwrap_or(-1),
                op.opcode,
                if op.multishot { " multishot" } else { "" },
                op.state,
                op.age_ms as f64 / 1000.0,
                op.task
                    .map_or("no task waiting".to_string(), |t| format!("task {t}")),
            ));
        }
        unknown += w
            .waiting
            .iter()
            .filter(|t| t.ops.is_empty() && t.timers_ms.is_empty())
            .count();
        timed.extend(
            w.waiting
                .iter()
                .filter(|t| t.ops.is_empty())
                .filter_map(|t| Some((t.id, *t.timers_ms.first()?))),
        );
    }
    if !conns.is_empty() {
        let mut listed = conns[..conns.len().min(LISTED)].join("; ");
        if conns.len() > LISTED {
            listed.push_str(&format!("; and {} more", conns.len() - LISTED));
        }
        parts.push(format!("{} ops on connections: {listed}", conns.len()));
    }
    if !timed.is_empty() {
        let listed: Vec<String> = timed
            .iter()
            .take(LISTED)
            .map(|(t, ms)| format!("{t} (due in {ms} ms)"))
            .collect();
        parts.push(format!(
            "{} tasks wait on a timer and no op: {}",
            timed.len(),
            listed.join(", ")
        ));
    }
    if unknown > 0 {
        parts.push(format!(
            "{unknown} tasks wait on no op or timer (another task, a channel, a wake-up)"
        ));
    }
    (!parts.is_empty()).then(|| format!("the server's state dump: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(json: &str) -> RuntimeDump {
        serde_json::from_str(json).expect("dump json")
    }

    #[test]
    fn open_connections_are_named_with_their_op_and_listeners_are_not() {
        // A send on a socket whose peer reset has no peer address left: still listed.
        let d = dump(
            r#"{"process":{"open_fds":9,"sockets":3,"rss_bytes":null},"workers":[
            {"index":0,"status":{"kind":"answered"},"ring":null,"tasks":2,"queued":0,
             "waiting":[{"id":{"worker":0,"key":3},"ops":[1],"timers_ms":[]},
                        {"id":{"worker":0,"key":4},"ops":[],"timers_ms":[]},
                        {"id":{"worker":0,"key":5},"ops":[2],"timers_ms":[]},
                        {"id":{"worker":0,"key":6},"ops":[],"timers_ms":[25000]}],
             "ops":[{"opcode":"ACCEPT","state":"streaming","multishot":true,"fd":5,
                     "socket":{"local":"127.0.0.1:9000","peer":null},"age_ms":9000,"task":null},
                    {"opcode":"RECV","state":"streaming","multishot":true,"fd":7,
                     "socket":{"local":"127.0.0.1:9000","peer":"127.0.0.1:5555"},"age_ms":3250,
                     "task":{"worker":0,"key":3}},
                    {"opcode":"SEND","state":"pending","multishot":false,"fd":8,
                     "socket":{"local":"127.0.0.1:9000","peer":null},"age_ms":12000,
                     "task":{"worker":0,"key":5}}],
             "timers":{"pending":0,"next_ms":null},"pools":[],"receives_waiting_for_buffers":0},
            {"index":1,"status":{"kind":"no_answer","waited_ms":2000},"ring":null,"tasks":0,
             "queued":0,"waiting":[],"ops":[],"timers":{"pending":0,"next_ms":null},"pools":[],
             "receives_waiting_for_buffers":0}]}"#,
        );
        let text = describe(&d).expect("something is open");
        assert_eq!(
            text,
            "the server's state dump: worker 1 gave no full dump (no answer within 2.0 s: a \
             task that does not yield, or worker 0 while no thread is in block_on); \
             2 ops on connections: w0 fd 7 (127.0.0.1:9000 -> 127.0.0.1:5555): RECV \
             multishot streaming for 3.2 s, task w0#3; w0 fd 8 (127.0.0.1:9000): SEND \
             pending for 12.0 s, task w0#5; 1 tasks wait on a timer and no op: w0#6 (due \
             in 25000 ms); 1 tasks wait on no op or timer (another task, a channel, a \
             wake-up)"
        );
    }

    #[test]
    fn a_quiet_server_has_nothing_to_say() {
        let d = dump(
            r#"{"process":{"open_fds":9,"sockets":1,"rss_bytes":1},"workers":[
            {"index":0,"status":{"kind":"answered"},"ring":null,"tasks":1,"queued":0,
             "waiting":[{"id":{"worker":0,"key":0},"ops":[0],"timers_ms":[]}],
             "ops":[{"opcode":"ACCEPT","state":"streaming","multishot":true,"fd":5,
                     "socket":{"local":"127.0.0.1:9000","peer":null},"age_ms":9000,
                     "task":{"worker":0,"key":0}}],
             "timers":{"pending":0,"next_ms":null},"pools":[],"receives_waiting_for_buffers":0}]}"#,
        );
        assert_eq!(describe(&d), None);
    }
}

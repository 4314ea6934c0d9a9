//! `zerorx doctor` as a user runs it: the built binary, its output and exit codes.

use std::process::{Command, Output};

fn zerorx(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zerorx"))
        .args(args)
        .output()
        .expect("run zerorx")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn doctor_prints_a_table() {
    let out = zerorx(&["doctor"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    for section in [
        "io_uring",
        "setup flags",
        "opcodes",
        "QUERY",
        "ZCRX features",
        "interfaces",
        "receive mode: ",
    ] {
        assert!(text.contains(section), "missing {section:?} in\n{text}");
    }
    assert!(text.contains("RECV_ZC"));
    assert!(text.contains("lo "));
    let json = doctor_json(&[]);
    if json["receive_mode"]["mode"] == "copy" {
        assert!(text.contains("receive mode: copy"), "{text}");
    }
}

fn doctor_json(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["doctor", "--json"];
    args.extend_from_slice(extra);
    let out = zerorx(&args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("doctor --json prints JSON")
}

#[test]
fn doctor_json_has_the_capabilities() {
    let json = doctor_json(&[]);
    assert_eq!(json["io_uring"]["usable"], true);
    assert!(json["zcrx"]["recv_zc"].is_boolean());
    let interfaces = json["interfaces"].as_array().expect("interfaces array");
    let lo = interfaces
        .iter()
        .find(|i| i["name"] == "lo")
        .expect("lo listed");
    assert_eq!(lo["queue0"]["verdict"], "unavailable");
    assert!(lo["queue0"]["reason"]["fix"].is_string());
    let any_possible = interfaces
        .iter()
        .any(|i| i["has_parent_device"] == true && i["queue0"]["verdict"] == "possible");
    let expected = if any_possible { "zero-copy" } else { "copy" };
    assert_eq!(json["receive_mode"]["mode"], expected);
    assert!(json.get("queue_probe").is_none());
}

#[test]
fn doctor_json_includes_an_asked_queue() {
    let json = doctor_json(&["--interface", "no-such-if0", "--queue", "1"]);
    let probe = &json["queue_probe"];
    assert_eq!(probe["interface"], "no-such-if0");
    assert_eq!(probe["queue"], 1);
    assert_eq!(probe["result"]["verdict"], "unavailable");
    assert_eq!(probe["result"]["reason"]["name"], "NoSuchInterface");
    assert_eq!(probe["result"]["reason"]["errno_name"], "ENODEV");
}

#[test]
fn queue_without_interface_is_a_usage_error() {
    let out = zerorx(&["doctor", "--queue", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--queue needs --interface"));
    assert!(stderr(&out).contains("usage: zerorx doctor"));
    assert!(out.stdout.is_empty());
}

#[test]
fn unknown_subcommand_and_arguments_are_usage_errors() {
    for args in [
        &["frobnicate"][..],
        &[],
        &["doctor", "--bogus"],
        &["doctor", "--queue", "x", "--interface", "lo"],
    ] {
        let out = zerorx(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("usage:"), "{args:?}");
    }
}

#[test]
fn help_prints_usage() {
    let out = zerorx(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("usage: zerorx doctor"));
}

#[test]
fn doctor_shows_the_tuning_the_environment_sets() {
    let out = Command::new(env!("CARGO_BIN_EXE_zerorx"))
        .args(["doctor", "--json"])
        .env("ZERORX_WAKE", "msg-ring")
        .env("ZERORX_POOL_SIZE", "8M")
        .env_remove("ZERORX_THREADS")
        .output()
        .expect("run zerorx");
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    let tuning = json["tuning"].as_array().expect("tuning array");
    let find = |v: &str| {
        tuning
            .iter()
            .find(|s| s["variable"] == v)
            .unwrap_or_else(|| panic!("{v} missing: {tuning:?}"))
    };
    assert_eq!(find("ZERORX_WAKE")["value"], "msg-ring");
    assert_eq!(find("ZERORX_WAKE")["source"], "environment");
    assert_eq!(find("ZERORX_POOL_SIZE")["value"], "8388608");
    assert_eq!(find("ZERORX_THREADS")["source"], "default");
    let bad = Command::new(env!("CARGO_BIN_EXE_zerorx"))
        .arg("doctor")
        .env("ZERORX_THREADS", "zero")
        .output()
        .expect("run zerorx");
    let text = stdout(&bad);
    assert!(
        text.contains("invalid: ZERORX_THREADS=\"zero\" is not valid: expected a whole number"),
        "{text}"
    );
}

#[test]
fn require_fails_with_what_the_kernel_lacks() {
    // `add-area` needs Linux 7.3; on an older kernel the doctor must exit 1 and say so,
    // on a 7.3 one it passes.
    let caps = zerorx::zcrx::probe::capabilities();
    let out = zerorx(&["doctor", "--require", "recv-zc,add-area"]);
    if caps.zcrx.add_area && caps.zcrx.recv_zc {
        assert!(out.status.success(), "{}", stderr(&out));
    } else {
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(
            err.contains("is required but kernel") && err.contains("Linux"),
            "{err}"
        );
    }
    let usage = zerorx(&["doctor", "--require", "warp-drive"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(stderr(&usage).contains("unknown feature `warp-drive`"));
}

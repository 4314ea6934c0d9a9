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

//! The `zerorx` command line: `zerorx doctor` reports what this machine can do;
//! `zerorx serve` runs the reference Thrift service (`zerorx serve --help`).

use std::process::ExitCode;
use zerorx::doctor::{self, QueueProbe};
use zerorx::zcrx::probe;
use zerorx_cli::doctor_args::{self, Command};

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("serve") {
        return serve(std::env::args().skip(2));
    }
    let command = match doctor_args::parse_args(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(err) => {
            eprintln!("zerorx: {err}\n\n{}", doctor_args::USAGE);
            return ExitCode::from(2);
        }
    };
    let args = match command {
        Command::Help => {
            print!("{}", doctor_args::USAGE);
            return ExitCode::SUCCESS;
        }
        Command::Doctor(args) => args,
    };
    let caps = probe::capabilities();
    let queue = args
        .queue
        .map(|(interface, queue)| QueueProbe::run(interface, queue, args.flow));
    let tuning = zerorx::Builder::new().tuning();
    if args.json {
        match doctor::render_json(caps, queue.as_ref(), &tuning) {
            Ok(json) => println!("{json}"),
            Err(err) => {
                eprintln!("zerorx: cannot render JSON: {err}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        print!("{}", doctor::render_text(caps, queue.as_ref()));
        print!("{}", doctor::render_tuning(&tuning));
    }
    let missing: Vec<String> = args
        .require
        .iter()
        .filter_map(|r| r.missing(caps))
        .collect();
    for why in &missing {
        eprintln!("zerorx doctor: {why}");
    }
    if missing.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn serve(args: impl Iterator<Item = String>) -> ExitCode {
    use zerorx_cli::bench::serve;
    let args = match serve::parse_args(args) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{}", serve::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprintln!("zerorx serve: {err}\n\n{}", serve::USAGE);
            return ExitCode::from(2);
        }
    };
    match serve::run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("zerorx serve: {err}");
            ExitCode::FAILURE
        }
    }
}

//! The `zerorx` command line: `zerorx doctor` reports what this machine can do.

use std::process::ExitCode;
use zerorx::doctor::{self, Command, QueueProbe};
use zerorx::zcrx::probe;

fn main() -> ExitCode {
    let command = match doctor::parse_args(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(err) => {
            eprintln!("zerorx: {err}\n\n{}", doctor::USAGE);
            return ExitCode::from(2);
        }
    };
    let args = match command {
        Command::Help => {
            print!("{}", doctor::USAGE);
            return ExitCode::SUCCESS;
        }
        Command::Doctor(args) => args,
    };
    let caps = probe::capabilities();
    let queue = args.queue.map(|(interface, queue)| QueueProbe {
        result: probe::probe_queue(&interface, queue),
        interface,
        queue,
    });
    if args.json {
        match doctor::render_json(caps, queue.as_ref()) {
            Ok(json) => println!("{json}"),
            Err(err) => {
                eprintln!("zerorx: cannot render JSON: {err}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        print!("{}", doctor::render_text(caps, queue.as_ref()));
    }
    ExitCode::SUCCESS
}

//! `zerorx-stress`: load, faults and a report a person can act on.
//!
//! Exit status: 0 every reply was correct; 1 the verdict is FAIL (a reply was wrong
//! or missing, a connection failed, memory grew); 2 bad arguments; 3 the run could
//! not start or a file could not be written.

use clap::Parser;
use std::process::ExitCode;
use zerorx_stress::cli::{cpus, Cli, Command, RunArgs, ServeArgs, ServiceArg};
use zerorx_stress::report::{compare, plot, text, Report};
use zerorx_stress::run::{run, RunError};
use zerorx_stress::server::{serve, ServeConfig, Service};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Serve(a)) => run_server(&a),
        None if cli.run.compare.is_some() => run_compare(&cli.run),
        None if cli.run.soak.is_some() => run_soak(&cli.run),
        None if cli.run.hostile => run_hostile(&cli.run),
        None => run_load(&cli.run),
    }
}

fn run_server(a: &ServeArgs) -> ExitCode {
    let Ok(max_frame) = u32::try_from(a.max_frame) else {
        eprintln!("zerorx-stress serve: --max-frame must be below 4 GiB");
        return ExitCode::from(2);
    };
    let pool = match (a.pool_buffers, a.pool_buffer_size) {
        (None, None) => None,
        (n, size) => {
            let def = zerorx::zcrx::CopyPoolConfig::default();
            let Ok(size) = size.map_or(Ok(def.buffer_size), u32::try_from) else {
                eprintln!("zerorx-stress serve: --pool-buffer-size must be below 4 GiB");
                return ExitCode::from(2);
            };
            Some((n.unwrap_or(def.buffers), size))
        }
    };
    let cfg = ServeConfig {
        service: match a.service {
            ServiceArg::Frames => Service::Frames,
            ServiceArg::Rpc => Service::Rpc,
        },
        listen: a.listen,
        threads: a.threads.unwrap_or_else(cpus),
        max_frame,
        idle: a.idle_timeout,
        write_timeout: a.write_timeout,
        pool,
        receive_mode: a.receive_mode.clone(),
        control: a.control,
        duration: a.duration,
    };
    match serve(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zerorx-stress serve: {e}");
            ExitCode::from(3)
        }
    }
}

fn run_compare(a: &RunArgs) -> ExitCode {
    let Some([pa, pb]) = a.compare.as_deref() else {
        eprintln!("zerorx-stress: --compare takes two JSON reports");
        return ExitCode::from(2);
    };
    let (ra, rb) = match (compare::load(pa), compare::load(pb)) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("zerorx-stress: {e}");
            return ExitCode::from(3);
        }
    };
    let (na, nb) = (pa.display().to_string(), pb.display().to_string());
    print!("{}", compare::render(&ra, &rb, &na, &nb));
    if let Some(svg) = &a.plot {
        if let Err(e) = plot::plot(svg, &[(&na, &ra), (&nb, &rb)]) {
            eprintln!("zerorx-stress: {e}");
            return ExitCode::from(3);
        }
    }
    ExitCode::SUCCESS
}

fn run_soak(a: &RunArgs) -> ExitCode {
    use zerorx_stress::soak;
    finish(a, soak::soak(a), soak::render, |r| r.pass)
}

fn run_hostile(a: &RunArgs) -> ExitCode {
    use zerorx_stress::hostile;
    finish(a, hostile::hostile(a), hostile::render, |r| r.pass)
}

/// Prints a soak's or hostile run's report, writes its JSON, and says how it went.
fn finish<R: serde::Serialize>(
    a: &RunArgs,
    report: Result<R, RunError>,
    render: fn(&R) -> String,
    pass: fn(&R) -> bool,
) -> ExitCode {
    let report = match report {
        Ok(r) => r,
        Err(e) => return refused(e),
    };
    print!("{}", render(&report));
    if let Some(path) = &a.json {
        let written = serde_json::to_string_pretty(&report)
            .map_err(|e| format!("cannot encode the report: {e}"))
            .and_then(|json| {
                std::fs::write(path, json)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))
            });
        if let Err(e) = written {
            eprintln!("zerorx-stress: {e}");
            return ExitCode::from(3);
        }
    }
    if pass(&report) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Says why a run could not happen; exit status 2 for bad arguments, 3 otherwise.
fn refused(e: RunError) -> ExitCode {
    eprintln!("zerorx-stress: {e}");
    match e {
        RunError::Usage(_) => ExitCode::from(2),
        RunError::Setup(_) => ExitCode::from(3),
    }
}

fn run_load(a: &RunArgs) -> ExitCode {
    let report = match run(a) {
        Ok(r) => r,
        Err(e) => return refused(e),
    };
    print!("{}", text::render(&report));
    if let Err(e) = write_outputs(a, &report) {
        eprintln!("zerorx-stress: {e}");
        return ExitCode::from(3);
    }
    if report.verdict.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn write_outputs(a: &RunArgs, r: &Report) -> Result<(), String> {
    if let Some(path) = &a.json {
        let json = serde_json::to_string_pretty(r)
            .map_err(|e| format!("cannot encode the report: {e}"))?;
        std::fs::write(path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(svg) = &a.plot {
        plot::plot(svg, &[(r.scenario.name(), r)])?;
    }
    Ok(())
}

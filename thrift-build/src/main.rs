//! `zerorx-thrift-build [-I DIR]... -o OUT.rs FILE.thrift...`: the code generator
//! without a build script.

use std::process::ExitCode;

const USAGE: &str = "usage: zerorx-thrift-build [-I DIR]... -o OUT.rs FILE.thrift...\n\
  -I DIR   look for included files in DIR too\n\
  -o FILE  where to write the Rust source (- for standard output)";

fn main() -> ExitCode {
    let mut builder = zerorx_thrift_build::Builder::new();
    let mut out: Option<String> = None;
    let mut files = 0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "-I" | "-o" => {
                let Some(v) = args.next() else {
                    eprintln!("zerorx-thrift-build: {a} needs a value\n{USAGE}");
                    return ExitCode::from(2);
                };
                if a == "-I" {
                    builder = builder.include_dir(v);
                } else {
                    out = Some(v);
                }
            }
            s if s.starts_with('-') && s != "-" => {
                eprintln!("zerorx-thrift-build: unknown option {s}\n{USAGE}");
                return ExitCode::from(2);
            }
            _ => {
                builder = builder.file(a);
                files += 1;
            }
        }
    }
    let Some(out) = out else {
        eprintln!("zerorx-thrift-build: -o is required\n{USAGE}");
        return ExitCode::from(2);
    };
    if files == 0 {
        eprintln!("zerorx-thrift-build: no IDL file given\n{USAGE}");
        return ExitCode::from(2);
    }
    let text = match builder.generate() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("zerorx-thrift-build: {e}");
            return ExitCode::from(1);
        }
    };
    let written = if out == "-" {
        use std::io::Write;
        std::io::stdout().write_all(text.as_bytes())
    } else {
        std::fs::write(&out, text)
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zerorx-thrift-build: cannot write {out}: {e}");
            ExitCode::from(1)
        }
    }
}

//! Rust code for [`zerorx-thrift`](https://docs.rs/zerorx-thrift) from Thrift IDL.
//!
//! From `build.rs`:
//!
//! ```no_run
//! // build.rs
//! zerorx_thrift_build::Builder::new()
//!     .file("idl/calc.thrift")
//!     .compile()
//!     .expect("thrift code generation");
//! ```
//!
//! and in the crate, `include!(concat!(env!("OUT_DIR"), "/thrift.rs"));` puts one
//! module per IDL file (its `namespace rs`, or else its file stem, in snake case;
//! included files get theirs) where
//! the `include!` is. Without a build script, the `zerorx-thrift-build` command
//! writes the same file: `zerorx-thrift-build -o src/gen.rs idl/calc.thrift`.
//!
//! What each IDL construct becomes:
//!
//! | IDL | Rust |
//! |---|---|
//! | `struct`, `exception` | a struct with public fields; `optional` fields are `Option`; a field without a qualifier takes its default (or the IDL's `= value`) when absent, a `required` one is a decode error when absent; exceptions implement `Error` |
//! | `union` | an enum with a variant per field (exactly one on the wire) |
//! | `enum` | an `i32` newtype with a constant per value: values this IDL does not name are kept, not rejected |
//! | `typedef` | a type alias; `const` a `const` (scalars, strings, enum values) or a lazily built `static` (containers, structs) |
//! | `string`, `binary` | [`Utf8Bytes`](https://docs.rs/zerorx-thrift/latest/zerorx_thrift/struct.Utf8Bytes.html) and `Bytes`: slices of the received frame, no copy |
//! | `list`, `set`, `map` | `Vec`, `BTreeSet`, `BTreeMap` |
//! | `service S` | trait `S` (one method per IDL function, each returning a `'static` future), `SServer` to register it on a server, `SClient`, and module `s` with each method's argument struct (and, for methods with `throws`, its exception and result enums) |
//!
//! Unknown fields are skipped when decoding; decoding never panics and allocates
//! nothing by a length it has not seen the bytes of (the limits of
//! `zerorx_thrift::DecodeLimits` apply to generated types as to hand-written ones).
//! Field, method and argument names are snake case, types upper camel case, enum
//! values and consts shouty snake case; Rust keywords get the raw form (`r#type`).
//!
//! The IDL is parsed by `pilota-thrift-parser` (the parser of CloudWeGo's
//! volo/pilota); only the code generation is ours, because it targets
//! zerorx-thrift's zero-copy codec traits.

mod clash;
mod defs;
mod emit;
mod load;
mod names;
mod values;

use std::fmt;
use std::path::{Path, PathBuf};

/// Why code could not be generated: an IDL file missing or malformed, or a
/// construct that has no Rust form (the message says which file and name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    pub(crate) fn new(message: String) -> Error {
        Error { message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// What to generate, and where.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    files: Vec<PathBuf>,
    include_dirs: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    out_file: Option<String>,
}

impl Builder {
    /// Nothing yet: add files with [`file`](Self::file).
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Generates code for `path` (and every file it includes).
    pub fn file(mut self, path: impl AsRef<Path>) -> Builder {
        self.files.push(path.as_ref().to_path_buf());
        self
    }

    /// Looks for included files in `dir` too (after the including file's own
    /// directory).
    pub fn include_dir(mut self, dir: impl AsRef<Path>) -> Builder {
        self.include_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// Writes into `dir` instead of `$OUT_DIR`.
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Builder {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Names the written file (default `thrift.rs`).
    pub fn out_file(mut self, name: impl Into<String>) -> Builder {
        self.out_file = Some(name.into());
        self
    }

    /// The generated source, formatted.
    pub fn generate(&self) -> Result<String, Error> {
        Ok(self.generate_with_inputs()?.0)
    }

    fn generate_with_inputs(&self) -> Result<(String, Vec<PathBuf>), Error> {
        if self.files.is_empty() {
            return Err(Error::new("no IDL file given".into()));
        }
        let files = load::load(&self.files, &self.include_dirs)?;
        let code = emit::files(&files)?;
        let parsed = syn::parse2::<syn::File>(code.clone()).map_err(|e| {
            // Kept for the bug report: the message alone does not say where.
            let dump = std::env::temp_dir().join("zerorx-thrift-build-invalid.rs");
            let _ = std::fs::write(&dump, code.to_string());
            Error::new(format!(
                "zerorx-thrift-build produced invalid Rust (a bug; please report it with the IDL): {e}; the source is in {}",
                dump.display()
            ))
        })?;
        let text = format!(
            "// @generated by zerorx-thrift-build from {}; do not edit.\n\n{}",
            self.files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            prettyplease::unparse(&parsed)
        );
        Ok((text, files.into_iter().map(|f| f.path).collect()))
    }

    /// Generates and writes the file, returning its path. Under Cargo (`$OUT_DIR`
    /// set) it also asks Cargo to re-run the build script when an IDL file changes.
    pub fn compile(&self) -> Result<PathBuf, Error> {
        let (text, inputs) = self.generate_with_inputs()?;
        let under_cargo = std::env::var_os("OUT_DIR");
        let dir = match (&self.out_dir, &under_cargo) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => PathBuf::from(d),
            (None, None) => return Err(Error::new(
                "no output directory: OUT_DIR is not set (not in a build script); call out_dir()"
                    .into(),
            )),
        };
        let path = dir.join(self.out_file.as_deref().unwrap_or("thrift.rs"));
        // Rewriting an unchanged file would make Cargo rebuild the crate for nothing.
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text)
                .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
        }
        if under_cargo.is_some() {
            for input in inputs {
                println!("cargo:rerun-if-changed={}", input.display());
            }
        }
        Ok(path)
    }
}

//! Reading IDL files and everything they include, each parsed once.

use crate::names;
use crate::Error;
use pilota_thrift_parser::{File, FileParser, FileSource, Item};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One parsed IDL file and the Rust module it becomes.
pub(crate) struct IdlFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The Rust module its items go into: its `namespace rs` (segments joined by
    /// `_`), or else its file stem, in snake case.
    pub module: String,
    /// Its syntax tree.
    pub ast: File,
    /// Include prefix (`shared` for `include "shared.thrift"`) → index of that file.
    pub includes: HashMap<String, usize>,
}

/// Parses `roots` and, transitively, the files they include (looked up next to the
/// including file first, then in `include_dirs`).
pub(crate) fn load(roots: &[PathBuf], include_dirs: &[PathBuf]) -> Result<Vec<IdlFile>, Error> {
    let mut files: Vec<IdlFile> = Vec::new();
    let mut by_path: HashMap<PathBuf, usize> = HashMap::new();
    for root in roots {
        load_one(
            root,
            include_dirs,
            &mut files,
            &mut by_path,
            &mut Vec::new(),
        )?;
    }
    let mut modules: HashMap<&str, &Path> = HashMap::new();
    for f in &files {
        if let Some(other) = modules.insert(&f.module, &f.path) {
            return Err(Error::new(format!(
                "{} and {} would both become module `{}`: rename one of them",
                other.display(),
                f.path.display(),
                f.module
            )));
        }
    }
    Ok(files)
}

fn load_one(
    path: &Path,
    include_dirs: &[PathBuf],
    files: &mut Vec<IdlFile>,
    by_path: &mut HashMap<PathBuf, usize>,
    stack: &mut Vec<PathBuf>,
) -> Result<usize, Error> {
    let canonical = path
        .canonicalize()
        .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
    if let Some(&i) = by_path.get(&canonical) {
        return Ok(i);
    }
    if stack.contains(&canonical) {
        return Err(Error::new(format!(
            "{} includes itself (through {})",
            path.display(),
            stack
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" → ")
        )));
    }
    let text = std::fs::read_to_string(&canonical)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
    let source = FileSource::new_with_path(canonical.clone(), &text)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
    let ast = FileParser::new(source)
        .parse()
        .map_err(|e| Error::new(format!("{}: {e:?}", path.display())))?;
    let stem = canonical
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| Error::new(format!("{}: no file name", path.display())))?;
    // `namespace rs a.b` names the module (`a_b`); without one, the file stem does.
    let module = ast
        .items
        .iter()
        .find_map(|item| match item {
            Item::Namespace(ns) if ns.scope.0 == "rs" => Some(
                ns.name
                    .segments
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("_"),
            ),
            _ => None,
        })
        .map_or_else(|| names::module(stem), |ns| names::module(&ns));

    stack.push(canonical.clone());
    let mut includes = HashMap::new();
    let dir = canonical
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    for item in &ast.items {
        if let Item::Include(inc) = item {
            let found = std::iter::once(&dir)
                .chain(include_dirs)
                .map(|d| d.join(&*inc.path))
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    Error::new(format!(
                        "{}: included file \"{}\" not found next to it or in the include dirs ({})",
                        path.display(),
                        &*inc.path,
                        include_dirs
                            .iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            let prefix = Path::new(&*inc.path)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_owned();
            let index = load_one(&found, include_dirs, files, by_path, stack)?;
            includes.insert(prefix, index);
        }
    }
    stack.pop();

    files.push(IdlFile {
        path: path.to_path_buf(),
        module,
        ast,
        includes,
    });
    let index = files.len() - 1;
    by_path.insert(canonical, index);
    Ok(index)
}

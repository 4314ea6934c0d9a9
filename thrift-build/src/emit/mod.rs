//! Rust source for every loaded file: one module per file, items in IDL order.

mod plain;
mod service;
mod structs;

use crate::defs::Defs;
use crate::load::IdlFile;
use crate::names;
use crate::Error;
use pilota_thrift_parser::Item;
use std::fmt::Write;

/// The whole generated source (unformatted).
pub(crate) fn files(files: &[IdlFile]) -> Result<String, Error> {
    let d = Defs::new(files)?;
    let mut out = String::new();
    for (i, f) in files.iter().enumerate() {
        let stem = f
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out += &names::doc(&f.ast.comments, &format!("Generated from `{stem}`."));
        // IDL types nest as deep as their authors like; aliases for them are not
        // the generator's to invent.
        writeln!(
            out,
            "#[allow(clippy::type_complexity)]\npub mod {} {{",
            f.module
        )
        .unwrap();
        let mut includes: Vec<&String> = f.includes.values().map(|&j| &files[j].module).collect();
        includes.sort();
        includes.dedup();
        if !includes.is_empty() {
            let list: Vec<&str> = includes.iter().map(|s| s.as_str()).collect();
            writeln!(
                out,
                "#[allow(unused_imports)]\nuse super::{{{}}};",
                list.join(", ")
            )
            .unwrap();
        }
        for item in &f.ast.items {
            out += &match item {
                Item::Struct(s) => structs::struct_like(
                    &d,
                    i,
                    &s.name,
                    &names::type_name(&s.name),
                    &s.fields,
                    &names::doc(
                        &s.leading_comments,
                        &format!("Struct `{}`.", s.name.as_str()),
                    ),
                    structs::Kind::Struct,
                )?,
                Item::Exception(e) => structs::struct_like(
                    &d,
                    i,
                    &e.name,
                    &names::type_name(&e.name),
                    &e.fields,
                    &names::doc(
                        &e.leading_comments,
                        &format!("Exception `{}`.", e.name.as_str()),
                    ),
                    structs::Kind::Exception,
                )?,
                Item::Union(u) => structs::union(
                    &d,
                    i,
                    &u.name,
                    &u.fields,
                    &names::doc(
                        &u.leading_comments,
                        &format!("Union `{}`.", u.name.as_str()),
                    ),
                )?,
                Item::Enum(e) => plain::enumeration(&d, i, e)?,
                Item::Typedef(t) => {
                    plain::typedef(&d, i, &t.alias, &t.r#type, &t.leading_comments)?
                }
                Item::Constant(c) => plain::constant(&d, i, c)?,
                Item::Service(s) => service::service(&d, i, s)?,
                Item::Include(_) | Item::CppInclude(_) | Item::Namespace(_) => continue,
            };
        }
        out += "}\n";
    }
    Ok(out)
}

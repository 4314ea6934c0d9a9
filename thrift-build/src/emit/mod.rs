//! Rust source for every loaded file: one module per file, items in IDL order.

mod codec;
mod plain;
mod service;
mod structs;

use crate::defs::Defs;
use crate::load::IdlFile;
use crate::names::{self, ident};
use crate::Error;
use pilota_thrift_parser::Item;
use proc_macro2::TokenStream;
use quote::quote;

/// The whole generated source, as tokens.
pub(crate) fn files(files: &[IdlFile]) -> Result<TokenStream, Error> {
    let d = Defs::new(files)?;
    crate::clash::check(files)?;
    let mut out = TokenStream::new();
    for (i, f) in files.iter().enumerate() {
        let stem = f
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let doc = names::doc(&f.ast.comments, &format!("Generated from `{stem}`."));
        let mut includes: Vec<&String> = f.includes.values().map(|&j| &files[j].module).collect();
        includes.sort();
        includes.dedup();
        let uses = if includes.is_empty() {
            TokenStream::new()
        } else {
            let list = includes.iter().map(|m| ident(m));
            quote! {
                #[allow(unused_imports)]
                use super::{#(#list),*};
            }
        };
        let mut items = TokenStream::new();
        for item in &f.ast.items {
            items.extend(match item {
                Item::Struct(s) => structs::struct_like(
                    &d,
                    i,
                    &s.name,
                    &names::type_name(&s.name),
                    &s.fields,
                    names::doc(
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
                    names::doc(
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
                    names::doc(
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
            });
        }
        let module = ident(&f.module);
        // IDL types nest as deep as their authors like; aliases for them are not
        // the generator's to invent.
        out.extend(quote! {
            #doc
            #[allow(clippy::type_complexity)]
            pub mod #module {
                #uses
                #items
            }
        });
    }
    Ok(out)
}

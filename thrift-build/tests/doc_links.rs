//! Every intra-doc link the generator writes (`` [`Name`] `` with no target of its
//! own) names an item of the module it is in: a link spelt with the IDL's name
//! where the Rust name differs (an acronym service) is a broken link in the user's
//! docs. `cargo doc -D warnings` on zerorx-thrift-test checks the same on its IDLs.

use std::collections::BTreeSet;
use syn::{Attribute, Item};
use zerorx_thrift_build::Builder;

/// The doc text of `attrs`.
fn docs(attrs: &[Attribute]) -> String {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `` [`X`] `` links without a `(target)` after them.
fn links(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = doc;
    while let Some(start) = rest.find("[`") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("`]") else { break };
        let target = &after[..end];
        let tail = &after[end + 2..];
        if !tail.starts_with('(') && !tail.starts_with('[') {
            out.push(target.to_owned());
        }
        rest = tail;
    }
    out
}

/// Every doc string on `item` and on what it contains (fields, variants, trait and
/// impl items).
fn item_docs(item: &Item) -> Vec<String> {
    let mut out = Vec::new();
    match item {
        Item::Struct(s) => {
            out.push(docs(&s.attrs));
            out.extend(s.fields.iter().map(|f| docs(&f.attrs)));
        }
        Item::Enum(e) => {
            out.push(docs(&e.attrs));
            out.extend(e.variants.iter().map(|v| docs(&v.attrs)));
        }
        Item::Trait(t) => {
            out.push(docs(&t.attrs));
            out.extend(t.items.iter().map(|i| match i {
                syn::TraitItem::Fn(f) => docs(&f.attrs),
                _ => String::new(),
            }));
        }
        Item::Impl(i) => out.extend(i.items.iter().map(|i| match i {
            syn::ImplItem::Fn(f) => docs(&f.attrs),
            syn::ImplItem::Const(c) => docs(&c.attrs),
            _ => String::new(),
        })),
        Item::Fn(f) => out.push(docs(&f.attrs)),
        Item::Const(c) => out.push(docs(&c.attrs)),
        Item::Static(s) => out.push(docs(&s.attrs)),
        Item::Type(t) => out.push(docs(&t.attrs)),
        Item::Mod(m) => out.push(docs(&m.attrs)),
        _ => {}
    }
    out
}

/// The names a link in `items`' module can reach: its items, the functions and
/// constants of its impls (as `Self::x`), and (for a service's module, which
/// glob-imports its parent) the parent's.
fn names(items: &[Item], parent: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = parent.clone();
    for item in items {
        let ident = match item {
            Item::Struct(s) => Some(&s.ident),
            Item::Enum(e) => Some(&e.ident),
            Item::Trait(t) => Some(&t.ident),
            Item::Fn(f) => Some(&f.sig.ident),
            Item::Const(c) => Some(&c.ident),
            Item::Static(s) => Some(&s.ident),
            Item::Type(t) => Some(&t.ident),
            Item::Mod(m) => Some(&m.ident),
            Item::Impl(i) => {
                for ii in &i.items {
                    match ii {
                        syn::ImplItem::Fn(f) => out.insert(format!("Self::{}", f.sig.ident)),
                        syn::ImplItem::Const(c) => out.insert(format!("Self::{}", c.ident)),
                        _ => false,
                    };
                }
                None
            }
            _ => None,
        };
        if let Some(i) = ident {
            out.insert(i.to_string().trim_start_matches("r#").to_owned());
        }
    }
    out
}

/// Broken links in `items` (recursing into modules), as `module: link`.
fn broken(path: &str, items: &[Item], parent: &BTreeSet<String>, out: &mut Vec<String>) {
    let here = names(items, parent);
    for item in items {
        for doc in item_docs(item) {
            for l in links(&doc) {
                if !here.contains(&l) {
                    out.push(format!("{path}: [`{l}`]"));
                }
            }
        }
        if let Item::Mod(m) = item {
            if let Some((_, inner)) = &m.content {
                let glob = inner
                    .iter()
                    .any(|i| matches!(i, Item::Use(u) if quote_free(&u.tree) == "super::*"));
                let empty = BTreeSet::new();
                broken(
                    &format!("{path}::{}", m.ident),
                    inner,
                    if glob { &here } else { &empty },
                    out,
                );
            }
        }
    }
}

/// A `use` tree as text (`super::*`).
fn quote_free(tree: &syn::UseTree) -> String {
    match tree {
        syn::UseTree::Path(p) => format!("{}::{}", p.ident, quote_free(&p.tree)),
        syn::UseTree::Glob(_) => "*".into(),
        syn::UseTree::Name(n) => n.ident.to_string(),
        _ => String::new(),
    }
}

#[test]
fn every_generated_doc_link_names_an_item_in_scope() {
    let dir =
        std::env::temp_dir().join(format!("zerorx-thrift-build-links-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("base.thrift"),
        "service HTTPBase { void ping() }\nenum HTTPStatus { OK = 200 }",
    )
    .unwrap();
    std::fs::write(
        dir.join("kv.thrift"),
        "include \"base.thrift\"\n\
         exception KVError { 1: string message }\n\
         union URLOrID { 1: string url, 2: i64 id }\n\
         /** An acronym service. */\n\
         service KV extends base.HTTPBase {\n\
           binary getValue(1: string key) throws (1: KVError notFound)\n\
           oneway void fireAndForget(1: i32 x)\n\
           URLOrID pick(1: URLOrID u)\n\
         }",
    )
    .unwrap();
    let code = Builder::new()
        .file(dir.join("kv.thrift"))
        .generate()
        .unwrap();
    let file = syn::parse_file(&code).unwrap();
    let mut wrong = Vec::new();
    broken("crate", &file.items, &BTreeSet::new(), &mut wrong);
    assert!(wrong.is_empty(), "broken doc links:\n{}", wrong.join("\n"));
    // The checker sees links at all.
    assert!(code.contains("[`KvServer`]"), "{code}");
}

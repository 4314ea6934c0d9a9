//! IDL names as Rust names (and the names of what the generator adds beside them:
//! a service's server, client and argument types), and IDL comments as doc
//! attributes. The emitters and the clash check ask here, so both see the same
//! spelling.

use heck::{ToShoutySnakeCase, ToSnakeCase, ToUpperCamelCase};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// Words Rust reserves; a name that is one gets the raw form (`r#type`), or an
/// underscore where raw identifiers are not allowed.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// `self`, `super`, `crate` and `Self` cannot be raw identifiers.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate"];

/// The associated functions a generated client has besides its methods: a method
/// of the same name gets a `_` after it.
const CLIENT_OWN: &[&str] = &[
    "new",
    "multiplexed",
    "connect",
    "connect_unix",
    "method_name",
    "client",
];

fn escape(name: String, empty: &str) -> String {
    if name.is_empty() {
        // An IDL name of underscores only: case conversion leaves nothing.
        empty.to_owned()
    } else if NOT_RAW.contains(&name.as_str()) {
        format!("{name}_")
    } else if KEYWORDS.contains(&name.as_str()) {
        format!("r#{name}")
    } else if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{name}")
    } else {
        name
    }
}

/// A type, trait or variant name (`UpperCamelCase`).
pub(crate) fn type_name(idl: &str) -> String {
    escape(idl.to_upper_camel_case(), "Unnamed")
}

/// A field, function or argument name (`snake_case`).
pub(crate) fn value_name(idl: &str) -> String {
    escape(idl.to_snake_case(), "unnamed")
}

/// A module name from a file stem or service name.
pub(crate) fn module(idl: &str) -> String {
    escape(idl.to_snake_case(), "unnamed")
}

/// A constant or enum value name (`SHOUTY_SNAKE_CASE`).
pub(crate) fn const_name(idl: &str) -> String {
    escape(idl.to_shouty_snake_case(), "UNNAMED")
}

/// The struct that registers service `idl`'s handlers on a server.
pub(crate) fn server_name(idl: &str) -> String {
    format!("{}Server", type_name(idl))
}

/// Service `idl`'s typed client.
pub(crate) fn client_name(idl: &str) -> String {
    format!("{}Client", type_name(idl))
}

/// Method `idl`'s argument struct.
pub(crate) fn args_name(idl: &str) -> String {
    format!("{}Args", type_name(idl))
}

/// The enum of method `idl`'s declared exceptions.
pub(crate) fn exception_name(idl: &str) -> String {
    format!("{}Exception", type_name(idl))
}

/// The reply of method `idl` when it declares exceptions.
pub(crate) fn result_name(idl: &str) -> String {
    format!("{}Result", type_name(idl))
}

/// Method `idl` on the client (its own functions keep their names).
pub(crate) fn client_method(idl: &str) -> String {
    let name = value_name(idl);
    if CLIENT_OWN.contains(&name.as_str()) {
        format!("{name}_")
    } else {
        name
    }
}

/// The functions of a generated client that are not methods of the service.
pub(crate) fn client_own() -> &'static [&'static str] {
    CLIENT_OWN
}

/// The constant every generated enum has beside its values.
pub(crate) const ENUM_VALUES: &str = "VALUES";

/// A name from this module as an identifier token (`r#type` as a raw one).
pub(crate) fn ident(name: &str) -> Ident {
    match name.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, Span::call_site()),
        None => Ident::new(name, Span::call_site()),
    }
}

/// Doc lines from an IDL comment (`//`, `#`, `/* */` or `/** */` markers removed),
/// or `fallback` when there is none.
fn doc_lines(comments: &str, fallback: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for raw in comments.lines() {
        let mut l = raw.trim();
        for marker in ["/**", "/*", "//", "*/", "*"] {
            if let Some(rest) = l.strip_prefix(marker) {
                l = rest;
                break;
            }
        }
        let l = l.strip_suffix("*/").unwrap_or(l).trim_end();
        lines.push(l.strip_prefix(' ').unwrap_or(l).to_owned());
    }
    while lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines.remove(0);
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    if lines.is_empty() {
        lines.push(fallback.to_owned());
    }
    lines
}

/// Doc attributes from an IDL comment, or `fallback` when there is none.
pub(crate) fn doc(comments: &str, fallback: &str) -> TokenStream {
    docs(&doc_lines(comments, fallback))
}

/// Doc attributes, one per line.
pub(crate) fn docs<S: AsRef<str>>(lines: &[S]) -> TokenStream {
    // A space after `///`, as a written doc comment has.
    let lines = lines.iter().map(|l| format!(" {}", l.as_ref()));
    quote!(#(#[doc = #lines])*)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_rust_conventions_and_avoid_keywords() {
        assert_eq!(type_name("Xtruct"), "Xtruct");
        assert_eq!(type_name("bools"), "Bools");
        assert_eq!(value_name("testVoid"), "test_void");
        assert_eq!(value_name("type"), "r#type");
        assert_eq!(value_name("self"), "self_");
        assert_eq!(const_name("myNumberz"), "MY_NUMBERZ");
        assert_eq!(module("ThriftTest"), "thrift_test");
        assert_eq!(value_name("__"), "unnamed");
        assert_eq!(ident("r#type").to_string(), "r#type");
    }

    #[test]
    fn generated_names_use_the_rust_spelling_of_the_idl_name() {
        assert_eq!(server_name("KV"), "KvServer");
        assert_eq!(client_name("KV"), "KvClient");
        assert_eq!(args_name("getTTL"), "GetTtlArgs");
        assert_eq!(client_method("new"), "new_");
        assert_eq!(client_method("getIt"), "get_it");
    }

    #[test]
    fn comments_lose_their_markers() {
        assert_eq!(doc_lines("// Returns it.", "x"), ["Returns it."]);
        assert_eq!(
            doc_lines("/**\n * One.\n * Two.\n */", "x"),
            ["One.", "Two."]
        );
        assert_eq!(doc_lines("", "fallback"), ["fallback"]);
        assert_eq!(
            doc("", "fallback").to_string(),
            quote!(#[doc = " fallback"]).to_string()
        );
    }
}

//! IDL names as Rust names, and IDL comments as doc comments.

use heck::{ToShoutySnakeCase, ToSnakeCase, ToUpperCamelCase};

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

fn escape(name: String) -> String {
    if NOT_RAW.contains(&name.as_str()) {
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
    escape(idl.to_upper_camel_case())
}

/// A field, function or argument name (`snake_case`).
pub(crate) fn value_name(idl: &str) -> String {
    escape(idl.to_snake_case())
}

/// A module name from a file stem or service name.
pub(crate) fn module(idl: &str) -> String {
    escape(idl.to_snake_case())
}

/// A constant or enum value name (`SHOUTY_SNAKE_CASE`).
pub(crate) fn const_name(idl: &str) -> String {
    escape(idl.to_shouty_snake_case())
}

/// Doc-comment lines from an IDL comment (`//`, `#`, `/* */` or `/** */` markers
/// removed), or `fallback` when there is none.
pub(crate) fn doc(comments: &str, fallback: &str) -> String {
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
        .iter()
        .map(|l| format!("#[doc = {:?}]\n", format!(" {l}")))
        .collect()
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
    }

    #[test]
    fn comments_lose_their_markers() {
        assert_eq!(doc("// Returns it.", "x"), "#[doc = \" Returns it.\"]\n");
        assert_eq!(
            doc("/**\n * One.\n * Two.\n */", "x"),
            "#[doc = \" One.\"]\n#[doc = \" Two.\"]\n"
        );
        assert_eq!(doc("", "fallback"), "#[doc = \" fallback\"]\n");
    }
}

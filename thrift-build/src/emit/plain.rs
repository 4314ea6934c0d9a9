//! Enums, typedefs and constants.

use crate::defs::Defs;
use crate::names;
use crate::values;
use crate::Error;
use pilota_thrift_parser::{Constant, Enum, Type};
use std::fmt::Write;

/// An enum as an `i32` newtype with a constant per named value, so a value this
/// IDL does not name (a peer built from a newer IDL) is kept, not rejected.
pub(crate) fn enumeration<'a>(d: &Defs<'a>, file: usize, e: &'a Enum) -> Result<String, Error> {
    let name = names::type_name(&e.name);
    let mut values: Vec<(String, &str, i32, &str)> = Vec::new();
    let mut next: i64 = 0;
    for v in &e.values {
        let n = v.value.map(|c| c.0).unwrap_or(next);
        let n32 = i32::try_from(n).map_err(|_| {
            Error::new(format!(
                "{}: {}.{} = {n} does not fit in i32",
                d.where_(file),
                e.name.as_str(),
                v.name.as_str()
            ))
        })?;
        next = n + 1;
        values.push((
            names::const_name(&v.name),
            v.name.as_str(),
            n32,
            &v.leading_comments,
        ));
    }
    let mut out = names::doc(&e.leading_comments, &format!("Enum `{}`.", e.name.as_str()));
    out += "///\n/// A value the IDL does not name is kept as it came (see [`Self::name`]).\n";
    writeln!(
        out,
        "#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]\npub struct {name}(pub i32);"
    )
    .unwrap();
    writeln!(out, "impl {name} {{").unwrap();
    for (c, idl, n, comments) in &values {
        out += &names::doc(comments, &format!("`{idl}` = {n}."));
        writeln!(out, "pub const {c}: {name} = {name}({n});").unwrap();
    }
    out += "/// Every value the IDL names, in its order.\n";
    writeln!(
        out,
        "pub const VALUES: &'static [{name}] = &[{}];",
        values
            .iter()
            .map(|(c, ..)| format!("{name}::{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
    .unwrap();
    out += "/// The IDL's name for this value (the first, if several share it), or `None`.\n";
    out += "pub fn name(self) -> ::std::option::Option<&'static str> {\nmatch self.0 {\n";
    let mut seen = std::collections::HashSet::new();
    for (_, idl, n, _) in &values {
        if seen.insert(*n) {
            writeln!(out, "{n} => ::std::option::Option::Some({idl:?}),").unwrap();
        }
    }
    out += "_ => ::std::option::Option::None,\n}\n}\n}\n";
    writeln!(
        out,
        "impl ::std::fmt::Debug for {name} {{\n\
         fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {{\n\
         match self.name() {{\n\
         ::std::option::Option::Some(n) => f.write_str(n),\n\
         ::std::option::Option::None => write!(f, \"{name}({{}})\", self.0),\n\
         }} }} }}\n\
         impl ::zerorx_thrift::ThriftType for {name} {{ const TTYPE: ::zerorx_thrift::TType = ::zerorx_thrift::TType::I32; }}\n\
         impl ::zerorx_thrift::Detach for {name} {{ fn detach(self) -> Self {{ self }} }}\n\
         impl ::zerorx_thrift::ThriftEncode for {name} {{\n\
         fn encode<W: ::zerorx_thrift::ProtocolWrite>(&self, w: &mut W) {{ w.write_i32(self.0) }} }}\n\
         impl ::zerorx_thrift::ThriftDecode for {name} {{\n\
         fn decode<R: ::zerorx_thrift::ProtocolRead>(r: &mut R) -> ::std::result::Result<Self, ::zerorx_thrift::DecodeError> {{\n\
         ::std::result::Result::Ok({name}(r.read_i32()?)) }} }}"
    )
    .unwrap();
    Ok(out)
}

/// `typedef T Alias` → `pub type Alias = T;`
pub(crate) fn typedef<'a>(
    d: &Defs<'a>,
    file: usize,
    alias: &str,
    ty: &'a Type,
    comments: &str,
) -> Result<String, Error> {
    Ok(format!(
        "{}pub type {} = {};\n",
        names::doc(comments, &format!("Typedef `{alias}`.")),
        names::type_name(alias),
        d.rust_type(file, &ty.0)?
    ))
}

/// A constant: a `const` for scalars, strings and enum values, a lazily built
/// `static` for containers and structs.
pub(crate) fn constant<'a>(d: &Defs<'a>, file: usize, c: &'a Constant) -> Result<String, Error> {
    let name = names::const_name(&c.name);
    let ty = d.rust_type(file, &c.r#type.0)?;
    let value = values::expr(d, file, &c.r#type.0, &c.value)?;
    let doc = names::doc(
        &c.leading_comments,
        &format!("Const `{}`.", c.name.as_str()),
    );
    Ok(if values::const_able(d, file, &c.r#type.0)? {
        format!("{doc}pub const {name}: {ty} = {value};\n")
    } else {
        format!(
            "{doc}pub static {name}: ::std::sync::LazyLock<{ty}> = ::std::sync::LazyLock::new(|| {value});\n"
        )
    })
}

//! Structs, exceptions, argument structs and unions: the Rust type and its codec.

use crate::defs::Defs;
use crate::names;
use crate::values;
use crate::Error;
use pilota_thrift_parser::{Attribute, Field};
use std::fmt::Write;

/// What kind of struct-like is emitted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Struct,
    Exception,
    /// A method's arguments: no argument is required when decoding (Apache's
    /// servers run a call with an argument missing, and the IDL parser marks every
    /// argument `required`), so an absent one takes its default.
    Args,
}

/// One field as the generated code sees it.
struct FieldCode<'a> {
    idl: &'a Field,
    name: String,
    /// The value's type (boxed when the field closes a cycle), without `Option`.
    ty: String,
    boxed: bool,
    optional: bool,
    default: Option<String>,
    /// The default is a constant expression (no allocation to defer).
    cheap_default: bool,
    defaultable: bool,
}

fn fields<'a>(
    d: &Defs<'a>,
    file: usize,
    owner: (usize, &str),
    idl: &'a [Field],
) -> Result<Vec<FieldCode<'a>>, Error> {
    let mut out = Vec::new();
    for f in idl {
        if i16::try_from(f.id).is_err() {
            return Err(Error::new(format!(
                "{}: field `{}` has id {}, outside i16",
                d.where_(file),
                f.name.as_str(),
                f.id
            )));
        }
        let mut ty = d.rust_type(file, &f.ty.0)?;
        let boxed = d.reaches(file, &f.ty.0, owner)?;
        if boxed {
            ty = format!("::std::boxed::Box<{ty}>");
        }
        let default = match &f.default {
            Some(v) => {
                let e = values::expr(d, file, &f.ty.0, v)?;
                Some(if boxed {
                    format!("::std::boxed::Box::new({e})")
                } else {
                    e
                })
            }
            None => None,
        };
        out.push(FieldCode {
            idl: f,
            name: names::value_name(&f.name),
            ty,
            boxed,
            optional: f.attribute == Attribute::Optional,
            default,
            cheap_default: !boxed && values::const_able(d, file, &f.ty.0)?,
            defaultable: d.field_defaultable(file, f)?,
        });
    }
    Ok(out)
}

fn derives<'a>(
    d: &Defs<'a>,
    file: usize,
    idl: &'a [Field],
    default: bool,
) -> Result<String, Error> {
    let mut list = vec!["Clone", "Debug", "PartialEq"];
    let mut orderable = true;
    for f in idl {
        orderable &= d.orderable(file, &f.ty.0)?;
    }
    if orderable {
        list.extend(["Eq", "Hash", "PartialOrd", "Ord"]);
    }
    if default {
        list.push("Default");
    }
    Ok(format!("#[derive({})]\n", list.join(", ")))
}

/// A struct (or exception, or a method's argument struct) and its codec.
pub(crate) fn struct_like<'a>(
    d: &Defs<'a>,
    file: usize,
    idl_name: &str,
    rust_name: &str,
    idl_fields: &'a [Field],
    doc: &str,
    kind: Kind,
) -> Result<String, Error> {
    let fs = fields(d, file, (file, idl_name), idl_fields)?;
    let all_default = fs.iter().all(|f| f.defaultable);
    let custom_default = all_default && fs.iter().any(|f| f.default.is_some() && !f.optional);
    let mut out = String::new();
    out += doc;
    out += &derives(d, file, idl_fields, all_default && !custom_default)?;
    writeln!(out, "pub struct {rust_name} {{").unwrap();
    for f in &fs {
        out += &names::doc(
            &f.idl.leading_comments,
            &format!("Field {} (`{}`).", f.idl.id, f.idl.name.as_str()),
        );
        if f.optional {
            writeln!(out, "pub {}: ::std::option::Option<{}>,", f.name, f.ty).unwrap();
        } else {
            writeln!(out, "pub {}: {},", f.name, f.ty).unwrap();
        }
    }
    out += "}\n";

    if custom_default {
        writeln!(
            out,
            "impl ::std::default::Default for {rust_name} {{ fn default() -> Self {{ Self {{"
        )
        .unwrap();
        for f in &fs {
            let v = match (&f.default, f.optional) {
                (Some(e), false) => e.clone(),
                _ => "::std::default::Default::default()".into(),
            };
            writeln!(out, "{}: {v},", f.name).unwrap();
        }
        out += "} } }\n";
    }

    out += &thrift_type(rust_name);
    out += &detach_struct(rust_name, &fs);
    // Encoding.
    writeln!(
        out,
        "impl ::zerorx_thrift::ThriftEncode for {rust_name} {{\n\
         fn encode<W: ::zerorx_thrift::ProtocolWrite>(&self, w: &mut W) {{\n\
         w.write_struct_begin();"
    )
    .unwrap();
    for f in &fs {
        if f.optional {
            writeln!(
                out,
                "if let ::std::option::Option::Some(v) = &self.{} {{ ::zerorx_thrift::write_field(w, {}, v); }}",
                f.name, f.idl.id
            )
            .unwrap();
        } else {
            writeln!(
                out,
                "::zerorx_thrift::write_field(w, {}, &self.{});",
                f.idl.id, f.name
            )
            .unwrap();
        }
    }
    out += "w.write_field_stop();\nw.write_struct_end();\n} }\n";

    // Decoding.
    writeln!(
        out,
        "impl ::zerorx_thrift::ThriftDecode for {rust_name} {{\n\
         fn decode<R: ::zerorx_thrift::ProtocolRead>(r: &mut R) -> ::std::result::Result<Self, ::zerorx_thrift::DecodeError> {{"
    )
    .unwrap();
    if fs.is_empty() {
        writeln!(
            out,
            "::zerorx_thrift::read_struct(r, |_, _| ::std::result::Result::Ok(false))?;\n\
             ::std::result::Result::Ok({rust_name} {{}})\n}} }}"
        )
        .unwrap();
        if kind == Kind::Exception {
            out += &exception_impls(rust_name, &fs);
        }
        return Ok(out);
    }
    // Each local's type comes from the field it fills.
    for i in 0..fs.len() {
        writeln!(out, "let mut f{i} = ::std::option::Option::None;").unwrap();
    }
    out += "::zerorx_thrift::read_struct(r, |r, h| {\nmatch h.id {\n";
    for (i, f) in fs.iter().enumerate() {
        writeln!(
            out,
            "{} => if let ::std::option::Option::Some(v) = ::zerorx_thrift::read_field(r, h)? {{ f{i} = ::std::option::Option::Some(v); }},",
            f.idl.id
        )
        .unwrap();
    }
    out +=
        "_ => return ::std::result::Result::Ok(false),\n}\n::std::result::Result::Ok(true)\n})?;\n";
    writeln!(out, "::std::result::Result::Ok({rust_name} {{").unwrap();
    for (i, f) in fs.iter().enumerate() {
        let v = if f.optional {
            format!("f{i}")
        } else if let (Some(e), true) = (&f.default, f.cheap_default) {
            format!("f{i}.unwrap_or({e})")
        } else if let Some(e) = &f.default {
            format!("f{i}.unwrap_or_else(|| {e})")
        } else if (f.idl.attribute == Attribute::Required && kind != Kind::Args) || !f.defaultable {
            format!(
                "::zerorx_thrift::required(f{i}, {:?}, {:?})?",
                idl_name,
                f.idl.name.as_str()
            )
        } else {
            format!("f{i}.unwrap_or_default()")
        };
        writeln!(out, "{}: {v},", f.name).unwrap();
    }
    out += "})\n} }\n";
    if kind == Kind::Exception {
        out += &exception_impls(rust_name, &fs);
    }
    Ok(out)
}

fn exception_impls(rust_name: &str, fs: &[FieldCode]) -> String {
    // Shows a `message`/`msg`/`reason` string field when there is one, else the
    // whole value.
    let text = fs.iter().find(|f| {
        matches!(f.idl.name.as_str(), "message" | "msg" | "reason" | "why")
            && f.ty == "::zerorx_thrift::Utf8Bytes"
            && !f.optional
            && !f.boxed
    });
    let body = match text {
        Some(f) => format!("write!(f, \"{rust_name}: {{}}\", self.{})", f.name),
        None => format!("write!(f, \"{rust_name}: {{:?}}\", self)"),
    };
    format!(
        "impl ::std::fmt::Display for {rust_name} {{\n\
         fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {{ {body} }} }}\n\
         impl ::std::error::Error for {rust_name} {{}}\n"
    )
}

/// `impl Detach` for a struct: each field detached.
fn detach_struct(rust_name: &str, fs: &[FieldCode]) -> String {
    let mut out = format!(
        "impl ::zerorx_thrift::Detach for {rust_name} {{\n\
         fn detach(self) -> Self {{ Self {{\n"
    );
    for f in fs {
        writeln!(
            out,
            "{0}: ::zerorx_thrift::Detach::detach(self.{0}),",
            f.name
        )
        .unwrap();
    }
    out += "} } }\n";
    out
}

/// `impl ThriftType` for a struct-like.
pub(crate) fn thrift_type(rust_name: &str) -> String {
    format!(
        "impl ::zerorx_thrift::ThriftType for {rust_name} {{ const TTYPE: ::zerorx_thrift::TType = ::zerorx_thrift::TType::Struct; }}\n"
    )
}

/// A union: a Rust enum with a variant per field; exactly one is on the wire.
pub(crate) fn union<'a>(
    d: &Defs<'a>,
    file: usize,
    idl_name: &str,
    idl_fields: &'a [Field],
    doc: &str,
) -> Result<String, Error> {
    if idl_fields.is_empty() {
        return Err(Error::new(format!(
            "{}: union `{idl_name}` has no fields, so no value of it can exist",
            d.where_(file)
        )));
    }
    let rust_name = names::type_name(idl_name);
    let fs = fields(d, file, (file, idl_name), idl_fields)?;
    let mut out = String::new();
    out += doc;
    out += &derives(d, file, idl_fields, false)?;
    out += "#[allow(clippy::large_enum_variant, clippy::enum_variant_names)]\n";
    writeln!(out, "pub enum {rust_name} {{").unwrap();
    for f in &fs {
        out += &names::doc(
            &f.idl.leading_comments,
            &format!("Field {} (`{}`).", f.idl.id, f.idl.name.as_str()),
        );
        writeln!(out, "{}({}),", names::type_name(&f.idl.name), f.ty).unwrap();
    }
    out += "}\n";
    out += &thrift_type(&rust_name);
    writeln!(
        out,
        "impl ::zerorx_thrift::Detach for {rust_name} {{\n\
         fn detach(self) -> Self {{\nmatch self {{"
    )
    .unwrap();
    for f in &fs {
        writeln!(
            out,
            "{rust_name}::{0}(v) => {rust_name}::{0}(::zerorx_thrift::Detach::detach(v)),",
            names::type_name(&f.idl.name)
        )
        .unwrap();
    }
    out += "} } }\n";
    writeln!(
        out,
        "impl ::zerorx_thrift::ThriftEncode for {rust_name} {{\n\
         fn encode<W: ::zerorx_thrift::ProtocolWrite>(&self, w: &mut W) {{\n\
         w.write_struct_begin();\nmatch self {{"
    )
    .unwrap();
    for f in &fs {
        writeln!(
            out,
            "{rust_name}::{}(v) => ::zerorx_thrift::write_field(w, {}, v),",
            names::type_name(&f.idl.name),
            f.idl.id
        )
        .unwrap();
    }
    out += "}\nw.write_field_stop();\nw.write_struct_end();\n} }\n";
    writeln!(
        out,
        "impl ::zerorx_thrift::ThriftDecode for {rust_name} {{\n\
         fn decode<R: ::zerorx_thrift::ProtocolRead>(r: &mut R) -> ::std::result::Result<Self, ::zerorx_thrift::DecodeError> {{\n\
         let mut out: ::std::option::Option<{rust_name}> = ::std::option::Option::None;\n\
         let mut set = 0usize;\n\
         ::zerorx_thrift::read_struct(r, |r, h| {{\nmatch h.id {{"
    )
    .unwrap();
    for f in &fs {
        writeln!(
            out,
            "{} => if let ::std::option::Option::Some(v) = ::zerorx_thrift::read_field(r, h)? {{ out = ::std::option::Option::Some({rust_name}::{}(v)); set += 1; }},",
            f.idl.id,
            names::type_name(&f.idl.name)
        )
        .unwrap();
    }
    writeln!(
        out,
        "_ => return ::std::result::Result::Ok(false),\n}}\n::std::result::Result::Ok(true)\n}})?;\n\
         match out {{\n\
         ::std::option::Option::Some(v) if set == 1 => ::std::result::Result::Ok(v),\n\
         _ => ::std::result::Result::Err(::zerorx_thrift::DecodeError::UnionFields {{ union: {idl_name:?}, set }}),\n\
         }}\n}} }}"
    )
    .unwrap();
    Ok(out)
}

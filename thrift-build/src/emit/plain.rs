//! Enums, typedefs and constants.

use crate::defs::Defs;
use crate::names::{self, ident};
use crate::values;
use crate::Error;
use pilota_thrift_parser::{Constant, Enum, Type};
use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// An enum as an `i32` newtype with a constant per named value, so a value this
/// IDL does not name (a peer built from a newer IDL) is kept, not rejected.
pub(crate) fn enumeration<'a>(
    d: &Defs<'a>,
    file: usize,
    e: &'a Enum,
) -> Result<TokenStream, Error> {
    let name = ident(&names::type_name(&e.name));
    let mut consts = Vec::new();
    let mut value_names = Vec::new();
    // `VALUES` lists every constant, in IDL order.
    let mut listed = Vec::new();
    let mut next: i64 = 0;
    let mut seen = std::collections::HashSet::new();
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
        let c = ident(&names::const_name(&v.name));
        let doc = names::doc(
            &v.leading_comments,
            &format!("`{}` = {n32}.", v.name.as_str()),
        );
        let lit = Literal::i32_unsuffixed(n32);
        consts.push(quote!(#doc pub const #c: #name = #name(#lit);));
        // The first IDL name of a value names it.
        if seen.insert(n32) {
            let idl = v.name.as_str();
            value_names.push(quote!(#lit => ::std::option::Option::Some(#idl),));
        }
        listed.push(c);
    }
    let values_const = ident(names::ENUM_VALUES);
    let doc = names::doc(&e.leading_comments, &format!("Enum `{}`.", e.name.as_str()));
    let unnamed = format!("{name}({{}})");
    Ok(quote! {
        #doc
        #[doc = ""]
        #[doc = " A value the IDL does not name is kept as it came (see [`Self::name`])."]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct #name(pub i32);
        impl #name {
            #(#consts)*
            #[doc = " Every value the IDL names, in its order."]
            pub const #values_const: &'static [#name] = &[#(#name::#listed),*];
            #[doc = " The IDL's name for this value (the first, if several share it), or `None`."]
            pub fn name(self) -> ::std::option::Option<&'static str> {
                match self.0 {
                    #(#value_names)*
                    _ => ::std::option::Option::None,
                }
            }
        }
        impl ::std::fmt::Debug for #name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self.name() {
                    ::std::option::Option::Some(n) => f.write_str(n),
                    ::std::option::Option::None => ::std::write!(f, #unnamed, self.0),
                }
            }
        }
        impl ::zerorx_thrift::ThriftType for #name {
            const TTYPE: ::zerorx_thrift::TType = ::zerorx_thrift::TType::I32;
        }
        impl ::zerorx_thrift::Detach for #name {
            fn detach(self) -> Self { self }
        }
        impl ::zerorx_thrift::ThriftEncode for #name {
            fn encode<W: ::zerorx_thrift::ProtocolWrite>(&self, w: &mut W) { w.write_i32(self.0) }
        }
        impl ::zerorx_thrift::ThriftDecode for #name {
            fn decode<R: ::zerorx_thrift::ProtocolRead>(
                r: &mut R,
            ) -> ::std::result::Result<Self, ::zerorx_thrift::DecodeError> {
                ::std::result::Result::Ok(#name(r.read_i32()?))
            }
        }
    })
}

/// `typedef T Alias` → `pub type Alias = T;`
pub(crate) fn typedef<'a>(
    d: &Defs<'a>,
    file: usize,
    alias: &str,
    ty: &'a Type,
    comments: &str,
) -> Result<TokenStream, Error> {
    let doc = names::doc(comments, &format!("Typedef `{alias}`."));
    let name = ident(&names::type_name(alias));
    let ty = d.rust_type(file, &ty.0)?;
    Ok(quote!(#doc pub type #name = #ty;))
}

/// A constant: a `const` for scalars, strings and enum values, a lazily built
/// `static` for containers and structs.
pub(crate) fn constant<'a>(
    d: &Defs<'a>,
    file: usize,
    c: &'a Constant,
) -> Result<TokenStream, Error> {
    let name = ident(&names::const_name(&c.name));
    let ty = d.rust_type(file, &c.r#type.0)?;
    let value = values::expr(d, file, &c.r#type.0, &c.value)?;
    let doc = names::doc(
        &c.leading_comments,
        &format!("Const `{}`.", c.name.as_str()),
    );
    Ok(if values::const_able(d, file, &c.r#type.0)? {
        quote!(#doc pub const #name: #ty = #value;)
    } else {
        quote! {
            #doc
            pub static #name: ::std::sync::LazyLock<#ty> = ::std::sync::LazyLock::new(|| #value);
        }
    })
}

//! Structs, exceptions, argument structs and unions: the Rust type and its codec.

use super::codec;
use crate::defs::Defs;
use crate::names::{self, ident};
use crate::values;
use crate::Error;
use pilota_thrift_parser::{Attribute, Field};
use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

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
    name: Ident,
    /// The value's type (boxed when the field closes a cycle), without `Option`.
    ty: TokenStream,
    boxed: bool,
    optional: bool,
    /// The IDL type is `string` (through typedefs too).
    string: bool,
    default: Option<TokenStream>,
    /// The default is a constant expression (no allocation to defer).
    cheap_default: bool,
    defaultable: bool,
}

impl FieldCode<'_> {
    /// The field id, as the match arm and `write_field` take it (`fields` refused an
    /// id outside i16).
    fn id(&self) -> Literal {
        Literal::i16_unsuffixed(self.idl.id as i16)
    }

    /// `Field 3 (`name`).`, or the IDL's comment.
    fn doc(&self) -> TokenStream {
        names::doc(
            &self.idl.leading_comments,
            &format!("Field {} (`{}`).", self.idl.id, self.idl.name.as_str()),
        )
    }
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
            ty = quote!(::std::boxed::Box<#ty>);
        }
        let default = match &f.default {
            Some(v) => {
                let e = values::expr(d, file, &f.ty.0, v)?;
                Some(if boxed {
                    quote!(::std::boxed::Box::new(#e))
                } else {
                    e
                })
            }
            None => None,
        };
        out.push(FieldCode {
            idl: f,
            name: ident(&names::value_name(&f.name)),
            ty,
            boxed,
            optional: f.attribute == Attribute::Optional,
            string: d.is_string(file, &f.ty.0)?,
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
) -> Result<TokenStream, Error> {
    let mut list = vec![quote!(Clone), quote!(Debug), quote!(PartialEq)];
    let mut orderable = true;
    for f in idl {
        orderable &= d.orderable(file, &f.ty.0)?;
    }
    if orderable {
        list.extend([quote!(Eq), quote!(Hash), quote!(PartialOrd), quote!(Ord)]);
    }
    if default {
        list.push(quote!(Default));
    }
    Ok(quote!(#[derive(#(#list),*)]))
}

/// A struct (or exception, or a method's argument struct) and its codec.
pub(crate) fn struct_like<'a>(
    d: &Defs<'a>,
    file: usize,
    idl_name: &str,
    rust_name: &str,
    idl_fields: &'a [Field],
    doc: TokenStream,
    kind: Kind,
) -> Result<TokenStream, Error> {
    let fs = fields(d, file, (file, idl_name), idl_fields)?;
    let name = ident(rust_name);
    let all_default = fs.iter().all(|f| f.defaultable);
    let custom_default = all_default && fs.iter().any(|f| f.default.is_some() && !f.optional);
    let derives = derives(d, file, idl_fields, all_default && !custom_default)?;
    let decls = fs.iter().map(|f| {
        let (doc, n, ty) = (f.doc(), &f.name, &f.ty);
        if f.optional {
            quote!(#doc pub #n: ::std::option::Option<#ty>,)
        } else {
            quote!(#doc pub #n: #ty,)
        }
    });
    let mut out = quote! {
        #doc
        #derives
        pub struct #name { #(#decls)* }
    };
    if custom_default {
        let inits = fs.iter().map(|f| {
            let n = &f.name;
            match (&f.default, f.optional) {
                (Some(e), false) => quote!(#n: #e,),
                _ => quote!(#n: ::std::default::Default::default(),),
            }
        });
        out.extend(quote! {
            impl ::std::default::Default for #name {
                fn default() -> Self { Self { #(#inits)* } }
            }
        });
    }
    out.extend(codec::thrift_type(&name));
    out.extend(detach_struct(&name, &fs));

    let writes = fs.iter().map(|f| {
        let (n, id) = (&f.name, f.id());
        if f.optional {
            quote! {
                if let ::std::option::Option::Some(v) = &self.#n {
                    ::zerorx_thrift::write_field(w, #id, v);
                }
            }
        } else {
            quote!(::zerorx_thrift::write_field(w, #id, &self.#n);)
        }
    });
    out.extend(codec::encode_impl(
        &name,
        quote! {
            w.write_struct_begin();
            #(#writes)*
            w.write_field_stop();
            w.write_struct_end();
        },
    ));

    // Each local's type comes from the field it fills.
    let locals: Vec<Ident> = (0..fs.len()).map(|i| format_ident!("f{i}")).collect();
    let arms = fs
        .iter()
        .zip(&locals)
        .map(|(f, local)| (f.id(), quote!(#local = ::std::option::Option::Some(v);)));
    let read = codec::read_fields(arms.collect());
    let inits = fs.iter().zip(&locals).map(|(f, local)| {
        let value = if f.optional {
            quote!(#local)
        } else if let (Some(e), true) = (&f.default, f.cheap_default) {
            quote!(#local.unwrap_or(#e))
        } else if let Some(e) = &f.default {
            quote!(#local.unwrap_or_else(|| #e))
        } else if (f.idl.attribute == Attribute::Required && kind != Kind::Args) || !f.defaultable {
            let field = f.idl.name.as_str();
            quote!(::zerorx_thrift::required(#local, #idl_name, #field)?)
        } else {
            quote!(#local.unwrap_or_default())
        };
        let n = &f.name;
        quote!(#n: #value,)
    });
    out.extend(codec::decode_impl(
        &name,
        quote! {
            #(let mut #locals = ::std::option::Option::None;)*
            #read
            ::std::result::Result::Ok(#name { #(#inits)* })
        },
    ));
    if kind == Kind::Exception {
        out.extend(exception_impls(&name, &fs));
    }
    Ok(out)
}

/// `Display` and `Error` for an exception.
fn exception_impls(name: &Ident, fs: &[FieldCode]) -> TokenStream {
    // Shows a `message`/`msg`/`reason`/`why` string field when there is one, else
    // the whole value.
    let text = fs.iter().find(|f| {
        matches!(f.idl.name.as_str(), "message" | "msg" | "reason" | "why")
            && f.string
            && !f.optional
            && !f.boxed
    });
    let shown = format!("{name}: {{}}");
    let body = match text {
        Some(f) => {
            let n = &f.name;
            quote!(::std::write!(f, #shown, self.#n))
        }
        None => {
            let shown = format!("{name}: {{:?}}");
            quote!(::std::write!(f, #shown, self))
        }
    };
    quote! {
        impl ::std::fmt::Display for #name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result { #body }
        }
        impl ::std::error::Error for #name {}
    }
}

/// `impl Detach` for a struct: each field detached.
fn detach_struct(name: &Ident, fs: &[FieldCode]) -> TokenStream {
    let each = fs.iter().map(|f| {
        let n = &f.name;
        quote!(#n: ::zerorx_thrift::Detach::detach(self.#n),)
    });
    quote! {
        impl ::zerorx_thrift::Detach for #name {
            fn detach(self) -> Self { Self { #(#each)* } }
        }
    }
}

/// A union: a Rust enum with a variant per field; exactly one is on the wire.
pub(crate) fn union<'a>(
    d: &Defs<'a>,
    file: usize,
    idl_name: &str,
    idl_fields: &'a [Field],
    doc: TokenStream,
) -> Result<TokenStream, Error> {
    if idl_fields.is_empty() {
        return Err(Error::new(format!(
            "{}: union `{idl_name}` has no fields, so no value of it can exist",
            d.where_(file)
        )));
    }
    let name = ident(&names::type_name(idl_name));
    let fs = fields(d, file, (file, idl_name), idl_fields)?;
    let variants: Vec<Ident> = fs
        .iter()
        .map(|f| ident(&names::type_name(&f.idl.name)))
        .collect();
    let derives = derives(d, file, idl_fields, false)?;
    let decls = fs.iter().zip(&variants).map(|(f, v)| {
        let (doc, ty) = (f.doc(), &f.ty);
        quote!(#doc #v(#ty),)
    });
    let ids: Vec<Literal> = fs.iter().map(FieldCode::id).collect();
    let mut out = quote! {
        #doc
        #derives
        #[allow(clippy::large_enum_variant, clippy::enum_variant_names)]
        pub enum #name { #(#decls)* }
    };
    out.extend(codec::thrift_type(&name));
    out.extend(quote! {
        impl ::zerorx_thrift::Detach for #name {
            fn detach(self) -> Self {
                match self {
                    #(#name::#variants(v) => #name::#variants(::zerorx_thrift::Detach::detach(v)),)*
                }
            }
        }
    });
    out.extend(codec::encode_impl(
        &name,
        quote! {
            w.write_struct_begin();
            match self {
                #(#name::#variants(v) => ::zerorx_thrift::write_field(w, #ids, v),)*
            }
            w.write_field_stop();
            w.write_struct_end();
        },
    ));
    let read = codec::read_fields(
        ids.iter()
            .zip(&variants)
            .map(|(id, v)| {
                (
                    id.clone(),
                    quote! {
                        out = ::std::option::Option::Some(#name::#v(v));
                        set += 1;
                    },
                )
            })
            .collect(),
    );
    out.extend(codec::decode_impl(
        &name,
        quote! {
            let mut out: ::std::option::Option<#name> = ::std::option::Option::None;
            let mut set = 0usize;
            #read
            match out {
                ::std::option::Option::Some(v) if set == 1 => ::std::result::Result::Ok(v),
                _ => ::std::result::Result::Err(
                    ::zerorx_thrift::DecodeError::UnionFields { union: #idl_name, set },
                ),
            }
        },
    ));
    Ok(out)
}

//! The parts of a generated codec every struct-like type shares: its `ThriftType`,
//! the `encode`/`decode` skeletons, and the one field-reading loop each decoder
//! (struct, union, a method's result) runs.

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{quote, ToTokens};

/// `impl ThriftType` for a struct-like.
pub(crate) fn thrift_type(name: &impl ToTokens) -> TokenStream {
    quote! {
        impl ::zerorx_thrift::ThriftType for #name {
            const TTYPE: ::zerorx_thrift::TType = ::zerorx_thrift::TType::Struct;
        }
    }
}

/// `impl ThriftEncode for name` with `body` writing `self` into `w`.
pub(crate) fn encode_impl(name: &Ident, body: TokenStream) -> TokenStream {
    quote! {
        impl ::zerorx_thrift::ThriftEncode for #name {
            fn encode<W: ::zerorx_thrift::ProtocolWrite>(&self, w: &mut W) { #body }
        }
    }
}

/// `impl ThriftDecode for name` with `body` reading from `r`.
pub(crate) fn decode_impl(name: &Ident, body: TokenStream) -> TokenStream {
    quote! {
        impl ::zerorx_thrift::ThriftDecode for #name {
            fn decode<R: ::zerorx_thrift::ProtocolRead>(
                r: &mut R,
            ) -> ::std::result::Result<Self, ::zerorx_thrift::DecodeError> {
                #body
            }
        }
    }
}

/// Reads a struct from `r`: each field whose id has an arm is decoded into `v` and
/// the arm's statements run; a field of another id, or of another type than the
/// arm's (`read_field` gives `None`), is skipped.
pub(crate) fn read_fields(arms: Vec<(Literal, TokenStream)>) -> TokenStream {
    if arms.is_empty() {
        return quote!(::zerorx_thrift::read_struct(r, |_, _| ::std::result::Result::Ok(false))?;);
    }
    let (ids, then): (Vec<_>, Vec<_>) = arms.into_iter().unzip();
    quote! {
        ::zerorx_thrift::read_struct(r, |r, h| {
            match h.id {
                #(#ids => if let ::std::option::Option::Some(v) = ::zerorx_thrift::read_field(r, h)? { #then },)*
                _ => return ::std::result::Result::Ok(false),
            }
            ::std::result::Result::Ok(true)
        })?;
    }
}

//! IDL constant values (consts and field defaults) as Rust expressions.

use crate::defs::{join, Def, Defs, Found};
use crate::names;
use crate::Error;
use pilota_thrift_parser::{ConstValue, Ty};
use proc_macro2::{Literal, TokenStream};
use quote::{quote, ToTokens};

/// True when a value of `ty` can be a Rust `const` (no heap allocation: no
/// containers or structs).
pub(crate) fn const_able<'a>(d: &Defs<'a>, from: usize, ty: &'a Ty) -> Result<bool, Error> {
    let r = d.resolve(from, ty)?;
    Ok(match r.ty {
        Ty::List { .. } | Ty::Set { .. } | Ty::Map { .. } => false,
        Ty::Path(_) => matches!(
            d.named(&r)?,
            Some(Found {
                def: Def::Enum(_),
                ..
            })
        ),
        _ => true,
    })
}

/// The Rust expression for `v` as a value of `ty`, in file `from`'s module.
pub(crate) fn expr<'a>(
    d: &Defs<'a>,
    from: usize,
    ty: &'a Ty,
    v: &'a ConstValue,
) -> Result<TokenStream, Error> {
    let bad = |what: &str| {
        Err(Error::new(format!(
            "{}: {what} is not a valid value of this type",
            d.where_(from)
        )))
    };
    if let ConstValue::Path(p) = v {
        return path_expr(d, from, &p.segments);
    }
    let r = d.resolve(from, ty)?;
    let file = r.file;
    let each = |value: &'a Ty, items: &'a [ConstValue]| {
        items
            .iter()
            .map(|i| expr(d, file, value, i))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(match (r.ty, v) {
        (Ty::Bool, ConstValue::Bool(b)) => quote!(#b),
        (Ty::Bool, ConstValue::Int(i)) => {
            let b = i.0 != 0;
            quote!(#b)
        }
        (Ty::Byte | Ty::I8, ConstValue::Int(i)) => int::<i8>(d, from, i.0, Literal::i8_suffixed)?,
        (Ty::I16, ConstValue::Int(i)) => int::<i16>(d, from, i.0, Literal::i16_suffixed)?,
        (Ty::I32, ConstValue::Int(i)) => int::<i32>(d, from, i.0, Literal::i32_suffixed)?,
        (Ty::I64, ConstValue::Int(i)) => Literal::i64_suffixed(i.0).into_token_stream(),
        (Ty::Double, ConstValue::Int(i)) => double(d, from, i.0 as f64)?,
        (Ty::Double, ConstValue::Double(x)) => match x.0.parse::<f64>() {
            Ok(x) => double(d, from, x)?,
            Err(_) => return bad(&format!("`{}`", &*x.0)),
        },
        (Ty::String, ConstValue::String(s)) => {
            let s: &str = s;
            quote!(::zerorx_thrift::Utf8Bytes::from_static(#s))
        }
        (Ty::Binary, ConstValue::String(s)) => {
            let b = Literal::byte_string(s.as_bytes());
            quote!(::zerorx_thrift::bytes::Bytes::from_static(#b))
        }
        (Ty::List { value, .. }, ConstValue::List(items)) => {
            let items = each(value, items)?;
            quote!(::std::vec![#(#items),*])
        }
        (Ty::Set { value, .. }, ConstValue::List(items)) => {
            let items = each(value, items)?;
            quote!(::std::collections::BTreeSet::from([#(#items),*]))
        }
        (Ty::Map { key, value, .. }, ConstValue::Map(pairs)) => {
            let pairs = pairs
                .iter()
                .map(|(k, v)| {
                    let (k, v) = (expr(d, file, key, k)?, expr(d, file, value, v)?);
                    Ok(quote!((#k, #v)))
                })
                .collect::<Result<Vec<_>, Error>>()?;
            quote!(::std::collections::BTreeMap::from([#(#pairs),*]))
        }
        (Ty::Path(_), _) => match (d.named(&r)?, v) {
            (
                Some(
                    f @ Found {
                        def: Def::Enum(_), ..
                    },
                ),
                ConstValue::Int(i),
            ) => {
                let t = d.path_to(from, f.file, &names::type_name(f.name));
                let n = int::<i32>(d, from, i.0, Literal::i32_suffixed)?;
                quote!(#t(#n))
            }
            (
                Some(
                    f @ Found {
                        def: Def::Struct(s) | Def::Exception(s),
                        ..
                    },
                ),
                ConstValue::Map(pairs),
            ) => {
                let t = d.path_to(from, f.file, &names::type_name(f.name));
                let mut fields = Vec::new();
                for (k, v) in pairs {
                    let ConstValue::String(k) = k else {
                        return bad("a struct literal key that is not a field name");
                    };
                    let Some(field) = s.fields.iter().find(|x| x.name.as_str() == &**k) else {
                        return bad(&format!("field `{}` (no such field)", &**k));
                    };
                    let mut e = expr(d, f.file, &field.ty.0, v)?;
                    if field.attribute == pilota_thrift_parser::Attribute::Optional {
                        e = quote!(::std::option::Option::Some(#e));
                    }
                    let name = names::ident(&names::value_name(&field.name));
                    fields.push(quote!(#name: #e));
                }
                let rest = (fields.len() < s.fields.len())
                    .then(|| quote!(..::std::default::Default::default()));
                quote!(#t { #(#fields,)* #rest })
            }
            _ => return bad("this literal"),
        },
        _ => return bad("this literal"),
    })
}

/// An integer literal of type `T` (suffixed by `lit`), or an error when `v` does not
/// fit in it.
fn int<T: TryFrom<i64>>(
    d: &Defs,
    from: usize,
    v: i64,
    lit: fn(T) -> Literal,
) -> Result<TokenStream, Error> {
    match T::try_from(v) {
        Ok(n) => Ok(lit(n).into_token_stream()),
        Err(_) => Err(Error::new(format!(
            "{}: {v} does not fit in {}",
            d.where_(from),
            std::any::type_name::<T>()
        ))),
    }
}

/// An `f64` literal (a value Rust can write: finite).
fn double(d: &Defs, from: usize, x: f64) -> Result<TokenStream, Error> {
    if x.is_finite() {
        Ok(Literal::f64_suffixed(x).into_token_stream())
    } else {
        Err(Error::new(format!(
            "{}: {x} is not a finite double",
            d.where_(from)
        )))
    }
}

/// A value named by a path: a const (`NAME`, `prefix.NAME`) or an enum value
/// (`Enum.VALUE`, `prefix.Enum.VALUE`).
fn path_expr<'a>(
    d: &Defs<'a>,
    from: usize,
    segs: &'a [pilota_thrift_parser::Ident],
) -> Result<TokenStream, Error> {
    let (found, used) = d.lookup(from, segs).ok_or_else(|| {
        Error::new(format!(
            "{}: `{}` names no constant or enum value",
            d.where_(from),
            join(segs)
        ))
    })?;
    let rest = &segs[used..];
    match (found.def, rest) {
        (Def::Const(c), []) => {
            let name = d.path_to(from, found.file, &names::const_name(found.name));
            if const_able(d, found.file, &c.r#type.0)? {
                Ok(name)
            } else {
                Ok(quote!(::std::clone::Clone::clone(&*#name)))
            }
        }
        (Def::Enum(e), [value]) if e.values.iter().any(|v| v.name.as_str() == value.as_str()) => {
            let t = d.path_to(from, found.file, &names::type_name(found.name));
            let value = names::ident(&names::const_name(value));
            Ok(quote!(#t::#value))
        }
        _ => Err(Error::new(format!(
            "{}: `{}` names no constant or enum value",
            d.where_(from),
            join(segs)
        ))),
    }
}

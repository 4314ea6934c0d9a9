//! IDL constant values (consts and field defaults) as Rust expressions.

use crate::defs::{join, Def, Defs, Found};
use crate::names;
use crate::Error;
use pilota_thrift_parser::{ConstValue, Ty};

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
) -> Result<String, Error> {
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
    Ok(match (r.ty, v) {
        (Ty::Bool, ConstValue::Bool(b)) => b.to_string(),
        (Ty::Bool, ConstValue::Int(i)) => (i.0 != 0).to_string(),
        (Ty::Byte | Ty::I8, ConstValue::Int(i)) => int::<i8>(d, from, i.0, "i8")?,
        (Ty::I16, ConstValue::Int(i)) => int::<i16>(d, from, i.0, "i16")?,
        (Ty::I32, ConstValue::Int(i)) => int::<i32>(d, from, i.0, "i32")?,
        (Ty::I64, ConstValue::Int(i)) => format!("{}i64", i.0),
        (Ty::Double, ConstValue::Int(i)) => format!("{}.0f64", i.0),
        (Ty::Double, ConstValue::Double(x)) => {
            let s: &str = &x.0;
            if s.contains(['.', 'e', 'E']) {
                format!("{s}f64")
            } else {
                format!("{s}.0f64")
            }
        }
        (Ty::String, ConstValue::String(s)) => {
            format!("::zerorx_thrift::Utf8Bytes::from_static({:?})", &**s)
        }
        (Ty::Binary, ConstValue::String(s)) => format!(
            "::zerorx_thrift::bytes::Bytes::from_static({:?}.as_bytes())",
            &**s
        ),
        (Ty::List { value, .. }, ConstValue::List(items)) => format!(
            "::std::vec![{}]",
            items
                .iter()
                .map(|i| expr(d, file, value, i))
                .collect::<Result<Vec<_>, _>>()?
                .join(", ")
        ),
        (Ty::Set { value, .. }, ConstValue::List(items)) => format!(
            "::std::collections::BTreeSet::from([{}])",
            items
                .iter()
                .map(|i| expr(d, file, value, i))
                .collect::<Result<Vec<_>, _>>()?
                .join(", ")
        ),
        (Ty::Map { key, value, .. }, ConstValue::Map(pairs)) => format!(
            "::std::collections::BTreeMap::from([{}])",
            pairs
                .iter()
                .map(|(k, v)| Ok(format!(
                    "({}, {})",
                    expr(d, file, key, k)?,
                    expr(d, file, value, v)?
                )))
                .collect::<Result<Vec<_>, Error>>()?
                .join(", ")
        ),
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
                format!("{t}({})", int::<i32>(d, from, i.0, "i32")?)
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
                        e = format!("::std::option::Option::Some({e})");
                    }
                    fields.push(format!("{}: {e}", names::value_name(&field.name)));
                }
                if fields.len() < s.fields.len() {
                    fields.push("..::std::default::Default::default()".into());
                }
                format!("{t} {{ {} }}", fields.join(", "))
            }
            _ => return bad("this literal"),
        },
        _ => return bad("this literal"),
    })
}

fn int<T: TryFrom<i64>>(d: &Defs, from: usize, v: i64, name: &str) -> Result<String, Error> {
    if T::try_from(v).is_err() {
        return Err(Error::new(format!(
            "{}: {v} does not fit in {name}",
            d.where_(from)
        )));
    }
    Ok(format!("{v}{name}"))
}

/// A value named by a path: a const (`NAME`, `prefix.NAME`) or an enum value
/// (`Enum.VALUE`, `prefix.Enum.VALUE`).
fn path_expr<'a>(
    d: &Defs<'a>,
    from: usize,
    segs: &'a [pilota_thrift_parser::Ident],
) -> Result<String, Error> {
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
                Ok(format!("::std::clone::Clone::clone(&*{name})"))
            }
        }
        (Def::Enum(e), [value]) if e.values.iter().any(|v| v.name.as_str() == value.as_str()) => {
            Ok(format!(
                "{}::{}",
                d.path_to(from, found.file, &names::type_name(found.name)),
                names::const_name(value)
            ))
        }
        _ => Err(Error::new(format!(
            "{}: `{}` names no constant or enum value",
            d.where_(from),
            join(segs)
        ))),
    }
}

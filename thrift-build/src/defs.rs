//! What every name in the IDL refers to, and the facts about types the code
//! depends on: their Rust spelling, whether they can be ordered and hashed (map keys,
//! set elements), defaulted, or must be boxed to break a cycle.

use crate::load::IdlFile;
use crate::names;
use crate::Error;
use pilota_thrift_parser::{Attribute, Constant, Enum, Field, Ident, Item, StructLike, Ty, Type};
use proc_macro2::TokenStream;
use quote::quote;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// A named definition.
#[derive(Clone, Copy)]
pub(crate) enum Def<'a> {
    Struct(&'a StructLike),
    Union(&'a StructLike),
    Exception(&'a StructLike),
    Enum(&'a Enum),
    Typedef(&'a Type),
    Const(&'a Constant),
    Service,
}

/// A definition and the file it is in.
#[derive(Clone, Copy)]
pub(crate) struct Found<'a> {
    pub file: usize,
    pub name: &'a str,
    pub def: Def<'a>,
}

/// A type with typedefs followed, and the file its names resolve in.
pub(crate) struct Resolved<'a> {
    pub file: usize,
    pub ty: &'a Ty,
}

/// Every file's definitions by name.
pub(crate) struct Defs<'a> {
    pub files: &'a [IdlFile],
    by_file: Vec<HashMap<&'a str, Def<'a>>>,
    orderable: RefCell<HashMap<(usize, &'a str), bool>>,
    defaultable: RefCell<HashMap<(usize, &'a str), bool>>,
}

impl<'a> Defs<'a> {
    pub(crate) fn new(files: &'a [IdlFile]) -> Result<Defs<'a>, Error> {
        let mut by_file = Vec::new();
        for f in files {
            let mut map = HashMap::new();
            for item in &f.ast.items {
                let (name, def): (&Ident, Def) = match item {
                    Item::Struct(s) => (&s.name, Def::Struct(s)),
                    Item::Union(u) => (&u.name, Def::Union(u)),
                    Item::Exception(e) => (&e.name, Def::Exception(e)),
                    Item::Enum(e) => (&e.name, Def::Enum(e)),
                    Item::Typedef(t) => (&t.alias, Def::Typedef(&t.r#type)),
                    Item::Constant(c) => (&c.name, Def::Const(c)),
                    Item::Service(s) => (&s.name, Def::Service),
                    _ => continue,
                };
                if map.insert(name.as_str(), def).is_some() {
                    return Err(Error::new(format!(
                        "{}: `{}` is defined twice",
                        f.path.display(),
                        name.as_str()
                    )));
                }
            }
            by_file.push(map);
        }
        Ok(Defs {
            files,
            by_file,
            orderable: RefCell::default(),
            defaultable: RefCell::default(),
        })
    }

    /// The file a location's messages name.
    pub(crate) fn where_(&self, file: usize) -> String {
        self.files[file].path.display().to_string()
    }

    /// Looks up `a`, `prefix.a`, or (for enum values and consts) the first segments
    /// of `Enum.VALUE` / `prefix.Enum.VALUE`: returns what the path names and how many
    /// segments that used.
    pub(crate) fn lookup(&self, from: usize, segs: &[Ident]) -> Option<(Found<'a>, usize)> {
        let local = |file: usize, name: &str| {
            self.by_file[file].get_key_value(name).map(|(n, d)| Found {
                file,
                name: n,
                def: *d,
            })
        };
        if let Some(inc) = segs
            .first()
            .and_then(|s| self.files[from].includes.get(s.as_str()))
        {
            if segs.len() >= 2 {
                if let Some(f) = local(*inc, segs[1].as_str()) {
                    return Some((f, 2));
                }
            }
        }
        local(from, segs.first()?.as_str()).map(|f| (f, 1))
    }

    /// Looks up a whole path that must name a definition.
    pub(crate) fn lookup_all(&self, from: usize, segs: &[Ident]) -> Result<Found<'a>, Error> {
        match self.lookup(from, segs) {
            Some((f, n)) if n == segs.len() => Ok(f),
            _ => Err(Error::new(format!(
                "{}: `{}` is not defined (an include missing?)",
                self.where_(from),
                join(segs)
            ))),
        }
    }

    /// The Rust path from file `from`'s module to a definition of file `to`.
    pub(crate) fn path_to(&self, from: usize, to: usize, rust_name: &str) -> TokenStream {
        let name = names::ident(rust_name);
        if from == to {
            quote!(#name)
        } else {
            let module = names::ident(&self.files[to].module);
            quote!(#module::#name)
        }
    }

    /// Follows typedefs.
    pub(crate) fn resolve(&self, from: usize, ty: &'a Ty) -> Result<Resolved<'a>, Error> {
        let mut cur = Resolved { file: from, ty };
        for _ in 0..64 {
            let Ty::Path(p) = cur.ty else {
                return Ok(cur);
            };
            let found = self.lookup_all(cur.file, &p.segments)?;
            match found.def {
                Def::Typedef(t) => {
                    cur = Resolved {
                        file: found.file,
                        ty: &t.0,
                    }
                }
                _ => return Ok(cur),
            }
        }
        Err(Error::new(format!("{}: typedefs loop", self.where_(from))))
    }

    /// The named definition a resolved type is (none for built-in types).
    pub(crate) fn named(&self, r: &Resolved<'a>) -> Result<Option<Found<'a>>, Error> {
        match r.ty {
            Ty::Path(p) => self.lookup_all(r.file, &p.segments).map(Some),
            _ => Ok(None),
        }
    }

    /// The Rust type of an IDL type, as written in file `from`'s module.
    pub(crate) fn rust_type(&self, from: usize, ty: &'a Ty) -> Result<TokenStream, Error> {
        Ok(match ty {
            Ty::String => quote!(::zerorx_thrift::Utf8Bytes),
            Ty::Binary => quote!(::zerorx_thrift::bytes::Bytes),
            Ty::Bool => quote!(bool),
            Ty::Byte | Ty::I8 => quote!(i8),
            Ty::I16 => quote!(i16),
            Ty::I32 => quote!(i32),
            Ty::I64 => quote!(i64),
            Ty::Double => quote!(f64),
            Ty::Uuid => quote!(::zerorx_thrift::Uuid),
            Ty::Void => quote!(()),
            Ty::List { value, .. } => {
                let v = self.rust_type(from, value)?;
                quote!(::std::vec::Vec<#v>)
            }
            Ty::Set { value, .. } => {
                self.require_orderable(from, value, "a set element")?;
                let v = self.rust_type(from, value)?;
                quote!(::std::collections::BTreeSet<#v>)
            }
            Ty::Map { key, value, .. } => {
                self.require_orderable(from, key, "a map key")?;
                let (k, v) = (self.rust_type(from, key)?, self.rust_type(from, value)?);
                quote!(::std::collections::BTreeMap<#k, #v>)
            }
            Ty::Path(p) => {
                let found = self.lookup_all(from, &p.segments)?;
                match found.def {
                    Def::Const(_) | Def::Service => {
                        return Err(Error::new(format!(
                            "{}: `{}` is not a type",
                            self.where_(from),
                            join(&p.segments)
                        )))
                    }
                    _ => self.path_to(from, found.file, &names::type_name(found.name)),
                }
            }
        })
    }

    /// True when `ty` is `string`, directly or through typedefs.
    pub(crate) fn is_string(&self, from: usize, ty: &'a Ty) -> Result<bool, Error> {
        Ok(matches!(self.resolve(from, ty)?.ty, Ty::String))
    }

    fn require_orderable(&self, from: usize, ty: &'a Ty, role: &str) -> Result<(), Error> {
        if self.orderable(from, ty)? {
            Ok(())
        } else {
            Err(Error::new(format!(
                "{}: a type holding a `double` cannot be {role} (sets and maps are ordered \
                 by their keys, and `double` has no total order)",
                self.where_(from)
            )))
        }
    }

    /// True when values of `ty` have a total order, equality and hash (no `double`
    /// anywhere inside).
    pub(crate) fn orderable(&self, from: usize, ty: &'a Ty) -> Result<bool, Error> {
        let r = self.resolve(from, ty)?;
        Ok(match r.ty {
            Ty::Double => false,
            Ty::List { value, .. } | Ty::Set { value, .. } => self.orderable(r.file, value)?,
            Ty::Map { key, value, .. } => {
                self.orderable(r.file, key)? && self.orderable(r.file, value)?
            }
            Ty::Path(_) => match self.named(&r)? {
                Some(Found {
                    file,
                    name,
                    def: Def::Struct(s) | Def::Union(s) | Def::Exception(s),
                }) => {
                    if let Some(v) = self.orderable.borrow().get(&(file, name)) {
                        return Ok(*v);
                    }
                    // Assumed orderable while its own fields are checked (a cycle
                    // adds nothing that is not already being checked).
                    self.orderable.borrow_mut().insert((file, name), true);
                    let mut all = true;
                    for f in &s.fields {
                        all &= self.orderable(file, &f.ty.0)?;
                    }
                    self.orderable.borrow_mut().insert((file, name), all);
                    all
                }
                _ => true,
            },
            _ => true,
        })
    }

    /// True when `ty` has a `Default` in the generated code: everything but unions and
    /// structs with a field that has none.
    pub(crate) fn defaultable(&self, from: usize, ty: &'a Ty) -> Result<bool, Error> {
        let r = self.resolve(from, ty)?;
        Ok(match self.named(&r)? {
            Some(Found {
                def: Def::Union(_), ..
            }) => false,
            Some(Found {
                file,
                name,
                def: Def::Struct(s) | Def::Exception(s),
            }) => {
                if let Some(v) = self.defaultable.borrow().get(&(file, name)) {
                    return Ok(*v);
                }
                self.defaultable.borrow_mut().insert((file, name), true);
                let mut all = true;
                for f in &s.fields {
                    all &= self.field_defaultable(file, f)?;
                }
                self.defaultable.borrow_mut().insert((file, name), all);
                all
            }
            _ => true,
        })
    }

    /// True when a field has a value to take when it is absent from the input.
    pub(crate) fn field_defaultable(&self, file: usize, f: &'a Field) -> Result<bool, Error> {
        Ok(f.attribute == Attribute::Optional
            || f.default.is_some()
            || self.defaultable(file, &f.ty.0)?)
    }

    /// True when the struct-like `target` (in `target_file`) is reachable from `ty`
    /// without passing through a container: such a field must be boxed, or the type
    /// would have infinite size.
    pub(crate) fn reaches(
        &self,
        from: usize,
        ty: &'a Ty,
        target: (usize, &str),
    ) -> Result<bool, Error> {
        let mut seen = HashSet::new();
        self.reaches_inner(from, ty, target, &mut seen)
    }

    fn reaches_inner(
        &self,
        from: usize,
        ty: &'a Ty,
        target: (usize, &str),
        seen: &mut HashSet<(usize, &'a str)>,
    ) -> Result<bool, Error> {
        let r = self.resolve(from, ty)?;
        if let Some(Found {
            file,
            name,
            def: Def::Struct(s) | Def::Union(s) | Def::Exception(s),
        }) = self.named(&r)?
        {
            if (file, name) == target {
                return Ok(true);
            }
            if !seen.insert((file, name)) {
                return Ok(false);
            }
            for f in &s.fields {
                if self.reaches_inner(file, &f.ty.0, target, seen)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

/// `a.b.c`
pub(crate) fn join(segs: &[Ident]) -> String {
    segs.iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

//! Two IDL definitions whose Rust names are one: different IDL names can meet after
//! case conversion (`fooBar` and `foo_bar`, `service KV`'s `KvServer` beside a struct
//! `KvServer`), and Rust that defines a name twice does not compile. Each scope the
//! generated code has (a file's module, a service's module, a struct's fields, a
//! trait's methods, a client's functions, an enum's constants...) is checked with
//! the names [`names`] gives, the same the emitters write.

use crate::load::IdlFile;
use crate::names;
use crate::Error;
use pilota_thrift_parser::{Field, Item, Service};
use std::collections::HashMap;

/// The names one scope of the generated code defines, each with the IDL
/// definition it comes from.
struct Scope {
    /// The scope, for the message: ``module `a` ``, ``struct `A` ``.
    what: String,
    seen: HashMap<String, String>,
}

impl Scope {
    fn new(what: String) -> Scope {
        Scope {
            what,
            seen: HashMap::new(),
        }
    }

    /// Records that `from` (an IDL definition, described with its file) defines
    /// `rust` here; an error naming both when another already does.
    fn add(&mut self, rust: String, from: String) -> Result<(), Error> {
        // Raw identifiers are the same name as their plain spelling.
        let key = rust.trim_start_matches("r#").to_owned();
        match self.seen.get(&key) {
            Some(first) => Err(Error::new(format!(
                "{first} and {from} would both be `{key}` in {}, which Rust does not \
                 allow: rename one of them",
                self.what
            ))),
            None => {
                self.seen.insert(key, from);
                Ok(())
            }
        }
    }
}

/// Checks every file's generated names.
pub(crate) fn check(files: &[IdlFile]) -> Result<(), Error> {
    for f in files {
        file(files, f)?;
    }
    Ok(())
}

fn file(files: &[IdlFile], f: &IdlFile) -> Result<(), Error> {
    let path = f.path.display().to_string();
    let at = |what: String| format!("{what} ({path})");
    // Types, traits and modules share Rust's type namespace; consts and the
    // constructors of tuple structs (enums) its value namespace.
    let mut types = Scope::new(format!("module `{}`", f.module));
    let mut values = Scope::new(format!("module `{}`", f.module));
    // Each included file's module is imported once, however often it is included.
    let included: std::collections::BTreeSet<usize> = f.includes.values().copied().collect();
    for inc in included.into_iter().map(|j| &files[j]) {
        types.add(
            inc.module.clone(),
            format!("the module of {} (included)", inc.path.display()),
        )?;
    }
    for item in &f.ast.items {
        match item {
            Item::Struct(s) => {
                types.add(
                    names::type_name(&s.name),
                    at(format!("struct `{}`", s.name.as_str())),
                )?;
                fields(&path, "struct", s.name.as_str(), &s.fields)?;
            }
            Item::Exception(e) => {
                types.add(
                    names::type_name(&e.name),
                    at(format!("exception `{}`", e.name.as_str())),
                )?;
                fields(&path, "exception", e.name.as_str(), &e.fields)?;
            }
            Item::Union(u) => {
                let what = at(format!("union `{}`", u.name.as_str()));
                types.add(names::type_name(&u.name), what)?;
                let mut variants = Scope::new(format!("union `{}`", u.name.as_str()));
                for v in &u.fields {
                    variants.add(
                        names::type_name(&v.name),
                        at(format!(
                            "field `{}` of union `{}`",
                            v.name.as_str(),
                            u.name.as_str()
                        )),
                    )?;
                }
            }
            Item::Enum(e) => {
                let what = at(format!("enum `{}`", e.name.as_str()));
                types.add(names::type_name(&e.name), what.clone())?;
                values.add(names::type_name(&e.name), what)?;
                let mut consts = Scope::new(format!("enum `{}`", e.name.as_str()));
                consts.add(
                    names::ENUM_VALUES.into(),
                    at(format!(
                        "the list of enum `{}`'s values (`{}`)",
                        e.name.as_str(),
                        names::ENUM_VALUES
                    )),
                )?;
                for v in &e.values {
                    consts.add(
                        names::const_name(&v.name),
                        at(format!(
                            "value `{}` of enum `{}`",
                            v.name.as_str(),
                            e.name.as_str()
                        )),
                    )?;
                }
            }
            Item::Typedef(t) => types.add(
                names::type_name(&t.alias),
                at(format!("typedef `{}`", t.alias.as_str())),
            )?,
            Item::Constant(c) => values.add(
                names::const_name(&c.name),
                at(format!("const `{}`", c.name.as_str())),
            )?,
            Item::Service(s) => service(&path, &mut types, s)?,
            Item::Include(_) | Item::CppInclude(_) | Item::Namespace(_) => {}
        }
    }
    Ok(())
}

/// A struct's or exception's fields.
fn fields(path: &str, kind: &str, owner: &str, fs: &[Field]) -> Result<(), Error> {
    let mut scope = Scope::new(format!("{kind} `{owner}`"));
    for f in fs {
        scope.add(
            names::value_name(&f.name),
            format!("field `{}` of {kind} `{owner}` ({path})", f.name.as_str()),
        )?;
    }
    Ok(())
}

/// What a service adds to its file's module, and the scopes inside it.
fn service(path: &str, types: &mut Scope, s: &Service) -> Result<(), Error> {
    let name = s.name.as_str();
    let at = |what: String| format!("{what} ({path})");
    types.add(names::type_name(name), at(format!("service `{name}`")))?;
    types.add(
        names::server_name(name),
        at(format!("service `{name}`'s server")),
    )?;
    types.add(
        names::client_name(name),
        at(format!("service `{name}`'s client")),
    )?;
    types.add(
        names::module(name),
        at(format!("service `{name}`'s module of argument types")),
    )?;

    let mut module = Scope::new(format!(
        "service `{name}`'s module `{}`",
        names::module(name)
    ));
    module.add(
        "register".into(),
        at(format!("service `{name}`'s `register`")),
    )?;
    let mut methods = Scope::new(format!("service `{name}`'s trait"));
    let mut client = Scope::new(format!("service `{name}`'s client"));
    for own in names::client_own() {
        client.add(
            (*own).into(),
            at(format!("the client's own function `{own}`")),
        )?;
    }
    for m in &s.functions {
        let method = m.name.as_str();
        let of = |what: &str| at(format!("{what} of service `{name}`'s method `{method}`"));
        let idl = at(format!("method `{method}` of service `{name}`"));
        methods.add(names::value_name(method), idl.clone())?;
        client.add(names::client_method(method), idl)?;
        module.add(names::args_name(method), of("the argument struct"))?;
        if !m.throws.is_empty() {
            module.add(names::exception_name(method), of("the exception enum"))?;
            module.add(names::result_name(method), of("the result enum"))?;
        }
        let mut args = Scope::new(format!("the arguments of method `{method}`"));
        for a in &m.arguments {
            args.add(
                names::value_name(&a.name),
                at(format!(
                    "argument `{}` of method `{method}`",
                    a.name.as_str()
                )),
            )?;
        }
        let mut thrown = Scope::new(format!("method `{method}`'s exception enum"));
        for t in &m.throws {
            thrown.add(
                names::type_name(&t.name),
                at(format!(
                    "exception `{}` declared by method `{method}`",
                    t.name.as_str()
                )),
            )?;
        }
    }
    Ok(())
}

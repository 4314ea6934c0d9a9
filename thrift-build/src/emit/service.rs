//! A service: its handler trait, the server adapter that registers it, its typed
//! client, and (in a module named after it) each method's argument and result
//! types.

use super::structs::{self, Kind};
use crate::defs::{Def, Defs, Found};
use crate::names;
use crate::Error;
use pilota_thrift_parser::{Attribute, Function, Service, Ty};
use std::fmt::Write;

/// One method as the generated code sees it.
struct Method<'a> {
    idl: &'a Function,
    /// Rust method name.
    name: String,
    /// `EchoArgs`, `EchoResult`, `EchoException` stem.
    camel: String,
    /// `(name, type)` of each parameter, `Option` for optional ones.
    params: Vec<(String, String)>,
    /// The success type (`()` for void).
    ret: String,
    void: bool,
    /// `(variant, type)` per declared exception.
    throws: Vec<(String, String)>,
}

fn method<'a>(d: &Defs<'a>, file: usize, f: &'a Function) -> Result<Method<'a>, Error> {
    let mut params = Vec::new();
    for a in &f.arguments {
        let ty = d.rust_type(file, &a.ty.0)?;
        let ty = if a.attribute == Attribute::Optional {
            format!("::std::option::Option<{ty}>")
        } else {
            ty
        };
        params.push((names::value_name(&a.name), ty));
    }
    let void = matches!(f.result_type.0, Ty::Void);
    let mut throws = Vec::new();
    for t in &f.throws {
        throws.push((names::type_name(&t.name), d.rust_type(file, &t.ty.0)?));
    }
    if f.oneway && (!void || !throws.is_empty()) {
        return Err(Error::new(format!(
            "{}: oneway method `{}` must be void and throw nothing",
            d.where_(file),
            f.name.as_str()
        )));
    }
    Ok(Method {
        idl: f,
        name: names::value_name(&f.name),
        camel: names::type_name(&f.name),
        params,
        ret: if void {
            "()".into()
        } else {
            d.rust_type(file, &f.result_type.0)?
        },
        void,
        throws,
    })
}

/// The IDL line of a method, for docs.
fn signature(f: &Function) -> String {
    let args: Vec<String> = f
        .arguments
        .iter()
        .map(|a| format!("{}: {}", a.id, a.name.as_str()))
        .collect();
    format!(
        "{}{}({})",
        if f.oneway { "oneway " } else { "" },
        f.name.as_str(),
        args.join(", ")
    )
}

/// Everything generated for `s`, at file level.
pub(crate) fn service<'a>(d: &Defs<'a>, file: usize, s: &'a Service) -> Result<String, Error> {
    let trait_name = names::type_name(&s.name);
    let module = names::module(&s.name);
    let base = match &s.extends {
        Some(p) => match d.lookup_all(file, &p.segments)? {
            f @ Found {
                def: Def::Service, ..
            } => Some(f),
            _ => {
                return Err(Error::new(format!(
                    "{}: service `{}` extends `{}`, which is not a service",
                    d.where_(file),
                    s.name.as_str(),
                    crate::defs::join(&p.segments)
                )))
            }
        },
        None => None,
    };
    let methods = s
        .functions
        .iter()
        .map(|f| method(d, file, f))
        .collect::<Result<Vec<_>, _>>()?;

    let mut out = String::new();
    out += &types_module(d, file, s, (&module, &trait_name), base, &methods)?;
    out += &handler_trait(d, file, s, &trait_name, base, &methods);
    out += &server(&trait_name, &module);
    out += &client(d, file, s, &trait_name, &module, base, &methods);
    Ok(out)
}

fn types_module<'a>(
    d: &Defs<'a>,
    file: usize,
    s: &'a Service,
    (module, trait_name): (&str, &str),
    base: Option<Found<'a>>,
    methods: &[Method<'a>],
) -> Result<String, Error> {
    let mut out = format!(
        "#[doc = \" Argument and result types of `{}`'s methods.\"]\n\
         #[allow(clippy::module_inception)]\npub mod {module} {{\n\
         #[allow(unused_imports)]\nuse super::*;\n",
        s.name.as_str()
    );
    for m in methods {
        out += &structs::struct_like(
            d,
            file,
            &format!("{}Args", m.idl.name.as_str()),
            &format!("{}Args", m.camel),
            &m.idl.arguments,
            &format!("#[doc = \" The arguments of `{}`.\"]\n", signature(m.idl)),
            Kind::Args,
        )?;
        if m.throws.is_empty() {
            continue;
        }
        out += &exception_enum(m);
        out += &result_enum(m);
    }
    out += &register_fn(d, file, s, trait_name, base, methods);
    out += "}\n";
    Ok(out)
}

/// `EchoException`: one of the method's declared exceptions.
fn exception_enum(m: &Method) -> String {
    let name = format!("{}Exception", m.camel);
    let mut out = format!(
        "#[doc = \" An exception `{}` declares.\"]\n\
         #[derive(Clone, Debug, PartialEq)]\n\
         #[allow(clippy::large_enum_variant, clippy::enum_variant_names)]\npub enum {name} {{\n",
        m.idl.name.as_str()
    );
    for ((variant, ty), t) in m.throws.iter().zip(&m.idl.throws) {
        writeln!(
            out,
            "#[doc = \" `{}: {}`\"]\n{variant}({ty}),",
            t.id,
            t.name.as_str()
        )
        .unwrap();
    }
    out += "}\n";
    writeln!(
        out,
        "impl ::std::fmt::Display for {name} {{\n\
         fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {{\nmatch self {{"
    )
    .unwrap();
    for (variant, _) in &m.throws {
        writeln!(
            out,
            "{name}::{variant}(e) => ::std::fmt::Display::fmt(e, f),"
        )
        .unwrap();
    }
    out += "} } }\n";
    writeln!(out, "impl ::std::error::Error for {name} {{}}").unwrap();
    // `?` on a declared exception inside a handler or a caller. Two declared
    // exceptions of one type would make these conversions ambiguous: only the
    // first gets them.
    let mut seen = std::collections::HashSet::new();
    for (variant, ty) in &m.throws {
        if !seen.insert(ty) {
            continue;
        }
        writeln!(
            out,
            "impl ::std::convert::From<{ty}> for {name} {{ fn from(e: {ty}) -> Self {{ {name}::{variant}(e) }} }}\n\
             impl ::std::convert::From<{ty}> for ::zerorx_thrift::HandlerError<{name}> {{\n\
             fn from(e: {ty}) -> Self {{ ::zerorx_thrift::HandlerError::Thrown({name}::{variant}(e)) }} }}"
        )
        .unwrap();
    }
    out
}

/// `EchoResult`: the reply struct of a method with declared exceptions (field 0
/// the success value, the exceptions at their ids).
fn result_enum(m: &Method) -> String {
    let name = format!("{}Result", m.camel);
    let exc = format!("{}Exception", m.camel);
    let mut out = format!(
        "#[doc = \" The reply of `{}`: its value or a declared exception.\"]\n\
         #[derive(Clone, Debug, PartialEq)]\n\
         #[allow(clippy::large_enum_variant)]\npub enum {name} {{\n",
        m.idl.name.as_str()
    );
    if m.void {
        out += "#[doc = \" Returned normally.\"]\nSuccess,\n";
    } else {
        writeln!(out, "#[doc = \" Returned normally.\"]\nSuccess({}),", m.ret).unwrap();
    }
    writeln!(
        out,
        "#[doc = \" Threw a declared exception.\"]\nThrown({exc}),\n}}"
    )
    .unwrap();
    out += &structs::thrift_type(&name);
    // Encode.
    writeln!(
        out,
        "impl ::zerorx_thrift::ThriftEncode for {name} {{\n\
         fn encode<W: ::zerorx_thrift::ProtocolWrite>(&self, w: &mut W) {{\n\
         w.write_struct_begin();\nmatch self {{"
    )
    .unwrap();
    if m.void {
        writeln!(out, "{name}::Success => {{}}").unwrap();
    } else {
        writeln!(
            out,
            "{name}::Success(v) => ::zerorx_thrift::write_field(w, 0, v),"
        )
        .unwrap();
    }
    for ((variant, _), t) in m.throws.iter().zip(&m.idl.throws) {
        writeln!(
            out,
            "{name}::Thrown({exc}::{variant}(e)) => ::zerorx_thrift::write_field(w, {}, e),",
            t.id
        )
        .unwrap();
    }
    out += "}\nw.write_field_stop();\nw.write_struct_end();\n} }\n";
    // Decode: an exception field wins over a success field (a reply carries one).
    writeln!(
        out,
        "impl ::zerorx_thrift::ThriftDecode for {name} {{\n\
         fn decode<R: ::zerorx_thrift::ProtocolRead>(r: &mut R) -> ::std::result::Result<Self, ::zerorx_thrift::DecodeError> {{\n\
         let mut thrown: ::std::option::Option<{exc}> = ::std::option::Option::None;"
    )
    .unwrap();
    if !m.void {
        writeln!(
            out,
            "let mut value: ::std::option::Option<{}> = ::std::option::Option::None;",
            m.ret
        )
        .unwrap();
    }
    out += "::zerorx_thrift::read_struct(r, |r, h| {\nmatch h.id {\n";
    if !m.void {
        out += "0 => if let ::std::option::Option::Some(v) = ::zerorx_thrift::read_field(r, h)? { value = ::std::option::Option::Some(v); },\n";
    }
    for ((variant, _), t) in m.throws.iter().zip(&m.idl.throws) {
        writeln!(
            out,
            "{} => if let ::std::option::Option::Some(e) = ::zerorx_thrift::read_field(r, h)? {{ thrown = ::std::option::Option::Some({exc}::{variant}(e)); }},",
            t.id
        )
        .unwrap();
    }
    out +=
        "_ => return ::std::result::Result::Ok(false),\n}\n::std::result::Result::Ok(true)\n})?;\n";
    writeln!(
        out,
        "if let ::std::option::Option::Some(e) = thrown {{ return ::std::result::Result::Ok({name}::Thrown(e)); }}"
    )
    .unwrap();
    if m.void {
        writeln!(out, "::std::result::Result::Ok({name}::Success)").unwrap();
    } else {
        writeln!(
            out,
            "value.map({name}::Success).ok_or(::zerorx_thrift::DecodeError::MissingResult({:?}))",
            m.idl.name.as_str()
        )
        .unwrap();
    }
    out += "} }\n";
    out
}

/// The registration function, in the types module so a service that extends this
/// one can call it.
fn register_fn<'a>(
    d: &Defs<'a>,
    file: usize,
    s: &'a Service,
    trait_name: &str,
    base: Option<Found<'a>>,
    methods: &[Method<'a>],
) -> String {
    let mut reg = format!(
        "#[doc = \" Registers `{}`'s methods (and those it extends) on `b`, named with `prefix`.\"]\n\
         pub fn register<S: super::{trait_name}>(b: ::zerorx_thrift::ServerBuilder, service: &::std::sync::Arc<S>, prefix: &str) -> ::zerorx_thrift::ServerBuilder {{\n",
        s.name.as_str()
    );
    match base {
        Some(b) => writeln!(
            reg,
            "let b = super::{}::register(b, service, prefix);",
            d.path_to(file, b.file, &names::module(b.name))
        )
        .unwrap(),
        None => reg += "let b = b;\n",
    }
    for m in methods {
        let args = format!("{}Args", m.camel);
        // An argument struct without fields is decoded (to skip what a peer sends)
        // but has nothing to pass on.
        let a = if m.params.is_empty() { "_" } else { "a" };
        let call_args: String = m.params.iter().map(|(n, _)| format!(", a.{n}")).collect();
        let call = format!("<S as super::{trait_name}>::{}(&s{call_args})", m.name);
        let idl = m.idl.name.as_str();
        let name = format!("&::std::format!(\"{{prefix}}{idl}\")");
        if m.idl.oneway {
            writeln!(
                reg,
                "let s = service.clone();\nlet b = b.oneway({name}, move |{a}: {args}| {call});"
            )
            .unwrap();
            continue;
        }
        let finish = if m.throws.is_empty() {
            if m.void {
                "call.await.map(|()| ::zerorx_thrift::Void)".to_owned()
            } else {
                "call.await.map(::zerorx_thrift::Returns)".to_owned()
            }
        } else {
            let ok = if m.void {
                format!("::std::result::Result::Ok(()) => ::std::result::Result::Ok({}Result::Success),", m.camel)
            } else {
                format!("::std::result::Result::Ok(v) => ::std::result::Result::Ok({}Result::Success(v)),", m.camel)
            };
            format!(
                "match call.await {{\n{ok}\n\
                 ::std::result::Result::Err(::zerorx_thrift::HandlerError::Thrown(e)) => ::std::result::Result::Ok({0}Result::Thrown(e)),\n\
                 ::std::result::Result::Err(::zerorx_thrift::HandlerError::Failed(e)) => ::std::result::Result::Err(e),\n}}",
                m.camel
            )
        };
        writeln!(
            reg,
            "let s = service.clone();\n\
             let b = b.method({name}, move |{a}: {args}| {{ let call = {call}; async move {{ {finish} }} }});"
        )
        .unwrap();
    }
    reg += "b\n}\n";
    reg
}

fn params_decl(m: &Method) -> String {
    m.params
        .iter()
        .map(|(n, t)| format!(", {n}: {t}"))
        .collect()
}

fn allow_many(m: &Method) -> &'static str {
    if m.params.len() > 6 {
        "#[allow(clippy::too_many_arguments)]\n"
    } else {
        ""
    }
}

fn handler_trait<'a>(
    d: &Defs<'a>,
    file: usize,
    s: &'a Service,
    trait_name: &str,
    base: Option<Found<'a>>,
    methods: &[Method<'a>],
) -> String {
    let supertrait = match base {
        Some(b) => d.path_to(file, b.file, &names::type_name(b.name)),
        None => "::std::marker::Send + ::std::marker::Sync + 'static".into(),
    };
    let mut out = names::doc(
        &s.leading_comments,
        &format!("Service `{}`.", s.name.as_str()),
    );
    writeln!(
        out,
        "///\n/// The handlers of service `{0}`: implement it and serve it with [`{0}Server`].\n\
         /// Each returns a future that borrows nothing from `&self` (write `+ use<>` after\n\
         /// `impl Future<…>` in your impl): take what the reply needs (clone an `Arc`\n\
         /// field, copy a value) before the `async move` block, so a call that needs\n\
         /// nothing of `self` touches no shared reference count.\n\
         pub trait {trait_name}: {supertrait} {{",
        s.name.as_str()
    )
    .unwrap();
    for m in methods {
        out += &names::doc(&m.idl.leading_comments, &format!("`{}`", signature(m.idl)));
        out += allow_many(m);
        let output = if m.idl.oneway {
            "()".to_owned()
        } else if m.throws.is_empty() {
            format!(
                "::std::result::Result<{}, ::zerorx_thrift::ApplicationException>",
                m.ret
            )
        } else {
            format!(
                "::std::result::Result<{}, ::zerorx_thrift::HandlerError<{}::{}Exception>>",
                m.ret,
                names::module(&s.name),
                m.camel
            )
        };
        writeln!(
            out,
            "fn {}(&self{}) -> impl ::std::future::Future<Output = {output}> + use<Self>;",
            m.name,
            params_decl(m)
        )
        .unwrap();
    }
    out += "}\n";
    out
}

fn server(trait_name: &str, module: &str) -> String {
    let server = format!("{trait_name}Server");
    format!(
        "#[doc = \" Serves a [`{trait_name}`] implementation: pass it to\"]\n\
         #[doc = \" [`ServerBuilder::service`](::zerorx_thrift::ServerBuilder::service).\"]\n\
         #[derive(Debug)]\npub struct {server}<S>(::std::sync::Arc<S>);\n\
         impl<S: {trait_name}> {server}<S> {{\n\
         #[doc = \" Serves `service`.\"]\n\
         pub fn new(service: S) -> Self {{ {server}(::std::sync::Arc::new(service)) }}\n\
         #[doc = \" Serves a service shared with other code.\"]\n\
         pub fn from_arc(service: ::std::sync::Arc<S>) -> Self {{ {server}(service) }}\n\
         }}\n\
         impl<S: {trait_name}> ::zerorx_thrift::Service for {server}<S> {{\n\
         fn register(self, builder: ::zerorx_thrift::ServerBuilder, prefix: &str) -> ::zerorx_thrift::ServerBuilder {{\n\
         {module}::register(builder, &self.0, prefix) }} }}\n"
    )
}

fn client<'a>(
    d: &Defs<'a>,
    file: usize,
    s: &'a Service,
    trait_name: &str,
    module: &str,
    base: Option<Found<'a>>,
    methods: &[Method<'a>],
) -> String {
    let client = format!("{trait_name}Client");
    let base_client =
        base.map(|b| d.path_to(file, b.file, &format!("{}Client", names::type_name(b.name))));
    let mut out = format!(
        "#[doc = \" A typed client of service `{0}` over a [`Client`](::zerorx_thrift::Client)\"]\n\
         #[doc = \" (clone it to call from several tasks at once: calls are pipelined).\"]\n\
         #[derive(Clone, Debug)]\npub struct {client} {{\nclient: ::zerorx_thrift::Client,\n\
         prefix: ::std::option::Option<::std::sync::Arc<str>>,\n",
        s.name.as_str()
    );
    if let Some(b) = &base_client {
        writeln!(out, "base: {b},").unwrap();
    }
    out += "}\n";
    let base_init = if base_client.is_some() {
        "base: ::zerorx_thrift::ServiceClient::with_prefix(client.clone(), prefix.clone()),"
    } else {
        ""
    };
    writeln!(
        out,
        "impl ::zerorx_thrift::ServiceClient for {client} {{\n\
         fn with_prefix(client: ::zerorx_thrift::Client, prefix: ::std::option::Option<::std::sync::Arc<str>>) -> Self {{\n\
         {client} {{ {base_init} client, prefix }} }}\n\
         fn client(&self) -> &::zerorx_thrift::Client {{ &self.client }}\n}}"
    )
    .unwrap();
    if let Some(b) = &base_client {
        writeln!(
            out,
            "impl ::std::ops::Deref for {client} {{ type Target = {b}; fn deref(&self) -> &{b} {{ &self.base }} }}"
        )
        .unwrap();
    }
    writeln!(
        out,
        "#[allow(clippy::should_implement_trait)]\nimpl {client} {{\n\
         #[doc = \" Calls the service over `client`.\"]\n\
         pub fn new(client: ::zerorx_thrift::Client) -> Self {{ ::zerorx_thrift::ServiceClient::with_prefix(client, ::std::option::Option::None) }}\n\
         #[doc = \" Calls the service named `name` on a multiplexed server (method names sent as `name:method`).\"]\n\
         pub fn multiplexed(client: ::zerorx_thrift::Client, name: &str) -> Self {{\n\
         ::zerorx_thrift::ServiceClient::with_prefix(client, ::std::option::Option::Some(::std::sync::Arc::from(::std::format!(\"{{name}}:\"))))\n}}\n\
         #[doc = \" The untyped client underneath (its counters, its connection state).\"]\n\
         pub fn client(&self) -> &::zerorx_thrift::Client {{ &self.client }}\n\
         #[doc = \" Connects to a server of the service.\"]\n\
         pub async fn connect(addr: ::std::net::SocketAddr, config: ::zerorx_thrift::ClientConfig) -> ::std::result::Result<Self, ::zerorx_thrift::ClientError> {{\n\
         ::std::result::Result::Ok(Self::new(::zerorx_thrift::Client::connect(addr, config).await?))\n}}\n\
         fn method_name(&self, name: &'static str) -> ::std::borrow::Cow<'static, str> {{\n\
         match &self.prefix {{\n\
         ::std::option::Option::None => ::std::borrow::Cow::Borrowed(name),\n\
         ::std::option::Option::Some(p) => ::std::borrow::Cow::Owned(::std::format!(\"{{p}}{{name}}\")),\n}} }}"
    )
    .unwrap();
    for m in methods {
        let reserved = ["new", "multiplexed", "connect", "method_name", "client"];
        let fn_name = if reserved.contains(&m.name.as_str()) {
            format!("{}_", m.name)
        } else {
            m.name.clone()
        };
        out += &names::doc(&m.idl.leading_comments, &format!("`{}`", signature(m.idl)));
        out += allow_many(m);
        let fields: Vec<&str> = m.params.iter().map(|(n, _)| n.as_str()).collect();
        let args = format!("{module}::{}Args {{ {} }}", m.camel, fields.join(", "));
        let idl = m.idl.name.as_str();
        if m.idl.oneway {
            writeln!(
                out,
                "pub async fn {fn_name}(&self{}) -> ::std::result::Result<(), ::zerorx_thrift::ClientError> {{\n\
                 self.client.call_oneway(&self.method_name({idl:?}), &{args}).await\n}}",
                params_decl(m)
            )
            .unwrap();
        } else if m.throws.is_empty() {
            let (ty, fin) = if m.void {
                (
                    "::zerorx_thrift::Void".to_owned(),
                    "let _ = r; ::std::result::Result::Ok(())",
                )
            } else {
                (
                    format!("::zerorx_thrift::Returns<{}>", m.ret),
                    "::std::result::Result::Ok(r.0)",
                )
            };
            writeln!(
                out,
                "pub async fn {fn_name}(&self{}) -> ::std::result::Result<{}, ::zerorx_thrift::ClientError> {{\n\
                 let r: {ty} = self.client.call(&self.method_name({idl:?}), &{args}).await?;\n{fin}\n}}",
                params_decl(m),
                m.ret
            )
            .unwrap();
        } else {
            let res = format!("{module}::{}Result", m.camel);
            let ok = if m.void {
                format!(
                    "::std::result::Result::Ok({res}::Success) => ::std::result::Result::Ok(()),"
                )
            } else {
                format!(
                    "::std::result::Result::Ok({res}::Success(v)) => ::std::result::Result::Ok(v),"
                )
            };
            writeln!(
                out,
                "pub async fn {fn_name}(&self{}) -> ::std::result::Result<{}, ::zerorx_thrift::CallError<{module}::{}Exception>> {{\n\
                 match self.client.call::<_, {res}>(&self.method_name({idl:?}), &{args}).await {{\n\
                 {ok}\n\
                 ::std::result::Result::Ok({res}::Thrown(e)) => ::std::result::Result::Err(::zerorx_thrift::CallError::Thrown(e)),\n\
                 ::std::result::Result::Err(e) => ::std::result::Result::Err(::zerorx_thrift::CallError::Failed(e)),\n}}\n}}",
                params_decl(m),
                m.ret,
                m.camel
            )
            .unwrap();
        }
    }
    out += "}\n";
    out
}

//! A service: its handler trait, the server adapter that registers it, its typed
//! client, and (in a module named after it) each method's argument and result
//! types.

use super::codec;
use super::structs::{self, Kind};
use crate::defs::{Def, Defs, Found};
use crate::names::{self, ident};
use crate::Error;
use pilota_thrift_parser::{Attribute, Function, Service, Ty};
use proc_macro2::{Ident, Literal, TokenStream};
use quote::quote;

/// The Rust names of a service and what is generated for it.
struct Names {
    /// The service's IDL name, for docs.
    idl: String,
    /// The handler trait.
    service: Ident,
    /// The module of argument and result types.
    module: Ident,
    server: Ident,
    client: Ident,
}

impl Names {
    fn of(idl: &str) -> Names {
        Names {
            idl: idl.to_owned(),
            service: ident(&names::type_name(idl)),
            module: ident(&names::module(idl)),
            server: ident(&names::server_name(idl)),
            client: ident(&names::client_name(idl)),
        }
    }
}

/// One declared exception of a method.
struct Thrown {
    /// Its variant in the method's exception enum.
    variant: Ident,
    ty: TokenStream,
    /// The definition the type names, typedefs followed: two declared exceptions
    /// of one definition share their conversions.
    def: (usize, String),
    id: Literal,
    /// `1: name`, for docs.
    idl: String,
}

/// One method as the generated code sees it.
struct Method<'a> {
    idl: &'a Function,
    /// The trait's method.
    name: Ident,
    /// The client's method (the client's own functions keep their names).
    client_fn: Ident,
    args: Ident,
    exception: Ident,
    result: Ident,
    /// The parameters' names and types (`Option` for optional ones).
    params: Vec<(Ident, TokenStream)>,
    /// The success type (`()` for void).
    ret: TokenStream,
    void: bool,
    throws: Vec<Thrown>,
}

impl Method<'_> {
    /// `name: Type` for each parameter.
    fn params_decl(&self) -> TokenStream {
        let decl = self.params.iter().map(|(n, t)| quote!(#n: #t));
        quote!(#(, #decl)*)
    }

    /// The parameters' names.
    fn param_names(&self) -> impl Iterator<Item = &Ident> {
        self.params.iter().map(|(n, _)| n)
    }

    fn allow_many(&self) -> TokenStream {
        if self.params.len() > 6 {
            quote!(#[allow(clippy::too_many_arguments)])
        } else {
            TokenStream::new()
        }
    }

    /// The method's IDL comment, or its IDL line.
    fn doc(&self) -> TokenStream {
        names::doc(
            &self.idl.leading_comments,
            &format!("`{}`", signature(self.idl)),
        )
    }
}

fn method<'a>(d: &Defs<'a>, file: usize, f: &'a Function) -> Result<Method<'a>, Error> {
    let mut params = Vec::new();
    for a in &f.arguments {
        let ty = d.rust_type(file, &a.ty.0)?;
        let ty = if a.attribute == Attribute::Optional {
            quote!(::std::option::Option<#ty>)
        } else {
            ty
        };
        params.push((ident(&names::value_name(&a.name)), ty));
    }
    let void = matches!(f.result_type.0, Ty::Void);
    let mut throws = Vec::new();
    for t in &f.throws {
        let resolved = d.resolve(file, &t.ty.0)?;
        let def = match d.named(&resolved)? {
            Some(found) => (found.file, found.name.to_owned()),
            None => {
                return Err(Error::new(format!(
                    "{}: method `{}` declares `{}`, which is not an exception",
                    d.where_(file),
                    f.name.as_str(),
                    t.name.as_str()
                )))
            }
        };
        let id = i16::try_from(t.id).map_err(|_| {
            Error::new(format!(
                "{}: exception `{}` of method `{}` has id {}, outside i16",
                d.where_(file),
                t.name.as_str(),
                f.name.as_str(),
                t.id
            ))
        })?;
        throws.push(Thrown {
            variant: ident(&names::type_name(&t.name)),
            ty: d.rust_type(file, &t.ty.0)?,
            def,
            id: Literal::i16_unsuffixed(id),
            idl: format!("{}: {}", t.id, t.name.as_str()),
        });
    }
    if f.oneway && (!void || !throws.is_empty()) {
        return Err(Error::new(format!(
            "{}: oneway method `{}` must be void and throw nothing",
            d.where_(file),
            f.name.as_str()
        )));
    }
    let idl = f.name.as_str();
    Ok(Method {
        idl: f,
        name: ident(&names::value_name(idl)),
        client_fn: ident(&names::client_method(idl)),
        args: ident(&names::args_name(idl)),
        exception: ident(&names::exception_name(idl)),
        result: ident(&names::result_name(idl)),
        params,
        ret: if void {
            quote!(())
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

/// The service another extends: where its names are, from this file's module.
struct Base {
    trait_path: TokenStream,
    client_path: TokenStream,
    module_path: TokenStream,
}

/// Everything generated for `s`, at file level.
pub(crate) fn service<'a>(d: &Defs<'a>, file: usize, s: &'a Service) -> Result<TokenStream, Error> {
    let n = Names::of(&s.name);
    let base = match &s.extends {
        Some(p) => match d.lookup_all(file, &p.segments)? {
            Found {
                def: Def::Service,
                file: to,
                name,
            } => Some(Base {
                trait_path: d.path_to(file, to, &names::type_name(name)),
                client_path: d.path_to(file, to, &names::client_name(name)),
                module_path: d.path_to(file, to, &names::module(name)),
            }),
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

    let mut out = types_module(d, file, &n, base.as_ref(), &methods)?;
    out.extend(handler_trait(s, &n, base.as_ref(), &methods));
    out.extend(server(&n));
    out.extend(client(&n, base.as_ref(), &methods));
    Ok(out)
}

fn types_module<'a>(
    d: &Defs<'a>,
    file: usize,
    n: &Names,
    base: Option<&Base>,
    methods: &[Method<'a>],
) -> Result<TokenStream, Error> {
    let mut items = TokenStream::new();
    for m in methods {
        items.extend(structs::struct_like(
            d,
            file,
            &format!("{}Args", m.idl.name.as_str()),
            &m.args.to_string(),
            &m.idl.arguments,
            names::docs(&[format!("The arguments of `{}`.", signature(m.idl))]),
            Kind::Args,
        )?);
        if !m.throws.is_empty() {
            items.extend(exception_enum(m));
            items.extend(result_enum(m));
        }
    }
    items.extend(register_fn(n, base, methods));
    let doc = format!(" Argument and result types of `{}`'s methods.", n.idl);
    let module = &n.module;
    Ok(quote! {
        #[doc = #doc]
        #[allow(clippy::module_inception)]
        pub mod #module {
            #[allow(unused_imports)]
            use super::*;
            #items
        }
    })
}

/// `EchoException`: one of the method's declared exceptions.
fn exception_enum(m: &Method) -> TokenStream {
    let name = &m.exception;
    let doc = format!(" An exception `{}` declares.", m.idl.name.as_str());
    let variants: Vec<&Ident> = m.throws.iter().map(|t| &t.variant).collect();
    let decls = m.throws.iter().map(|t| {
        let doc = format!(" `{}`", t.idl);
        let (v, ty) = (&t.variant, &t.ty);
        quote!(#[doc = #doc] #v(#ty),)
    });
    // `?` on a declared exception inside a handler or a caller. Two declared
    // exceptions of one type would make these conversions ambiguous: only the
    // first gets them.
    let mut seen = std::collections::HashSet::new();
    let froms = m.throws.iter().filter(|t| seen.insert(&t.def)).map(|t| {
        let (v, ty) = (&t.variant, &t.ty);
        quote! {
            impl ::std::convert::From<#ty> for #name {
                fn from(e: #ty) -> Self { #name::#v(e) }
            }
            impl ::std::convert::From<#ty> for ::zerorx_thrift::HandlerError<#name> {
                fn from(e: #ty) -> Self { ::zerorx_thrift::HandlerError::Thrown(#name::#v(e)) }
            }
        }
    });
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq)]
        #[allow(clippy::large_enum_variant, clippy::enum_variant_names)]
        pub enum #name { #(#decls)* }
        impl ::std::fmt::Display for #name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self {
                    #(#name::#variants(e) => ::std::fmt::Display::fmt(e, f),)*
                }
            }
        }
        impl ::std::error::Error for #name {}
        #(#froms)*
    }
}

/// `EchoResult`: the reply struct of a method with declared exceptions (field 0
/// the success value, the exceptions at their ids).
fn result_enum(m: &Method) -> TokenStream {
    let (name, exc, ret) = (&m.result, &m.exception, &m.ret);
    let doc = format!(
        " The reply of `{}`: its value or a declared exception.",
        m.idl.name.as_str()
    );
    let success = if m.void {
        quote!(Success)
    } else {
        quote!(Success(#ret))
    };
    let mut out = quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq)]
        #[allow(clippy::large_enum_variant)]
        pub enum #name {
            #[doc = " Returned normally."]
            #success,
            #[doc = " Threw a declared exception."]
            Thrown(#exc),
        }
    };
    out.extend(codec::thrift_type(name));
    let write_success = if m.void {
        quote!(#name::Success => {})
    } else {
        quote!(#name::Success(v) => ::zerorx_thrift::write_field(w, 0, v),)
    };
    let (variants, ids): (Vec<&Ident>, Vec<&Literal>) =
        m.throws.iter().map(|t| (&t.variant, &t.id)).unzip();
    out.extend(codec::encode_impl(
        name,
        quote! {
            w.write_struct_begin();
            match self {
                #write_success
                #(#name::Thrown(#exc::#variants(e)) => ::zerorx_thrift::write_field(w, #ids, e),)*
            }
            w.write_field_stop();
            w.write_struct_end();
        },
    ));
    // Decode: an exception field wins over a success field (a reply carries one).
    let mut arms = Vec::new();
    if !m.void {
        arms.push((
            Literal::i16_unsuffixed(0),
            quote!(value = ::std::option::Option::Some(v);),
        ));
    }
    for t in &m.throws {
        let v = &t.variant;
        arms.push((
            t.id.clone(),
            quote!(thrown = ::std::option::Option::Some(#exc::#v(v));),
        ));
    }
    let read = codec::read_fields(arms);
    let (value_local, finish) = if m.void {
        (
            TokenStream::new(),
            quote!(::std::result::Result::Ok(#name::Success)),
        )
    } else {
        let idl = m.idl.name.as_str();
        (
            quote!(let mut value: ::std::option::Option<#ret> = ::std::option::Option::None;),
            quote! {
                value.map(#name::Success).ok_or(::zerorx_thrift::DecodeError::MissingResult(#idl))
            },
        )
    };
    out.extend(codec::decode_impl(
        name,
        quote! {
            let mut thrown: ::std::option::Option<#exc> = ::std::option::Option::None;
            #value_local
            #read
            if let ::std::option::Option::Some(e) = thrown {
                return ::std::result::Result::Ok(#name::Thrown(e));
            }
            #finish
        },
    ));
    out
}

/// The registration function, in the types module so a service that extends this
/// one can call it.
fn register_fn(n: &Names, base: Option<&Base>, methods: &[Method]) -> TokenStream {
    let service = &n.service;
    let doc = format!(
        " Registers `{}`'s methods (and those it extends) on `b`, named with `prefix`.",
        n.idl
    );
    let start = match base {
        Some(b) => {
            let module = &b.module_path;
            quote!(let b = super::#module::register(b, service, prefix);)
        }
        None => quote!(let b = b;),
    };
    let each = methods.iter().map(|m| {
        let (args, method) = (&m.args, &m.name);
        // An argument struct without fields is decoded (to skip what a peer sends)
        // but has nothing to pass on.
        let a = if m.params.is_empty() {
            quote!(_)
        } else {
            quote!(a)
        };
        let fields = m.param_names();
        let call = quote!(<S as super::#service>::#method(&s #(, a.#fields)*));
        let format = format!("{{prefix}}{}", m.idl.name.as_str());
        let name = quote!(&::std::format!(#format));
        if m.idl.oneway {
            return quote! {
                let s = service.clone();
                let b = b.oneway(#name, move |#a: #args| #call);
            };
        }
        let finish = if m.throws.is_empty() {
            if m.void {
                quote!(call.await.map(|()| ::zerorx_thrift::Void))
            } else {
                quote!(call.await.map(::zerorx_thrift::Returns))
            }
        } else {
            let result = &m.result;
            let ok = if m.void {
                quote!(::std::result::Result::Ok(()) => ::std::result::Result::Ok(#result::Success),)
            } else {
                quote!(::std::result::Result::Ok(v) => ::std::result::Result::Ok(#result::Success(v)),)
            };
            quote! {
                match call.await {
                    #ok
                    ::std::result::Result::Err(::zerorx_thrift::HandlerError::Thrown(e)) => {
                        ::std::result::Result::Ok(#result::Thrown(e))
                    }
                    ::std::result::Result::Err(::zerorx_thrift::HandlerError::Failed(e)) => {
                        ::std::result::Result::Err(e)
                    }
                }
            }
        };
        quote! {
            let s = service.clone();
            let b = b.method(#name, move |#a: #args| {
                let call = #call;
                async move { #finish }
            });
        }
    });
    quote! {
        #[doc = #doc]
        pub fn register<S: super::#service>(
            b: ::zerorx_thrift::ServerBuilder,
            service: &::std::sync::Arc<S>,
            prefix: &str,
        ) -> ::zerorx_thrift::ServerBuilder {
            #start
            #(#each)*
            b
        }
    }
}

fn handler_trait(s: &Service, n: &Names, base: Option<&Base>, methods: &[Method]) -> TokenStream {
    let supertrait = match base {
        Some(b) => b.trait_path.clone(),
        None => quote!(::std::marker::Send + ::std::marker::Sync + 'static),
    };
    let doc = names::doc(&s.leading_comments, &format!("Service `{}`.", n.idl));
    // The links name the generated items, which case conversion may have respelt
    // (`service KV` is served by `KvServer`).
    let how = names::docs(&[
        String::new(),
        format!(
            "The handlers of service `{}`: implement it and serve it with [`{}`].",
            n.idl, n.server
        ),
        "Each returns a future that borrows nothing from `&self` (write `+ use<>` after".into(),
        "`impl Future<…>` in your impl): take what the reply needs (clone an `Arc`".into(),
        "field, copy a value) before the `async move` block, so a call that needs".into(),
        "nothing of `self` touches no shared reference count.".into(),
    ]);
    let module = &n.module;
    let fns = methods.iter().map(|m| {
        let ret = &m.ret;
        let output = if m.idl.oneway {
            quote!(())
        } else if m.throws.is_empty() {
            quote!(::std::result::Result<#ret, ::zerorx_thrift::ApplicationException>)
        } else {
            let exc = &m.exception;
            quote!(::std::result::Result<#ret, ::zerorx_thrift::HandlerError<#module::#exc>>)
        };
        let (doc, allow, name, params) = (m.doc(), m.allow_many(), &m.name, m.params_decl());
        quote! {
            #doc
            #allow
            fn #name(&self #params) -> impl ::std::future::Future<Output = #output> + use<Self>;
        }
    });
    let service = &n.service;
    quote! {
        #doc
        #how
        pub trait #service: #supertrait {
            #(#fns)*
        }
    }
}

fn server(n: &Names) -> TokenStream {
    let (service, server, module) = (&n.service, &n.server, &n.module);
    let doc = names::docs(&[
        format!("Serves a [`{service}`] implementation: pass it to"),
        "[`ServerBuilder::service`](::zerorx_thrift::ServerBuilder::service).".into(),
    ]);
    quote! {
        #doc
        #[derive(Debug)]
        pub struct #server<S>(::std::sync::Arc<S>);
        impl<S: #service> #server<S> {
            #[doc = " Serves `service`."]
            pub fn new(service: S) -> Self { #server(::std::sync::Arc::new(service)) }
            #[doc = " Serves a service shared with other code."]
            pub fn from_arc(service: ::std::sync::Arc<S>) -> Self { #server(service) }
        }
        impl<S: #service> ::zerorx_thrift::Service for #server<S> {
            fn register(
                self,
                builder: ::zerorx_thrift::ServerBuilder,
                prefix: &str,
            ) -> ::zerorx_thrift::ServerBuilder {
                #module::register(builder, &self.0, prefix)
            }
        }
    }
}

fn client(n: &Names, base: Option<&Base>, methods: &[Method]) -> TokenStream {
    let (client, module) = (&n.client, &n.module);
    let doc = names::docs(&[
        format!(
            "A typed client of service `{}` over a [`Client`](::zerorx_thrift::Client)",
            n.idl
        ),
        "(clone it to call from several tasks at once: calls are pipelined).".into(),
    ]);
    let (base_field, base_init, deref) = match base {
        Some(b) => {
            let path = &b.client_path;
            (
                quote!(base: #path,),
                quote!(base: ::zerorx_thrift::ServiceClient::with_prefix(client.clone(), prefix.clone()),),
                quote! {
                    impl ::std::ops::Deref for #client {
                        type Target = #path;
                        fn deref(&self) -> &#path { &self.base }
                    }
                },
            )
        }
        None => Default::default(),
    };
    let fns = methods.iter().map(|m| client_fn(module, m));
    quote! {
        #doc
        #[derive(Clone, Debug)]
        pub struct #client {
            client: ::zerorx_thrift::Client,
            prefix: ::std::option::Option<::std::sync::Arc<str>>,
            #base_field
        }
        impl ::zerorx_thrift::ServiceClient for #client {
            fn with_prefix(
                client: ::zerorx_thrift::Client,
                prefix: ::std::option::Option<::std::sync::Arc<str>>,
            ) -> Self {
                #client { #base_init client, prefix }
            }
            fn client(&self) -> &::zerorx_thrift::Client { &self.client }
        }
        #deref
        #[allow(clippy::should_implement_trait)]
        impl #client {
            #[doc = " Calls the service over `client`."]
            pub fn new(client: ::zerorx_thrift::Client) -> Self {
                ::zerorx_thrift::ServiceClient::with_prefix(client, ::std::option::Option::None)
            }
            #[doc = " Calls the service named `name` on a multiplexed server (method names sent as `name:method`)."]
            pub fn multiplexed(client: ::zerorx_thrift::Client, name: &str) -> Self {
                ::zerorx_thrift::ServiceClient::with_prefix(
                    client,
                    ::std::option::Option::Some(::std::sync::Arc::from(::std::format!("{name}:"))),
                )
            }
            #[doc = " The untyped client underneath (its counters, its connection state)."]
            pub fn client(&self) -> &::zerorx_thrift::Client { &self.client }
            #[doc = " Connects to a server of the service."]
            pub async fn connect(
                addr: ::std::net::SocketAddr,
                config: ::zerorx_thrift::ClientConfig,
            ) -> ::std::result::Result<Self, ::zerorx_thrift::ClientError> {
                ::std::result::Result::Ok(Self::new(::zerorx_thrift::Client::connect(addr, config).await?))
            }
            #[doc = " Connects to a server of the service on the Unix socket at `path`."]
            pub async fn connect_unix(
                path: impl ::std::convert::AsRef<::std::path::Path>,
                config: ::zerorx_thrift::ClientConfig,
            ) -> ::std::result::Result<Self, ::zerorx_thrift::ClientError> {
                ::std::result::Result::Ok(Self::new(::zerorx_thrift::Client::connect_unix(path, config).await?))
            }
            fn method_name(&self, name: &'static str) -> ::std::borrow::Cow<'static, str> {
                match &self.prefix {
                    ::std::option::Option::None => ::std::borrow::Cow::Borrowed(name),
                    ::std::option::Option::Some(p) => ::std::borrow::Cow::Owned(::std::format!("{p}{name}")),
                }
            }
            #(#fns)*
        }
    }
}

/// One method on the client.
fn client_fn(module: &Ident, m: &Method) -> TokenStream {
    let (doc, allow, name, params, ret) = (
        m.doc(),
        m.allow_many(),
        &m.client_fn,
        m.params_decl(),
        &m.ret,
    );
    let args_ty = &m.args;
    let fields = m.param_names();
    let args = quote!(#module::#args_ty { #(#fields),* });
    let idl = m.idl.name.as_str();
    if m.idl.oneway {
        return quote! {
            #doc
            #allow
            pub async fn #name(&self #params) -> ::std::result::Result<(), ::zerorx_thrift::ClientError> {
                self.client.call_oneway(&self.method_name(#idl), &#args).await
            }
        };
    }
    if m.throws.is_empty() {
        let (reply, finish) = if m.void {
            (
                quote!(::zerorx_thrift::Void),
                quote!(let _ = r; ::std::result::Result::Ok(())),
            )
        } else {
            (
                quote!(::zerorx_thrift::Returns<#ret>),
                quote!(::std::result::Result::Ok(r.0)),
            )
        };
        return quote! {
            #doc
            #allow
            pub async fn #name(&self #params) -> ::std::result::Result<#ret, ::zerorx_thrift::ClientError> {
                let r: #reply = self.client.call(&self.method_name(#idl), &#args).await?;
                #finish
            }
        };
    }
    let (result, exc) = (&m.result, &m.exception);
    let ok = if m.void {
        quote!(::std::result::Result::Ok(#module::#result::Success) => ::std::result::Result::Ok(()),)
    } else {
        quote!(::std::result::Result::Ok(#module::#result::Success(v)) => ::std::result::Result::Ok(v),)
    };
    quote! {
        #doc
        #allow
        pub async fn #name(&self #params) -> ::std::result::Result<#ret, ::zerorx_thrift::CallError<#module::#exc>> {
            match self.client.call::<_, #module::#result>(&self.method_name(#idl), &#args).await {
                #ok
                ::std::result::Result::Ok(#module::#result::Thrown(e)) => {
                    ::std::result::Result::Err(::zerorx_thrift::CallError::Thrown(e))
                }
                ::std::result::Result::Err(e) => {
                    ::std::result::Result::Err(::zerorx_thrift::CallError::Failed(e))
                }
            }
        }
    }
}

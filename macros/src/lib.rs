//! `#[zerorx::main]` and `#[zerorx::test]`: an `async fn` run to completion on a zerorx
//! runtime built from the attribute's arguments. Use them through `zerorx` (which
//! re-exports both), not this crate.
//!
//! Arguments, all optional: `threads = N` (workers; `main`: one per CPU, `test`: 1),
//! `receive_mode = "copy"` (any [`ZERORX_RECEIVE_MODE`] text: `auto`, `copy`,
//! `device-less:2`, `zero-copy:eth1:0,1`). The environment's `ZERORX_*` settings apply
//! to what the arguments leave unset, as with `Runtime::builder()`.
//!
//! [`ZERORX_RECEIVE_MODE`]: https://docs.rs/zerorx

use proc_macro::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, ItemFn, Lit, MetaNameValue, Token};

/// Runs `async fn main` on a zerorx runtime: `#[zerorx::main]`,
/// `#[zerorx::main(threads = 2, receive_mode = "copy")]`.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, Kind::Main).unwrap_or_else(|e| e.to_compile_error().into())
}

/// Runs an `async fn` test on its own zerorx runtime (one worker unless `threads = N`):
/// `#[zerorx::test]`, `#[zerorx::test(threads = 2)]`.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, Kind::Test).unwrap_or_else(|e| e.to_compile_error().into())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Main,
    Test,
}

fn expand(args: TokenStream, item: TokenStream, kind: Kind) -> syn::Result<TokenStream> {
    let mut f: ItemFn = syn::parse(item)?;
    let what = if kind == Kind::Main {
        "zerorx::main"
    } else {
        "zerorx::test"
    };
    if f.sig.asyncness.take().is_none() {
        return Err(syn::Error::new_spanned(
            f.sig.fn_token,
            format!("#[{what}] goes on an `async fn`"),
        ));
    }
    if kind == Kind::Main && f.sig.ident != "main" {
        return Err(syn::Error::new_spanned(
            &f.sig.ident,
            "#[zerorx::main] goes on `async fn main` (use #[zerorx::test] for tests)",
        ));
    }
    if !f.sig.inputs.is_empty() {
        return Err(syn::Error::new_spanned(
            &f.sig.inputs,
            format!("#[{what}] takes a function without arguments"),
        ));
    }
    let args = Punctuated::<MetaNameValue, Token![,]>::parse_terminated.parse(args)?;
    let mut settings = Vec::new();
    let mut threads_set = false;
    for arg in &args {
        let name = arg
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        match (name.as_str(), &arg.value) {
            (
                "threads",
                Expr::Lit(ExprLit {
                    lit: Lit::Int(lit), ..
                }),
            ) => {
                let n: usize = lit.base10_parse()?;
                if n == 0 {
                    return Err(syn::Error::new(lit.span(), "threads must be at least 1"));
                }
                threads_set = true;
                settings.push(quote! { builder.threads(#n); });
            }
            (
                "receive_mode",
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }),
            ) => {
                let text = s.value();
                let msg = format!("#[{what}(receive_mode = {text:?})]");
                settings.push(quote! {
                    builder.receive_mode(
                        #text.parse::<::zerorx::ReceiveMode>().unwrap_or_else(|e| panic!("{}: {}", #msg, e)),
                    );
                });
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    arg,
                    format!("#[{what}] takes `threads = N` and `receive_mode = \"...\"`"),
                ))
            }
        }
    }
    if kind == Kind::Test && !threads_set {
        settings.push(quote! { builder.threads(1); });
    }
    let body = &f.block;
    let build_msg = format!("{what}: building the runtime");
    let run = quote! {
        let mut builder = ::zerorx::Runtime::builder();
        #(#settings)*
        let runtime = builder.build().unwrap_or_else(|e| panic!("{}: {}", #build_msg, e));
        runtime.block_on(async move #body)
    };
    f.block = syn::parse2(quote! { { #run } })?;
    let test_attr = (kind == Kind::Test).then(|| quote! { #[::core::prelude::v1::test] });
    Ok(quote! { #test_attr #f }.into())
}

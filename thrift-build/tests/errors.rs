//! Bad IDL is an error naming the file and what is wrong, never a panic or Rust
//! that does not compile; the command line says what it needs.

use std::path::PathBuf;
use std::process::Command;
use zerorx_thrift_build::Builder;

/// A scratch directory with `files` written into it.
fn idl(test: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("zerorx-thrift-build-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

fn error_of(test: &str, files: &[(&str, &str)]) -> String {
    let dir = idl(test, files);
    let e = Builder::new()
        .file(dir.join(files[0].0))
        .generate()
        .expect_err("must fail");
    e.to_string()
}

/// A test name, its IDL files (name, text), and what the error must say.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn each_kind_of_bad_idl_is_a_clear_error() {
    let cases: &[Case] = &[
        (
            "syntax",
            &[("a.thrift", "struct A { 1: i32 }")],
            &["a.thrift"],
        ),
        (
            "undefined",
            &[("a.thrift", "struct A { 1: Missing m }")],
            &["a.thrift", "`Missing` is not defined"],
        ),
        (
            "no-include",
            &[("a.thrift", "include \"gone.thrift\"\nstruct A { 1: i32 x }")],
            &["gone.thrift", "not found"],
        ),
        (
            "cycle",
            &[
                ("a.thrift", "include \"b.thrift\"\nstruct A { 1: i32 x }"),
                ("b.thrift", "include \"a.thrift\"\nstruct B { 1: i32 x }"),
            ],
            &["includes itself"],
        ),
        (
            "double-key",
            &[("a.thrift", "struct A { 1: map<double, i32> m }")],
            &["double", "map key"],
        ),
        (
            "empty-union",
            &[("a.thrift", "union U {}")],
            &["union `U` has no fields"],
        ),
        (
            "oneway-result",
            &[("a.thrift", "service S { oneway i32 f() }")],
            &["oneway method `f` must be void"],
        ),
        (
            "twice",
            &[("a.thrift", "struct A { 1: i32 x }\nstruct A { 1: i32 y }")],
            &["`A` is defined twice"],
        ),
        (
            "not-a-service",
            &[("a.thrift", "struct A { 1: i32 x }\nservice S extends A {}")],
            &["extends `A`, which is not a service"],
        ),
        (
            "enum-range",
            &[("a.thrift", "enum E { A = 3000000000 }")],
            &["does not fit in i32"],
        ),
        (
            "bad-default",
            &[("a.thrift", "struct A { 1: i8 x = 300 }")],
            &["300 does not fit in i8"],
        ),
    ];
    for (test, files, needles) in cases {
        let e = error_of(test, files);
        for n in *needles {
            assert!(e.contains(n), "{test}: {e:?} lacks {n:?}");
        }
    }
    let e = Builder::new().generate().expect_err("no files");
    assert!(e.to_string().contains("no IDL file"), "{e}");
    let e = Builder::new()
        .file("/nonexistent/x.thrift")
        .generate()
        .expect_err("missing file");
    assert!(e.to_string().contains("/nonexistent/x.thrift"), "{e}");
}

/// Two IDL names that case conversion turns into one Rust name would be Rust that
/// does not compile: each is an error naming both definitions and their file.
#[test]
fn names_that_clash_after_case_conversion_are_errors_naming_both() {
    let cases: &[Case] = &[
        (
            "clash-fields",
            &[("a.thrift", "struct A { 1: i32 fooBar, 2: i32 foo_bar }")],
            &[
                "a.thrift",
                "`fooBar`",
                "`foo_bar`",
                "`foo_bar`",
                "struct `A`",
            ],
        ),
        (
            "clash-types",
            &[("a.thrift", "struct foo_bar { 1: i32 x }\nenum FooBar { X }")],
            &["a.thrift", "struct `foo_bar`", "enum `FooBar`", "`FooBar`"],
        ),
        (
            "clash-server",
            &[(
                "a.thrift",
                "struct KvServer { 1: i32 x }\nservice KV { void f() }",
            )],
            &[
                "a.thrift",
                "struct `KvServer`",
                "service `KV`",
                "`KvServer`",
            ],
        ),
        (
            "clash-client",
            &[(
                "a.thrift",
                "service S { void f() }\nexception SClient { 1: i32 x }",
            )],
            &[
                "a.thrift",
                "exception `SClient`",
                "service `S`",
                "`SClient`",
            ],
        ),
        (
            "clash-methods",
            &[("a.thrift", "service S { void getIt(), void get_it() }")],
            &["a.thrift", "`getIt`", "`get_it`", "service `S`"],
        ),
        (
            "clash-args",
            &[("a.thrift", "service S { void f(1: i32 aB, 2: i32 a_b) }")],
            &["a.thrift", "`aB`", "`a_b`", "`f`"],
        ),
        (
            "clash-enum-values",
            &[("a.thrift", "enum E { fooBar, FOO_BAR }")],
            &["a.thrift", "`fooBar`", "`FOO_BAR`", "enum `E`"],
        ),
        (
            "clash-enum-values-list",
            &[("a.thrift", "enum E { values }")],
            &["a.thrift", "`values`", "`VALUES`", "enum `E`"],
        ),
        (
            "clash-union",
            &[("a.thrift", "union U { 1: i32 a_b, 2: string aB }")],
            &["a.thrift", "`a_b`", "`aB`", "union `U`", "`AB`"],
        ),
        (
            "clash-consts",
            &[("a.thrift", "const i32 fooBar = 1\nconst i32 FOO_BAR = 2")],
            &["a.thrift", "const `fooBar`", "const `FOO_BAR`"],
        ),
        (
            "clash-throws",
            &[(
                "a.thrift",
                "exception E { 1: i32 x }\nservice S { void f() throws (1: E a_b, 2: E aB) }",
            )],
            &["a.thrift", "`a_b`", "`aB`", "`f`"],
        ),
        (
            "clash-include",
            &[
                (
                    "a.thrift",
                    "include \"shared.thrift\"\nservice Shared { void f() }",
                ),
                ("shared.thrift", "struct X { 1: i32 x }"),
            ],
            &["a.thrift", "service `Shared`", "shared.thrift", "`shared`"],
        ),
        (
            "clash-client-method",
            &[("a.thrift", "service S { void new(), void new_() }")],
            &["a.thrift", "`new`", "`new_`", "service `S`"],
        ),
    ];
    let mut wrong = Vec::new();
    for (test, files, needles) in cases {
        let dir = idl(test, files);
        match Builder::new().file(dir.join(files[0].0)).generate() {
            Ok(_) => wrong.push(format!("{test}: generated code")),
            Err(e) => {
                let e = e.to_string();
                for n in *needles {
                    if !e.contains(n) {
                        wrong.push(format!("{test}: {e:?} lacks {n:?}"));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_command_writes_the_file_and_refuses_bad_usage() {
    let dir = idl(
        "cli",
        &[(
            "calc.thrift",
            "service Calc { i64 add(1: i64 a, 2: i64 b) }",
        )],
    );
    let out = dir.join("gen.rs");
    let bin = env!("CARGO_BIN_EXE_zerorx-thrift-build");
    let st = Command::new(bin)
        .arg("-o")
        .arg(&out)
        .arg(dir.join("calc.thrift"))
        .status()
        .unwrap();
    assert!(st.success());
    let code = std::fs::read_to_string(&out).unwrap();
    assert!(
        code.contains("pub mod calc {"),
        "the file stem names the module"
    );
    assert!(code.contains("pub trait Calc") && code.contains("pub struct CalcClient"));
    // `namespace rs` names it when there is one.
    let ns = idl(
        "namespace",
        &[("calc.thrift", "namespace rs my.calc\nstruct A { 1: i32 x }")],
    );
    let code = Builder::new()
        .file(ns.join("calc.thrift"))
        .generate()
        .unwrap();
    assert!(code.contains("pub mod my_calc {"), "{code}");
    for (args, code) in [
        (&["x.thrift"][..], 2),
        (&["-o"][..], 2),
        (&["--bogus"][..], 2),
    ] {
        let o = Command::new(bin).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("usage"),
            "{args:?}"
        );
    }
    let o = Command::new(bin)
        .args(["-o", "-"])
        .arg(dir.join("missing.thrift"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
}

//! The fn under `#[tool]` read into a model: its arguments (named, or one whole arguments
//! value), where the `&Context` goes, whether it returns a `Result`, its doc comment. Each rule
//! is a small check below its comment; all failures are collected into one error.

use super::attr::Attr;
use proc_macro2::{Ident, Span};
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, Pat, ReturnType, Type};

/// One parameter of the fn, in order.
pub(crate) enum Param<'a> {
    /// A named argument: a property of the model's JSON object.
    Named(Ident, &'a Type),
    /// The whole JSON object, read into one type (a parameter named `args`, or a destructuring
    /// pattern).
    Whole(&'a Pat, &'a Type),
    /// The node's `&Context`.
    Context,
}

/// The fn, checked.
pub(crate) struct ToolFn<'a> {
    pub(crate) func: &'a ItemFn,
    pub(crate) params: Vec<Param<'a>>,
    pub(crate) returns_result: bool,
    doc: Option<String>,
}

/// The fn with its tool name and description settled.
pub(crate) struct Done<'a> {
    pub(crate) f: ToolFn<'a>,
    pub(crate) name: String,
    pub(crate) description: String,
    /// The unit struct: the fn's name in CamelCase.
    pub(crate) type_name: Ident,
}

/// Collects errors, to report them all at once.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, span: Span, msg: impl std::fmt::Display) {
        let e = syn::Error::new(span, msg);
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
    fn finish<T>(self, ok: T) -> syn::Result<T> {
        self.0.map_or(Ok(ok), Err)
    }
}

impl<'a> ToolFn<'a> {
    /// Reads `func`, checking every rule.
    pub(crate) fn read(func: &'a ItemFn) -> syn::Result<Self> {
        let mut errs = Errors::default();
        let sig = &func.sig;
        // Rule: no generics; the model's arguments are read into one concrete type.
        if !sig.generics.params.is_empty() {
            errs.push(
                sig.generics.span(),
                "a `#[tool]` fn cannot be generic: the model's arguments are read into concrete types",
            );
        }
        let typed: Vec<_> = sig.inputs.iter().collect();
        let mut params = Vec::new();
        for input in &typed {
            match input {
                // Rule: a free fn; `self` is nothing the model can send.
                FnArg::Receiver(r) => errs.push(
                    r.span(),
                    "`#[tool]` goes on a free fn: `self` cannot be a tool argument; move the fn out of the \
                     `impl`, or implement `weir_agent::tool::Tool` for the type",
                ),
                FnArg::Typed(p) => match param(&p.pat, &p.ty) {
                    Ok(x) => params.push(x),
                    Err((span, msg)) => errs.push(span, msg),
                },
            }
        }
        // Rule: the whole arguments object comes alone (besides the context).
        let args = params.iter().filter(|p| !matches!(p, Param::Context)).count();
        if args > 1 {
            for p in &params {
                if let Param::Whole(pat, _) = p {
                    errs.push(
                        pat.span(),
                        "a parameter named `args` (or a destructuring pattern) takes the whole arguments \
                         object, so it must be the tool's only argument besides `&Context`; rename it to make \
                         it a named argument",
                    );
                }
            }
        }
        // Rule: at most one `&Context`.
        if params.iter().filter(|p| matches!(p, Param::Context)).count() > 1 {
            errs.push(sig.inputs.span(), "a `#[tool]` fn takes at most one `&Context`");
        }
        let f = ToolFn {
            func,
            params,
            returns_result: returns_result(&sig.output),
            doc: doc_of(&func.attrs),
        };
        errs.finish(f)
    }

    /// Settles the name and the description: the attribute's, else the fn's name and doc.
    pub(crate) fn finish(self, attr: &Attr) -> syn::Result<Done<'a>> {
        let ident = &self.func.sig.ident;
        let name = attr
            .name
            .as_ref()
            .map_or_else(|| ident.to_string().trim_start_matches("r#").to_owned(), |n| n.value());
        // Rule: a description; it is what the model reads to decide when to call the tool.
        let description = match (&attr.description, &self.doc) {
            (Some(d), _) => d.value(),
            (None, Some(d)) => d.clone(),
            (None, None) => {
                return Err(syn::Error::new(
                    ident.span(),
                    format!(
                        "tool `{name}` has no description: write a doc comment (`/// ..`) on the fn, the \
                         model reads it to decide when to call the tool, or give \
                         `#[tool(description = \"..\")]`"
                    ),
                ))
            }
        };
        let type_name = Ident::new(&camel_case(&ident.to_string()), ident.span());
        Ok(Done {
            f: self,
            name,
            description,
            type_name,
        })
    }
}

/// One parameter: the `&Context`, the whole arguments, or a named one.
fn param<'a>(pat: &'a Pat, ty: &'a Type) -> Result<Param<'a>, (Span, String)> {
    if is_context(ty) {
        return Ok(Param::Context);
    }
    // Rule: arguments are owned; they are deserialized from the model's JSON.
    if let Type::Reference(r) = ty {
        return Err((
            r.span(),
            "a tool argument must be an owned type (`String`, not `&str`): it is deserialized from the \
             model's JSON; only `&Context` may be borrowed"
                .into(),
        ));
    }
    let whole_by_name = matches!(pat, Pat::Ident(i) if i.ident == "args");
    let destructured = matches!(pat, Pat::Struct(_) | Pat::TupleStruct(_));
    if whole_by_name || destructured {
        return Ok(Param::Whole(pat, ty));
    }
    // Rule: a named argument has a plain name, its key in the model's JSON.
    match pat {
        Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => Ok(Param::Named(i.ident.clone(), ty)),
        other => Err((
            other.span(),
            "a tool argument needs a plain name: it is the argument's key in the model's JSON".into(),
        )),
    }
}

/// `&Context` or `&weir_runtime::Context` (any path ending in `Context`).
fn is_context(ty: &Type) -> bool {
    let Type::Reference(r) = ty else { return false };
    matches!(&*r.elem, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Context" && s.arguments.is_none()))
}

/// Whether the fn returns a `Result` (any path ending in `Result`): its error is the tool's.
fn returns_result(out: &ReturnType) -> bool {
    match out {
        ReturnType::Type(_, ty) => {
            matches!(&**ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Result"))
        }
        ReturnType::Default => false,
    }
}

/// The doc comment's text, each line without its first space, trimmed; `None` if there is none.
fn doc_of(attrs: &[syn::Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value: syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s), ..
                }),
                ..
            }) => Some(s.value()),
            _ => None,
        })
        .map(|l| l.strip_prefix(' ').unwrap_or(&l).trim_end().to_owned())
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// `get_weather` → `GetWeather`.
pub(crate) fn camel_case(snake: &str) -> String {
    snake
        .trim_start_matches("r#")
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

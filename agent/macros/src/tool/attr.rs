//! The options of `#[tool(..)]`: `name = ".."` (the tool's name, else the fn's) and
//! `description = ".."` (else the doc comment).

use proc_macro2::TokenStream;
use syn::LitStr;

const NAME: &str = "name";
const DESCRIPTION: &str = "description";

/// What the attribute says.
#[derive(Default)]
pub(crate) struct Attr {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
}

/// Reads the attribute's arguments; a duplicate is reported at its second occurrence.
pub(crate) fn parse(args: TokenStream) -> syn::Result<Attr> {
    let mut out = Attr::default();
    let parser = syn::meta::parser(|meta| {
        let slot = if meta.path.is_ident(NAME) {
            &mut out.name
        } else if meta.path.is_ident(DESCRIPTION) {
            &mut out.description
        } else {
            return Err(meta.error("unknown option; `#[tool]` takes `name = \"..\"` and `description = \"..\"`"));
        };
        if slot.is_some() {
            return Err(meta.error("this option is given twice"));
        }
        let value: LitStr = meta.value()?.parse()?;
        if value.value().trim().is_empty() {
            return Err(syn::Error::new(value.span(), "this option cannot be empty"));
        }
        *slot = Some(value);
        Ok(())
    });
    syn::parse::Parser::parse2(parser, args)?;
    Ok(out)
}

//! `#[derive(State)]`, by phase: `attr` parses the attributes, `ast` builds the model, `valid`
//! checks the rules that span fields, `expand` writes the code (or the stubs after an error).
//! `migrate` parses and checks a versioned state's `#[migrate(..)]` steps.

mod ast;
mod attr;
mod expand;
mod migrate;
mod valid;

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use syn::DeriveInput;

/// The expansion of `#[derive(State)]` on `node`: the code, or every error found plus stubs.
pub(crate) fn derive(node: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let input = ast::Input::from_syn(&cx, node);
    if let Some(input) = &input {
        input.validate(&cx);
    }
    let tokens = match cx.check() {
        Ok(()) => expand::expand(input.as_ref().expect("a valid input has a model")),
        Err(errors) => {
            let errors = errors.to_compile_error();
            let stubs = expand::fallback(node, input.as_ref());
            quote::quote!(#errors #stubs)
        }
    };
    expand::debug_print(node, &tokens);
    tokens
}

#[cfg(test)]
mod tests {
    use super::derive;
    use syn::parse_quote;

    /// The messages of the `compile_error!`s in `tokens`, in order.
    fn errors(tokens: &proc_macro2::TokenStream) -> Vec<String> {
        let file: syn::File = syn::parse2(tokens.clone()).expect("the expansion parses");
        let mut out = Vec::new();
        for item in file.items {
            if let syn::Item::Macro(m) = item {
                if m.mac.path.segments.last().is_some_and(|s| s.ident == "compile_error") {
                    let lit: syn::LitStr = m.mac.parse_body().expect("a message");
                    out.push(lit.value());
                }
            }
        }
        out
    }

    #[test]
    fn valid_input_expands_to_items_without_errors() {
        let input: syn::DeriveInput = parse_quote! {
            struct Research {
                question: String,
                #[reducer(append)]
                notes: Vec<String>,
                #[reducer(with = merge_scores, update = f64)]
                scores: Vec<f64>,
                #[channel(topic, accumulate)]
                events: Vec<String>,
            }
        };
        let tokens = derive(&input);
        assert!(errors(&tokens).is_empty());
        let text = tokens.to_string();
        assert!(text.contains("struct ResearchUpdate"));
        assert!(text.contains("fn overwrite_notes"));
        assert!(text.contains("__WEIR_FIELD_events : usize = 3"));
        assert!(!text.contains("fn overwrite_question"));
    }

    #[test]
    fn every_attribute_error_is_reported_in_one_pass() {
        let input: syn::DeriveInput = parse_quote! {
            struct Research {
                #[reducer(apend)]
                notes: Vec<String>,
                #[channel(topik)]
                events: Vec<String>,
                #[reducer(add)]
                #[channel(any)]
                calls: u32,
            }
        };
        let tokens = derive(&input);
        assert_eq!(
            errors(&tokens),
            [
                "unknown reducer `apend`; expected `append`, `add`, `merge` or `with = path::to::fn`",
                "unknown channel `topik`; expected `last_value`, `ephemeral`, `topic`, `any`, `untracked` or `after_finish`",
                "field `calls` already has a channel (`add`); a field takes one `#[reducer(..)]` or `#[channel(..)]`",
            ]
        );
        // The stubs are still there, so code using them adds no error.
        let text = tokens.to_string();
        assert!(text.contains("struct ResearchUpdate"));
        assert!(text.contains("fn notes"));
        assert!(text.contains("fn overwrite_notes"));
    }

    #[test]
    fn state_attributes_set_the_crate_path_and_the_update_name() {
        let input: syn::DeriveInput = parse_quote! {
            #[state(crate = "my::weir", update = Delta)]
            struct Research {
                question: String,
            }
        };
        let text = derive(&input).to_string();
        assert!(text.contains("struct Delta"));
        assert!(text.contains("my :: weir :: __private :: State for Research"));
    }

    #[test]
    fn a_field_named_like_an_overwrite_method_is_refused() {
        let input: syn::DeriveInput = parse_quote! {
            struct Research {
                #[reducer(append)]
                notes: Vec<String>,
                overwrite_notes: bool,
            }
        };
        assert_eq!(
            errors(&derive(&input)),
            ["field `overwrite_notes` clashes with the `overwrite_notes` method generated for the reducer field `notes`; rename one of them"]
        );
    }
}

//! A `.env` file, as `langgraph dev` reads the one its config's `env` names (python-dotenv's
//! format): `KEY=VALUE` lines, an optional `export ` before the key, `#` comments (a whole line,
//! or after an unquoted value and a space), values in single quotes (as written) or double
//! quotes (with `\n`, `\t`, `\"` and `\\`, and over several lines), and `${VAR}` or
//! `${VAR:-default}` in unquoted and double-quoted values, from the file's earlier keys, else
//! the environment. A line that is none of these is an error naming it. And the config's `env`
//! read: that file's pairs, or an object's.

use std::path::Path;

/// `env`'s variables: an object's string values, or the pairs of the `.env` file it names
/// (relative to `base`; `${VAR}` in it from the process's environment).
pub(super) fn env_vars(env: Option<serde_json::Value>, base: &Path) -> Result<Vec<(String, String)>, (String, String)> {
    use serde_json::Value;
    match env {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(vars)) => vars
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                other => Err((format!("env.{k}"), format!("expected a string, got {other}"))),
            })
            .collect(),
        Some(Value::String(file)) => {
            let path = base.join(&file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| ("env".to_owned(), format!("cannot read `{}`: {e}", path.display())))?;
            parse(&text, |name| std::env::var(name).ok())
                .map_err(|(line, why)| ("env".to_owned(), format!("`{}` line {line}: {why}", path.display())))
        }
        Some(other) => Err((
            "env".into(),
            format!("expected the path of a `.env` file or an object of strings, got {other}"),
        )),
    }
}

/// The pairs of `text`, in order; or the line (from 1) at fault and why.
pub(super) fn parse(
    text: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = i + 1;
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((key, value)) = line.split_once('=') else {
            return Err((at, "expected `KEY=VALUE`".into()));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
        {
            return Err((at, format!("`{key}` is not a variable name")));
        }
        let value = value.trim_start();
        let lookup = |name: &str| {
            pairs
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .or_else(|| env(name))
        };
        let value = if let Some(rest) = value.strip_prefix('\'') {
            let Some(end) = rest.find('\'') else {
                return Err((at, "a single-quoted value with no closing `'`".into()));
            };
            rest[..end].to_owned()
        } else if let Some(rest) = value.strip_prefix('"') {
            let mut raw = rest.to_owned();
            let body = loop {
                if let Some(end) = closing_quote(&raw) {
                    break raw[..end].to_owned();
                }
                match lines.next() {
                    Some((_, more)) => {
                        raw.push('\n');
                        raw.push_str(more);
                    }
                    None => return Err((at, "a double-quoted value with no closing `\"`".into())),
                }
            };
            expand(&unescape(&body), &lookup)
        } else {
            let value = match value.find(" #").or_else(|| value.find("\t#")) {
                Some(comment) => &value[..comment],
                None => value,
            };
            expand(value.trim_end(), &lookup)
        };
        pairs.push((key.to_owned(), value));
    }
    Ok(pairs)
}

/// Where the `"` that closes a double-quoted value is in `raw` (one not escaped).
fn closing_quote(raw: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in raw.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some(i),
            _ => escaped = false,
        }
    }
    None
}

/// A double-quoted value's escapes: `\n`, `\t`, `\r`, `\"`, `\\` (others left as written).
fn unescape(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// `${VAR}` and `${VAR:-default}` in `value`, by `lookup` (unset: empty, or the default).
fn expand(value: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else { break };
        out.push_str(&rest[..start]);
        let inner = &rest[start + 2..start + len];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match lookup(name).filter(|v| !v.is_empty() || default.is_none()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(default.unwrap_or_default()),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
        parse(text, |name| (name == "HOME").then(|| "/home/me".to_owned()))
    }

    #[test]
    fn python_dotenv_s_forms_are_read() {
        let text = "# keys\nOPENAI_API_KEY=sk-1 # a comment\nexport BASE = http://x:1/v1\nEMPTY=\n\
                    SINGLE='as ${HOME} is'\nDOUBLE=\"two\\nlines \\\"quoted\\\"\"\nMULTI=\"a\nb\"\n\
                    PATH_OF=${HOME}/bin\nDEFAULTED=${NOPE:-fallback}\nAGAIN=${OPENAI_API_KEY}\nHASH=a#b\n";
        let pairs = read(text).unwrap();
        let got: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [
                ("OPENAI_API_KEY", "sk-1"),
                ("BASE", "http://x:1/v1"),
                ("EMPTY", ""),
                ("SINGLE", "as ${HOME} is"),
                ("DOUBLE", "two\nlines \"quoted\""),
                ("MULTI", "a\nb"),
                ("PATH_OF", "/home/me/bin"),
                ("DEFAULTED", "fallback"),
                ("AGAIN", "sk-1"),
                ("HASH", "a#b"),
            ]
        );
    }

    #[test]
    fn a_line_that_is_no_pair_is_refused_naming_it() {
        assert_eq!(read("A=1\njust words\n"), Err((2, "expected `KEY=VALUE`".into())));
        assert_eq!(read("BAD KEY=1"), Err((1, "`BAD KEY` is not a variable name".into())));
        assert_eq!(
            read("A='open"),
            Err((1, "a single-quoted value with no closing `'`".into()))
        );
        assert_eq!(
            read("A=\"open\nstill"),
            Err((1, "a double-quoted value with no closing `\"`".into()))
        );
    }
}

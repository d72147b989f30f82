//! libpq's connection strings, read as libpq reads them, for the two TLS settings weir takes
//! out before tokio-postgres parses the rest: `sslmode` (libpq's `verify-ca` and `verify-full`,
//! which tokio-postgres does not know, are handed on as `require` and checked here) and
//! `sslrootcert` (the file of roots, which tokio-postgres does not read).
//!
//! A connection string is a URI (`postgres://…?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem`,
//! its query's keys and values percent-encoded) or `key=value` settings, as libpq allows them:
//! separated by whitespace, with whitespace around `=`, a value in single quotes when it holds
//! whitespace, `\` escaping the character after it. Searching the text for `sslmode=` instead
//! missed `sslmode = require` and `sslmode='verify-full'` (the connection then went without the
//! chain check asked for, or failed on a value tokio-postgres does not know), and could find
//! the words inside another setting's quoted value.

use super::tls::Checks;
use std::path::PathBuf;

/// The connection string for tokio-postgres, and what its TLS settings ask of weir.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct TlsSettings {
    /// The string without `sslrootcert`, and with `verify-ca`/`verify-full` as `require`.
    pub(super) conninfo: String,
    /// What the last `sslmode` asks to check (libpq: a later setting wins).
    pub(super) checks: Checks,
    /// The file the last `sslrootcert` names.
    pub(super) root_file: Option<PathBuf>,
}

/// One setting of a connection string.
struct Param<'s> {
    /// Its text as written (`key=value`, quotes and escapes included).
    raw: &'s str,
    key: String,
    value: String,
}

/// Reads `conninfo`'s TLS settings (see the module's docs).
pub(super) fn tls_settings(conninfo: &str) -> TlsSettings {
    let uri = conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://");
    let (head, params, rest) = match uri {
        true => uri_params(conninfo),
        false => setting_params(conninfo),
    };
    let mut checks = Checks::Prefer;
    let mut root_file = None;
    let mut kept = Vec::with_capacity(params.len());
    for p in params {
        match p.key.as_str() {
            "sslrootcert" => root_file = Some(PathBuf::from(p.value)),
            "sslmode" => {
                checks = match p.value.as_str() {
                    "verify-full" => Checks::Full,
                    "verify-ca" | "require" => Checks::Chain,
                    _ => Checks::Prefer,
                };
                kept.push(match checks {
                    Checks::Chain | Checks::Full => "sslmode=require",
                    Checks::Prefer => p.raw,
                });
            }
            _ => kept.push(p.raw),
        }
    }
    let conninfo = match uri {
        true if kept.is_empty() => format!("{head}{rest}"),
        true => format!("{head}?{}{rest}", kept.join("&")),
        false => {
            let mut all = kept;
            all.extend(Some(rest).filter(|r| !r.is_empty()));
            all.join(" ")
        }
    };
    TlsSettings {
        conninfo,
        checks,
        root_file,
    }
}

/// A URI's part before its query, the query's parameters (keys and values percent-decoded),
/// and its fragment (`#…`, left for tokio-postgres to judge).
fn uri_params(uri: &str) -> (&str, Vec<Param<'_>>, &str) {
    let Some(q) = uri.find('?') else {
        return (uri, Vec::new(), "");
    };
    let end = uri[q..].find('#').map_or(uri.len(), |i| q + i);
    let params = uri[q + 1..end]
        .split('&')
        .filter(|raw| !raw.is_empty())
        .map(|raw| {
            let (key, value) = raw.split_once('=').unwrap_or((raw, ""));
            Param {
                raw,
                key: percent_decoded(key),
                value: percent_decoded(value),
            }
        })
        .collect();
    (&uri[..q], params, &uri[end..])
}

/// `key=value` settings, as libpq reads them, and what follows the last one that reads as a
/// setting (a syntax error: kept whole, for tokio-postgres to report).
fn setting_params(text: &str) -> (&str, Vec<Param<'_>>, &str) {
    let mut params = Vec::new();
    let mut chars = text.char_indices().peekable();
    loop {
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(start, _)) = chars.peek() else {
            return ("", params, "");
        };
        let mut key = String::new();
        while let Some((_, c)) = chars.next_if(|(_, c)| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        if chars.next_if(|(_, c)| *c == '=').is_none() {
            return ("", params, text[start..].trim_end());
        }
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let quoted = chars.next_if(|(_, c)| *c == '\'').is_some();
        let mut value = String::new();
        let mut closed = !quoted;
        while let Some((_, c)) = chars.next_if(|(_, c)| quoted || !c.is_whitespace()) {
            match c {
                '\'' if quoted => {
                    closed = true;
                    break;
                }
                '\\' => value.extend(chars.next().map(|(_, c)| c)),
                c => value.push(c),
            }
        }
        if !closed {
            return ("", params, text[start..].trim_end());
        }
        let end = chars.peek().map_or(text.len(), |&(i, _)| i);
        params.push(Param {
            raw: &text[start..end],
            key,
            value,
        });
    }
}

/// `text` with its `%XX` escapes decoded (as bytes, then as UTF-8, lossily).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{tls_settings, Checks, TlsSettings};
    use std::path::PathBuf;

    fn settings(conninfo: &str, checks: Checks, root_file: Option<&str>) -> TlsSettings {
        TlsSettings {
            conninfo: conninfo.to_owned(),
            checks,
            root_file: root_file.map(PathBuf::from),
        }
    }

    #[test]
    fn a_uris_sslrootcert_is_taken_out_and_verify_modes_go_on_as_require() {
        let cases = [
            (
                "postgres://h/db?sslmode=verify-full&sslrootcert=/etc/ca.pem",
                settings("postgres://h/db?sslmode=require", Checks::Full, Some("/etc/ca.pem")),
            ),
            (
                "postgres://h/db?sslrootcert=%2Fmy%20certs%2Fca.pem&sslmode=verify-ca",
                settings(
                    "postgres://h/db?sslmode=require",
                    Checks::Chain,
                    Some("/my certs/ca.pem"),
                ),
            ),
            (
                "postgres://h/db?sslrootcert=ca.pem",
                settings("postgres://h/db", Checks::Prefer, Some("ca.pem")),
            ),
            (
                "postgresql://h/db?application_name=x&sslmode=require",
                settings(
                    "postgresql://h/db?application_name=x&sslmode=require",
                    Checks::Chain,
                    None,
                ),
            ),
            (
                "postgres://h/db?sslmode=disable",
                settings("postgres://h/db?sslmode=disable", Checks::Prefer, None),
            ),
            ("postgres://h/db", settings("postgres://h/db", Checks::Prefer, None)),
            // Another parameter's value is no setting of its own.
            (
                "postgres://h/db?application_name=no_sslrootcert=x&options=sslmode%3Dverify-full",
                settings(
                    "postgres://h/db?application_name=no_sslrootcert=x&options=sslmode%3Dverify-full",
                    Checks::Prefer,
                    None,
                ),
            ),
            // An encoded key is the same key; the last setting wins, as in libpq.
            (
                "postgres://h/db?sslmode=disable&ssl%6Dode=verify-full",
                settings("postgres://h/db?sslmode=disable&sslmode=require", Checks::Full, None),
            ),
        ];
        for (conninfo, expected) in cases {
            assert_eq!(tls_settings(conninfo), expected, "{conninfo}");
        }
    }

    #[test]
    fn key_value_settings_are_read_with_libpqs_spacing_quotes_and_escapes() {
        let cases = [
            (
                "host=h sslrootcert=/etc/ca.pem sslmode=verify-ca",
                settings("host=h sslmode=require", Checks::Chain, Some("/etc/ca.pem")),
            ),
            // Whitespace around `=` (this one went without the chain check).
            (
                "host=h  sslmode = require\tuser=u",
                settings("host=h sslmode=require user=u", Checks::Chain, None),
            ),
            // A quoted value, and a file name with a space and an escaped quote.
            (
                r"sslmode='verify-full' sslrootcert='/my certs/o\'brien.pem' dbname=test",
                settings(
                    "sslmode=require dbname=test",
                    Checks::Full,
                    Some("/my certs/o'brien.pem"),
                ),
            ),
            // An unquoted value with an escaped space.
            (
                r"sslrootcert=/my\ certs/ca.pem host=h",
                settings("host=h", Checks::Prefer, Some("/my certs/ca.pem")),
            ),
            // Words inside another setting's quoted value are not settings.
            (
                "application_name='a sslmode=disable sslrootcert=x' sslmode=verify-full",
                settings(
                    "application_name='a sslmode=disable sslrootcert=x' sslmode=require",
                    Checks::Full,
                    None,
                ),
            ),
            (
                "xsslmode=verify-full host=h",
                settings("xsslmode=verify-full host=h", Checks::Prefer, None),
            ),
            ("", settings("", Checks::Prefer, None)),
        ];
        for (conninfo, expected) in cases {
            assert_eq!(tls_settings(conninfo), expected, "{conninfo}");
        }
    }

    #[test]
    fn what_does_not_read_as_a_setting_is_kept_for_tokio_postgres_to_report() {
        // The settings before it are still read.
        assert_eq!(
            tls_settings("sslmode=verify-full host"),
            settings("sslmode=require host", Checks::Full, None)
        );
        assert_eq!(
            tls_settings("sslmode=verify-ca password='unclosed"),
            settings("sslmode=require password='unclosed", Checks::Chain, None)
        );
        let parsed: Result<tokio_postgres::Config, _> = "sslmode=require password='unclosed".parse();
        assert!(parsed.is_err(), "tokio-postgres reports what was kept");
    }
}

//! When a checkpoint was made: [`Timestamp`].

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When a checkpoint was made: microseconds since the Unix epoch, UTC.
///
/// Shown (`Display`) and stored by the SQL savers as RFC 3339 with microseconds, e.g.
/// `2026-11-01T09:05:03.000042Z`, the text LangGraph gives a checkpoint's `ts`. A run makes a
/// record every step and rarely reads one back, so the text is made when asked for, not per
/// checkpoint; timestamps compare in time order.
///
/// # Examples
///
/// ```
/// use weir_runtime::checkpoint::Timestamp;
///
/// let t = Timestamp::from_unix_micros(1_793_531_103_000_042);
/// assert_eq!(t.to_string(), "2026-11-01T11:05:03.000042Z");
/// assert_eq!(Timestamp::parse("2026-11-01T11:05:03.000042Z"), Some(t));
/// assert!(Timestamp::now() > t);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    micros: u64,
}

impl Timestamp {
    /// The time now, by the system clock (the epoch if the clock is set before it).
    pub fn now() -> Self {
        Self::from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default())
    }

    /// The time `micros` microseconds after the Unix epoch.
    pub fn from_unix_micros(micros: u64) -> Self {
        Self { micros }
    }

    /// The microseconds since the Unix epoch.
    pub fn unix_micros(self) -> u64 {
        self.micros
    }

    /// The timestamp written as [`Display`](fmt::Display) writes it (RFC 3339, UTC, six digits
    /// of fraction, a `Z`), or `None` for any other text, an impossible date among them.
    pub fn parse(text: &str) -> Option<Self> {
        // The year has four digits, or more after 9999; the rest is `-MM-DDTHH:MM:SS.ffffffZ`.
        let b = text.as_bytes();
        let year_len = b.len().checked_sub(LEN - 4).filter(|n| (4..=6).contains(n))?;
        let (year, b) = b.split_at(year_len);
        let shape = year.iter().all(u8::is_ascii_digit)
            && b.iter().enumerate().all(|(i, c)| match i {
                0 | 3 => *c == b'-',
                6 => *c == b'T',
                9 | 12 => *c == b':',
                15 => *c == b'.',
                22 => *c == b'Z',
                _ => c.is_ascii_digit(),
            });
        if !shape {
            return None;
        }
        let num = |digits: &[u8]| digits.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        let days = days_from_civil(num(year), num(&b[1..3]), num(&b[4..6]));
        let secs = days * 86_400 + num(&b[7..9]) * 3_600 + num(&b[10..12]) * 60 + num(&b[13..15]);
        let micros = u64::try_from(secs)
            .ok()?
            .checked_mul(1_000_000)?
            .checked_add(num(&b[16..22]) as u64)?;
        // Out-of-range fields (month 13, February 30, hour 24) and a year with a leading zero
        // past 9999 come back as another text.
        let t = Self { micros };
        (t.text().as_str() == text).then_some(t)
    }

    /// The text of [`Display`](fmt::Display), on the stack.
    pub(crate) fn text(self) -> Text {
        let secs = (self.micros / 1_000_000) as i64;
        let micros = self.micros % 1_000_000;
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        let sod = secs.rem_euclid(86_400);
        let mut out = Text { bytes: [0; 32], len: 0 };
        let mut at = 0;
        let mut digits = |mut n: u64, width: usize, then: u8| {
            for digit in out.bytes[at..at + width].iter_mut().rev() {
                *digit = b'0' + (n % 10) as u8;
                n /= 10;
            }
            at += width;
            out.bytes[at] = then;
            at += 1;
        };
        // Four digits, more only past 9999 (not a clock's reading), as `{:04}` would write.
        let year_width = if year > 99_999 {
            6
        } else if year > 9_999 {
            5
        } else {
            4
        };
        digits(year as u64, year_width, b'-');
        digits(month as u64, 2, b'-');
        digits(day as u64, 2, b'T');
        digits((sod / 3600) as u64, 2, b':');
        digits((sod % 3600 / 60) as u64, 2, b':');
        digits((sod % 60) as u64, 2, b'.');
        digits(micros, 6, b'Z');
        out.len = LEN - 4 + year_width;
        out
    }
}

/// The length of the text of a timestamp before the year 10000.
const LEN: usize = "2026-11-01T09:05:03.000042Z".len();

impl From<Duration> for Timestamp {
    /// The time `d` after the Unix epoch (microseconds beyond `u64` saturate).
    fn from(d: Duration) -> Self {
        Self::from_unix_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

/// The text of a [`Timestamp`], in a buffer of its own.
pub(crate) struct Text {
    bytes: [u8; 32],
    len: usize,
}

impl Text {
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).expect("ASCII digits and separators")
    }
}

/// The date of day `days` since the epoch (Howard Hinnant's days-to-civil).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The day since the epoch of a date (the inverse of [`civil_from_days`] for valid dates).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, micros: u64) -> Timestamp {
        Timestamp::from_unix_micros(secs * 1_000_000 + micros)
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(at(0, 0).to_string(), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 7).to_string(), "2000-02-29T00:00:00.000007Z");
        assert_eq!(at(1_793_531_103, 42).to_string(), "2026-11-01T11:05:03.000042Z");
        assert_eq!(at(253_402_300_799, 999_999).to_string(), "9999-12-31T23:59:59.999999Z");
        assert_eq!(at(253_402_300_800, 0).to_string(), "10000-01-01T00:00:00.000000Z");
        let last = Timestamp::from_unix_micros(u64::MAX);
        assert_eq!(last.to_string(), "586524-01-19T08:01:49.551615Z");
        assert_eq!(Timestamp::parse(&last.to_string()), Some(last));
        assert_eq!(
            Timestamp::parse("10000-01-01T00:00:00.000000Z"),
            Some(at(253_402_300_800, 0))
        );
    }

    #[test]
    fn parses_what_it_writes_across_the_calendar() {
        // Every day of four centuries (leap years, 2000 and 2100 among them), at odd times.
        for day in (0..146_097 + 20_000u64).step_by(7) {
            let t = at(day * 86_400 + day % 86_400, day * 7919 % 1_000_000);
            assert_eq!(Timestamp::parse(&t.to_string()), Some(t), "{t}");
        }
        let t = Timestamp::now();
        assert_eq!(Timestamp::parse(&t.to_string()), Some(t));
    }

    #[test]
    fn refuses_other_text_and_impossible_dates() {
        for bad in [
            "",
            "2026-11-01T11:05:03Z",
            "2026-11-01T11:05:03.000042",
            "2026-11-01 11:05:03.000042Z",
            "2026-11-01T11:05:03.000042+00:00",
            "2026-13-01T11:05:03.000042Z",
            "2026-02-29T11:05:03.000042Z",
            "2026-04-31T11:05:03.000042Z",
            "2026-11-00T11:05:03.000042Z",
            "2026-11-01T24:05:03.000042Z",
            "2026-11-01T11:60:03.000042Z",
            "2026-11-01T11:05:60.000042Z",
            "1969-12-31T23:59:59.999999Z",
            "2026-1a-01T11:05:03.000042Z",
            "02026-11-01T11:05:03.000042Z",
            "586524-01-19T08:01:49.551616Z",
            "9999999-01-01T00:00:00.000000Z",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad:?}");
        }
        assert!(Timestamp::parse("2024-02-29T00:00:00.000000Z").is_some());
    }

    #[test]
    fn orders_in_time() {
        assert!(at(5, 1) < at(5, 2) && at(5, 999_999) < at(6, 0));
        assert_eq!(
            Timestamp::from(Duration::from_micros(42)),
            Timestamp::from_unix_micros(42)
        );
    }
}

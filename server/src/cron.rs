//! Cron schedules, as LangGraph's crons write them (its server reads them with `croniter`): five
//! fields (`minute hour day-of-month month day-of-week`), or six with seconds last
//! (`*/10 * * * * 30`), or a macro (`@hourly`, `@daily`/`@midnight`, `@weekly`, `@monthly`,
//! `@yearly`/`@annually`). A field is `*` (or `?` for the days), a number, a name (`jan`…`dec`,
//! `sun`…`sat`), a range `a-b`, a step `*/n`, `a-b/n` or `a/n`, or a comma list of those; day of
//! week 7 is Sunday, as 0. When both day fields are restricted a day matches either (Vixie cron's
//! rule, croniter's default). [`Schedule::next_after`] finds the next time that matches, in a
//! time zone (the wall clock there; a time a clock change skips fires as much later as the clock
//! jumped, 02:30 at 03:30 on a spring-forward night; a time it repeats fires once, at the first).
//! This module knows nothing of runs or storage.

use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// How far ahead [`Schedule::next_after`] looks: a schedule with no time in the next five years
/// (`0 0 30 2 *`, the 30th of February) never fires.
const HORIZON_YEARS: i16 = 5;

/// A parsed cron schedule: the allowed values of each field, as bit sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    seconds: u64,
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Whether both day fields were restricted (a day matches either) or not (both must match,
    /// one of them being every day).
    days_either: bool,
}

/// One field's name, range and the names it takes.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Field = Field {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Field = Field {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY: Field = Field {
    name: "day of month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Field = Field {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const WEEKDAY: Field = Field {
    name: "day of week",
    min: 0,
    max: 7,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};
const SECOND: Field = Field {
    name: "second",
    min: 0,
    max: 59,
    names: &[],
};

impl Schedule {
    /// Parses `text`.
    ///
    /// # Errors
    /// A message naming the field at fault and why (`hour: 25 is out of range 0-23`), or saying
    /// how many fields there must be.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_server::cron::Schedule;
    ///
    /// assert!(Schedule::parse("*/5 9-17 * * mon-fri").is_ok());
    /// assert_eq!(
    ///     Schedule::parse("0 25 * * *").unwrap_err(),
    ///     "hour: 25 is out of range 0-23"
    /// );
    /// ```
    pub fn parse(text: &str) -> Result<Schedule, String> {
        let expanded = match text.trim().to_ascii_lowercase().as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *".to_owned(),
            "@monthly" => "0 0 1 * *".to_owned(),
            "@weekly" => "0 0 * * 0".to_owned(),
            "@daily" | "@midnight" => "0 0 * * *".to_owned(),
            "@hourly" => "0 * * * *".to_owned(),
            other if other.starts_with('@') => {
                return Err(format!(
                    "`{other}` is not a macro; the macros are @yearly, @annually, @monthly, @weekly, @daily, \
                     @midnight and @hourly"
                ))
            }
            other => other.to_owned(),
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 && fields.len() != 6 {
            return Err(format!(
                "a schedule has 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds \
                 last; `{}` has {}",
                text.trim(),
                fields.len()
            ));
        }
        let mut weekdays = set(fields[4], &WEEKDAY)?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays | 1) & !(1 << 7);
        }
        let restricted = |f: &str| f != "*" && f != "?";
        Ok(Schedule {
            seconds: fields.get(5).map_or(Ok(1), |f| set(f, &SECOND))?,
            minutes: set(fields[0], &MINUTE)?,
            hours: set(fields[1], &HOUR)?,
            days: set(fields[2], &DAY)?,
            months: set(fields[3], &MONTH)?,
            weekdays,
            days_either: restricted(fields[2]) && restricted(fields[4]),
        })
    }

    /// The first time strictly after `after` that the schedule matches on the wall clock of `tz`,
    /// or `None` when none comes in the next five years.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_server::cron::Schedule;
    ///
    /// let nine = Schedule::parse("0 9 * * *").unwrap();
    /// let tz = jiff::tz::TimeZone::get("America/New_York").unwrap();
    /// let after: jiff::Timestamp = "2026-12-05T23:31:47Z".parse().unwrap();
    /// assert_eq!(nine.next_after(after, &tz).unwrap().to_string(), "2026-12-06T14:00:00Z");
    /// ```
    pub fn next_after(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let start = tz.to_datetime(after).with().subsec_nanosecond(0).build().ok()?;
        let mut at = start.checked_add(1.second()).ok()?;
        let horizon = start.date().year().checked_add(HORIZON_YEARS)?;
        while at.year() <= horizon {
            if !bit(self.months, at.month()) {
                at = first_of_next_month(at.date())?.to_datetime(Time::midnight());
            } else if !self.day_matches(at.date()) {
                at = at.date().tomorrow().ok()?.to_datetime(Time::midnight());
            } else if !bit(self.hours, at.hour()) {
                at = at.with().minute(0).second(0).build().ok()?.checked_add(1.hour()).ok()?;
            } else if !bit(self.minutes, at.minute()) {
                at = at.with().second(0).build().ok()?.checked_add(1.minute()).ok()?;
            } else if !bit(self.seconds, at.second()) {
                at = at.checked_add(1.second()).ok()?;
            } else {
                // A wall time a clock change skips maps to as much later as the clock jumped; one
                // it repeats maps to its first instant (which may not be after `after`).
                match tz.to_ambiguous_timestamp(at).compatible() {
                    Ok(when) if when > after => return Some(when),
                    _ => at = at.checked_add(1.second()).ok()?,
                }
            }
        }
        None
    }

    fn day_matches(&self, date: Date) -> bool {
        let in_month = bit(self.days, date.day());
        let in_week = bit(self.weekdays, date.weekday().to_sunday_zero_offset());
        if self.days_either {
            in_month || in_week
        } else {
            in_month && in_week
        }
    }
}

/// Whether `value` is in `set`.
fn bit(set: u64, value: impl Into<i64>) -> bool {
    u32::try_from(value.into()).is_ok_and(|v| v < 64 && set & (1 << v) != 0)
}

fn first_of_next_month(date: Date) -> Option<Date> {
    date.first_of_month().checked_add(1.month()).ok()
}

/// The values one field allows.
fn set(text: &str, field: &Field) -> Result<u64, String> {
    let mut out = 0u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| format!("{}: the step of `{item}` is not a whole number above 0", field.name))?;
                (range, step)
            }
            None => (item, 1),
        };
        let (low, high) = if range == "*" || (range == "?" && matches!(field.name, "day of month" | "day of week")) {
            (field.min, field.max)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (value(a, field)?, value(b, field)?);
            if a > b {
                return Err(format!("{}: the range `{range}` ends before it starts", field.name));
            }
            (a, b)
        } else {
            let a = value(range, field)?;
            // `a/n` runs from a to the field's end; a lone value is itself.
            (a, if item.contains('/') { field.max } else { a })
        };
        for v in (low..=high).step_by(step as usize) {
            out |= 1 << v;
        }
    }
    Ok(out)
}

/// One value of a field: a number in its range, or one of its names.
fn value(text: &str, field: &Field) -> Result<u32, String> {
    if text.is_empty() {
        return Err(format!("{}: a value is missing", field.name));
    }
    if let Some(i) = field.names.iter().position(|n| *n == text) {
        return Ok(i as u32 + field.min);
    }
    let v: u32 = text.parse().map_err(|_| {
        let names = if field.names.is_empty() {
            String::new()
        } else {
            format!(" or a name ({}…{})", field.names[0], field.names[field.names.len() - 1])
        };
        format!("{}: `{text}` is not a number{names}", field.name)
    })?;
    if v < field.min || v > field.max {
        return Err(format!(
            "{}: {v} is out of range {}-{}",
            field.name, field.min, field.max
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(schedule: &str, after: &str, zone: &str) -> String {
        let tz = TimeZone::get(zone).unwrap();
        let after: Timestamp = after.parse().unwrap();
        Schedule::parse(schedule)
            .unwrap()
            .next_after(after, &tz)
            .map_or("never".to_owned(), |t| t.to_string())
    }

    #[test]
    fn the_next_time_is_the_first_match_strictly_after() {
        assert_eq!(next("* * * * *", "2026-12-05T23:31:47Z", "UTC"), "2026-12-05T23:32:00Z");
        assert_eq!(next("* * * * *", "2026-12-05T23:32:00Z", "UTC"), "2026-12-05T23:33:00Z");
        // Seconds last, as croniter reads a sixth field.
        assert_eq!(
            next("* * * * * */2", "2026-12-05T23:31:47.4Z", "UTC"),
            "2026-12-05T23:31:48Z"
        );
        assert_eq!(
            next("*/15 9-17 * * mon-fri", "2026-12-05T12:00:00Z", "UTC"),
            "2026-12-07T09:00:00Z"
        );
        assert_eq!(
            next("0 0 1 jan *", "2026-12-05T00:00:00Z", "UTC"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(next("@hourly", "2026-12-31T23:59:59Z", "UTC"), "2027-01-01T00:00:00Z");
        assert_eq!(
            next("30 4/6 * * *", "2026-12-05T05:00:00Z", "UTC"),
            "2026-12-05T10:30:00Z"
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-12-05T00:00:00Z", "UTC"),
            "2028-02-29T00:00:00Z"
        );
        assert_eq!(next("0 0 30 2 *", "2026-12-05T00:00:00Z", "UTC"), "never");
    }

    #[test]
    fn restricted_day_fields_match_either_and_seven_is_sunday() {
        // The 13th, or any Friday: 2026-12-11 is a Friday, before the 13th.
        assert_eq!(
            next("0 0 13 * fri", "2026-12-05T00:00:00Z", "UTC"),
            "2026-12-11T00:00:00Z"
        );
        assert_eq!(next("0 0 * * 7", "2026-12-05T00:00:00Z", "UTC"), "2026-12-06T00:00:00Z");
        assert_eq!(
            next("0 0 ? * sun", "2026-12-05T00:00:00Z", "UTC"),
            "2026-12-06T00:00:00Z"
        );
    }

    #[test]
    fn a_zone_moves_the_wall_clock_and_its_changes_are_kept() {
        assert_eq!(
            next("0 9 * * *", "2026-12-05T23:31:47Z", "America/New_York"),
            "2026-12-06T14:00:00Z"
        );
        // 2027-03-14 02:30 does not exist in New York: it fires at 03:30 EDT, once.
        assert_eq!(
            next("30 2 * * *", "2027-03-14T05:00:00Z", "America/New_York"),
            "2027-03-14T07:30:00Z"
        );
        assert_eq!(
            next("30 2 * * *", "2027-03-14T07:30:00Z", "America/New_York"),
            "2027-03-15T06:30:00Z"
        );
        // 2027-11-07 01:30 happens twice: it fires at the first.
        assert_eq!(
            next("30 1 * * *", "2027-11-07T04:00:00Z", "America/New_York"),
            "2027-11-07T05:30:00Z"
        );
        assert_eq!(
            next("30 1 * * *", "2027-11-07T05:30:00Z", "America/New_York"),
            "2027-11-08T06:30:00Z"
        );
    }

    #[test]
    fn bad_schedules_name_the_field_at_fault() {
        let err = |s: &str| Schedule::parse(s).unwrap_err();
        assert_eq!(err("0 25 * * *"), "hour: 25 is out of range 0-23");
        assert_eq!(
            err("*/0 * * * *"),
            "minute: the step of `*/0` is not a whole number above 0"
        );
        assert_eq!(err("* * * foo *"), "month: `foo` is not a number or a name (jan…dec)");
        assert_eq!(
            err("* * 5-1 * *"),
            "day of month: the range `5-1` ends before it starts"
        );
        assert_eq!(err("* * * * * 60"), "second: 60 is out of range 0-59");
        assert_eq!(err("1,,2 * * * *"), "minute: a value is missing");
        assert!(err("bad").contains("has 1"), "{}", err("bad"));
        assert!(err("@often").contains("not a macro"));
    }
}

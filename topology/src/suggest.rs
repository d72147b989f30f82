//! The closest declared name to a misspelt one.

/// The candidate closest to `name`, if one is close enough to be what the user meant.
///
/// Closeness is the optimal-string-alignment distance (Levenshtein plus swaps of adjacent
/// characters), counted in characters. A candidate qualifies when its distance is at most a third
/// of the longer name's length (at least 1) and smaller than that length, so a one-letter name
/// is never "corrected" into another. A candidate that differs only in case always qualifies.
/// Ties go to the earlier candidate.
///
/// # Examples
///
/// ```
/// use weir_topology::suggest;
///
/// let nodes = ["search", "write"];
/// assert_eq!(suggest("serch", nodes), Some("search"));
/// assert_eq!(suggest("wirte", nodes), Some("write"));
/// assert_eq!(suggest("plan", nodes), None);
/// ```
pub fn suggest<'a, I>(name: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        let distance = if candidate.to_lowercase() == name.to_lowercase() {
            0
        } else {
            let longest = name.chars().count().max(candidate.chars().count());
            let distance = distance(name, candidate);
            if distance > (longest / 3).max(1) || distance >= longest {
                continue;
            }
            distance
        };
        if best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// The optimal-string-alignment distance between `a` and `b`, in characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the dynamic-programming table: two back, one back, current.
    let mut two_back = vec![0; b.len() + 1];
    let mut one_back: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (one_back[j] + 1).min(current[j - 1] + 1).min(one_back[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(two_back[j - 2] + 1);
            }
            current[j] = d;
        }
        std::mem::swap(&mut two_back, &mut one_back);
        std::mem::swap(&mut one_back, &mut current);
    }
    one_back[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_edits_and_swaps() {
        assert_eq!(distance("serch", "search"), 1);
        assert_eq!(distance("wirte", "write"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", "abc"), 0);
    }

    #[test]
    fn suggest_prefers_the_closest_then_the_first() {
        assert_eq!(suggest("ab", ["ac", "ab_"]), Some("ac"));
        assert_eq!(suggest("plann", ["plans", "plan"]), Some("plans"));
        assert_eq!(suggest("Search", ["search"]), Some("search"));
        assert_eq!(suggest("x", ["y"]), None);
        assert_eq!(suggest("summarize", ["summarise"]), Some("summarise"));
    }
}

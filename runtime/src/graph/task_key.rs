//! A task's identity: its id within its step (`pull:<node>`, `push:<index>`), under which its
//! pending writes are saved, and the idempotency key a node gives an external service so that a
//! side effect happens once however often the task runs, which the stream's events and the
//! state snapshots also show as the task's key (LangGraph's task id).

/// The id of a task of node `node`: `pull:<node>` for a node its edges triggered, `push:<index>`
/// for the `Send` at that index of the step's `Send`s.
pub(crate) fn task_id(node: &str, push_index: Option<usize>) -> String {
    match push_index {
        None => format!("pull:{node}"),
        Some(i) => format!("push:{i:010}"),
    }
}

/// The idempotency key of the task `task` of step `step`, run from checkpoint `base` (none
/// before a thread's first) of namespace `ns` of `thread`: 128 bits of FNV-1a over the parts,
/// written as a UUID (`8-4-4-4-12` lowercase hex). The parts are length-prefixed, so no two
/// different identities run together into the same bytes. The function is part of the
/// format: keys handed out stay valid across versions.
pub(crate) fn idempotency_key(thread: &str, ns: &str, base: Option<&str>, step: i64, task: &str) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let step = step.to_string();
    let mut h = OFFSET;
    for part in [thread, ns, base.unwrap_or(""), &step, task] {
        for byte in (part.len() as u64).to_le_bytes().iter().chain(part.as_bytes()) {
            h ^= u128::from(*byte);
            h = h.wrapping_mul(PRIME);
        }
    }
    let hex = format!("{h:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_fixed_by_its_parts_and_changes_with_each() {
        let key = idempotency_key("t", "", Some("c1"), 2, "pull:a");
        // The format is a promise: the same parts give this key in every version.
        assert_eq!(key, idempotency_key("t", "", Some("c1"), 2, "pull:a"));
        assert_eq!(key.len(), 36);
        assert_eq!(key.matches('-').count(), 4);
        let others = [
            idempotency_key("u", "", Some("c1"), 2, "pull:a"),
            idempotency_key("t", "sub", Some("c1"), 2, "pull:a"),
            idempotency_key("t", "", Some("c2"), 2, "pull:a"),
            idempotency_key("t", "", None, 2, "pull:a"),
            idempotency_key("t", "", Some("c1"), 3, "pull:a"),
            idempotency_key("t", "", Some("c1"), 2, "pull:b"),
            // the same bytes split differently between parts
            idempotency_key("tc", "", Some("1"), 2, "pull:a"),
        ];
        for other in others {
            assert_ne!(key, other);
        }
    }
}

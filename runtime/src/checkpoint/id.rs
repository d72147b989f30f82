//! Checkpoint ids: 32 hex digits that compare, as strings, in creation order.

use super::Timestamp;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A new checkpoint id: 32 lower-case hex digits that compare, as strings, in creation order.
///
/// The first 16 digits are the microseconds since the Unix epoch, kept strictly increasing within
/// the process (`max(last + 1, now)`); the last 16 are random, so ids made at the same microsecond
/// by two processes differ. Ids of different processes are ordered by their clocks.
///
/// # Examples
///
/// ```
/// use weir_runtime::checkpoint::new_checkpoint_id;
///
/// let a = new_checkpoint_id();
/// let b = new_checkpoint_id();
/// assert_eq!(a.len(), 32);
/// assert!(a < b);
/// ```
pub fn new_checkpoint_id() -> String {
    new_checkpoint_id_after(None)
}

/// A new checkpoint id, as [`new_checkpoint_id`], that is also greater than `after` (the head a
/// put will follow): a head written by another process, whose clock may run ahead of this one's,
/// is still followed by a greater id, as every saver requires (see [`Checkpointer::put`]).
///
/// # Examples
///
/// ```
/// use weir_runtime::checkpoint::new_checkpoint_id_after;
///
/// let far = "ffff000000000000ffffffffffffffff";
/// assert!(new_checkpoint_id_after(Some(far)).as_str() > far);
/// ```
///
/// [`Checkpointer::put`]: super::Checkpointer::put
pub fn new_checkpoint_id_after(after: Option<&str>) -> String {
    checkpoint_id_after(after).0.to_string()
}

/// [`new_checkpoint_id_after`] as the runtime keeps it: one allocation, shared by the record, the
/// head and the channels that point at the checkpoint's blobs; with the reading of the clock it
/// was made at, which is also the checkpoint's creation time.
pub(crate) fn checkpoint_id_after(after: Option<&str>) -> (Arc<str>, Timestamp) {
    let now = Timestamp::now();
    let mut id = [0u8; 32];
    write_id(&mut id, next_micros(now.unix_micros(), 0));
    // Most heads were made by this process just before, and the id is already greater. Only
    // when it is not are the head's microseconds read (another id, say a test's, counts as none).
    if let Some(after) = after.filter(|after| after.as_bytes() >= &id[..]) {
        let floor = Some(after)
            .filter(|after| after.len() == 32)
            .and_then(|after| u64::from_str_radix(after.get(..16)?, 16).ok())
            .unwrap_or(0);
        if floor > 0 {
            write_id(&mut id, next_micros(0, floor));
        }
    }
    (Arc::from(std::str::from_utf8(&id).expect("hex digits")), now)
}

/// The microseconds of the next id: `now`, unless that is not past the last id this process made
/// or past `floor`.
fn next_micros(now: u64, floor: u64) -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1).max(floor.saturating_add(1));
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// Writes the id of `micros`: their 16 hex digits, then 16 drawn from them and a random seed
/// drawn once per process, so ids of two processes never collide and no id costs a system call.
fn write_id(id: &mut [u8; 32], micros: u64) {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        getrandom::u64().unwrap_or_else(|_| {
            // No OS randomness: std's randomly keyed hasher is still distinct per process.
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(std::process::id().into());
            h.finish()
        })
    });
    write_hex(&mut id[..16], micros);
    write_hex(&mut id[16..], splitmix64(seed ^ micros));
}

/// Writes `x` as 16 lower-case hex digits into `out`, a byte (two digits) at a time.
fn write_hex(out: &mut [u8], x: u64) {
    /// The two digits of every byte.
    const PAIRS: [[u8; 2]; 256] = {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut pairs = [[0; 2]; 256];
        let mut b = 0;
        while b < 256 {
            pairs[b] = [DIGITS[b >> 4], DIGITS[b & 0xf]];
            b += 1;
        }
        pairs
    };
    for (pair, byte) in out.chunks_exact_mut(2).zip(x.to_be_bytes()) {
        pair.copy_from_slice(&PAIRS[usize::from(byte)]);
    }
}

/// A 64-bit mix (splitmix64's finalizer): distinct inputs give distinct outputs.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_follows_a_head_whose_clock_runs_ahead_and_ignores_a_head_of_another_format() {
        let now = Timestamp::now();
        let ahead = format!("{:016x}{}", now.unix_micros() + 60_000_000, "f".repeat(16));
        let (id, made) = checkpoint_id_after(Some(&ahead));
        assert!(*id > *ahead, "{id} after {ahead}");
        assert_eq!(
            u64::from_str_radix(&id[..16], 16),
            u64::from_str_radix(&ahead[..16], 16).map(|m| m + 1)
        );
        assert!(made >= now, "the clock's reading, not the head's");
        let (next, _) = checkpoint_id_after(Some(&id));
        assert!(next > id);
        let (other, _) = checkpoint_id_after(Some("zzz"));
        assert!(u64::from_str_radix(&other[..16], 16).is_ok_and(|m| m > 0));
    }

    #[test]
    fn checkpoint_ids_increase_within_a_process() {
        let ids: Vec<String> = (0..1000).map(|_| new_checkpoint_id()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids
            .iter()
            .all(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())));
    }
}

//! A host's replay requests as they travel to its agent (`PUT /v1/sessions/{id}/replay`): a
//! trace holds millions of requests, too many for the JSON of a job, so they go as bytes.
//!
//! ```text
//! "IOLABRQ1"                      8 bytes, the format and its version
//! count                           u64, little-endian
//! count records of 21 bytes:      due_ns u64, offset u64, len u32 (little-endian), op u8
//!                                 (0 read, 1 write)
//! ```
//!
//! Due times never go back, and none is past `LATEST_DUE_NS`; every length is above 0. The
//! agent checks the offsets against its own target once it has opened it.

use iolab_spec::ReplayIo;

const MAGIC: &[u8; 8] = b"IOLABRQ1";
const HEAD: usize = 16;
const RECORD: usize = 21;
/// The latest a request may be due: as `iolab_trace::replay_plan::LATEST_DUE_NS`.
pub const LATEST_DUE_NS: u64 = 1 << 62;
/// The most bytes of requests an agent takes: about 51 million requests.
pub const MAX_REPLAY_BYTES: usize = 1 << 30;

pub fn encode(ios: &[ReplayIo]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEAD + RECORD * ios.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(ios.len() as u64).to_le_bytes());
    for io in ios {
        bytes.extend_from_slice(&io.due_ns.to_le_bytes());
        bytes.extend_from_slice(&io.offset.to_le_bytes());
        bytes.extend_from_slice(&io.len.to_le_bytes());
        bytes.push(u8::from(io.write));
    }
    bytes
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("the replay's requests do not start with {}: they are not iolab's replay requests, or of another version; run the same iolab version on coordinator and agent", String::from_utf8_lossy(MAGIC))]
    Magic,
    #[error("the replay's requests are {got} bytes where {count} requests take {expected}: they were cut short or padded; send them again")]
    Length { count: u64, got: usize, expected: u128 },
    #[error("replay request {index}: {reason}")]
    Record { index: usize, reason: String },
}

pub fn decode(bytes: &[u8]) -> Result<Vec<ReplayIo>, WireError> {
    if bytes.len() < HEAD || &bytes[..8] != MAGIC {
        return Err(WireError::Magic);
    }
    let count = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let expected = HEAD as u128 + RECORD as u128 * u128::from(count);
    if bytes.len() as u128 != expected {
        return Err(WireError::Length { count, got: bytes.len(), expected });
    }
    let mut ios = Vec::with_capacity(count as usize);
    let mut last_due = 0;
    for (index, record) in bytes[HEAD..].chunks_exact(RECORD).enumerate() {
        let u64_at = |at: usize| u64::from_le_bytes(record[at..at + 8].try_into().expect("8 bytes"));
        let (due_ns, offset) = (u64_at(0), u64_at(8));
        let len = u32::from_le_bytes(record[16..20].try_into().expect("4 bytes"));
        let bad = |reason: String| WireError::Record { index, reason };
        let write = match record[20] {
            0 => false,
            1 => true,
            op => return Err(bad(format!("operation {op} is neither a read (0) nor a write (1)"))),
        };
        if len == 0 {
            return Err(bad("its length is 0".into()));
        }
        if due_ns < last_due || due_ns > LATEST_DUE_NS {
            return Err(bad(format!(
                "it is due at {due_ns} ns, before the request ahead of it ({last_due} ns) or past {LATEST_DUE_NS} ns"
            )));
        }
        if offset.checked_add(u64::from(len)).is_none() {
            return Err(bad(format!("{offset} + {len} bytes runs past the largest offset")));
        }
        last_due = due_ns;
        ios.push(ReplayIo { due_ns, write, offset, len });
    }
    Ok(ios)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<ReplayIo> {
        vec![
            ReplayIo { due_ns: 0, write: false, offset: 0, len: 4096 },
            ReplayIo { due_ns: 10, write: true, offset: 1 << 40, len: 65536 },
            ReplayIo { due_ns: 10, write: false, offset: 8192, len: 512 },
        ]
    }

    #[test]
    fn requests_arrive_as_sent() {
        assert_eq!(decode(&encode(&sample())), Ok(sample()));
        assert_eq!(decode(&encode(&[])), Ok(Vec::new()));
    }

    /// Each damage is refused with what is wrong and where.
    #[test]
    fn damaged_requests_are_refused() {
        let good = encode(&sample());
        assert!(decode(&good[..good.len() - 1]).unwrap_err().to_string().contains("cut short"));
        let mut other = good.clone();
        other[7] = b'2';
        assert_eq!(decode(&other), Err(WireError::Magic));
        let record = |index: usize, at: usize, value: &[u8]| {
            let mut bytes = good.clone();
            let start = HEAD + index * RECORD + at;
            bytes[start..start + value.len()].copy_from_slice(value);
            decode(&bytes).unwrap_err().to_string()
        };
        assert_eq!(
            record(1, 20, &[2]),
            "replay request 1: operation 2 is neither a read (0) nor a write (1)"
        );
        assert_eq!(record(2, 16, &0u32.to_le_bytes()), "replay request 2: its length is 0");
        assert!(record(2, 0, &5u64.to_le_bytes()).starts_with("replay request 2: it is due at 5 ns, before"));
        assert!(record(0, 8, &u64::MAX.to_le_bytes()).contains("runs past the largest offset"));
        let mut huge = good;
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(decode(&huge), Err(WireError::Length { .. })));
    }
}

//! A bounded, lock-free, single-producer single-consumer queue of variable-length `f64`
//! records, in one block of memory that the JS producer can write directly.
//!
//! The training thread is the only producer and the writer thread the only consumer, so
//! two cursors are all the synchronisation needed: no locks, no CAS, no allocation per
//! record. The block is exposed to JavaScript as an ArrayBuffer (see `RingMemory`), so
//! the hot path writes a record and publishes the tail with `Atomics.store` without any
//! native call; the Rust `Producer` follows the same protocol (tests, and the fallback
//! where a runtime forbids external ArrayBuffers).
//!
//! Layout, in u64 words (`ts/recorder/ring-writer.ts` mirrors it):
//!
//! ```text
//! word 0   tail slot cursor (u32, low half)      producer's cache line
//! word 1   tail record count (u32, low half)
//! word 2   logged (f64)      word 3 dropped (f64)
//! word 4   magic (f64), written by JS to prove the memory is shared
//! word 5   the wall clock (f64 Unix seconds), refreshed by the writer thread every tick
//! word 16  head slot cursor (u32)                 consumer's cache line
//! word 17  head record count (u32)
//! word 32… slots (f64), a power of two of them
//! ```
//!
//! Cursors are u32 positions that wrap (differences are taken modulo 2^32). A record is
//! `[len, payload…]`, always contiguous: when it would not fit before the end of the slot
//! array the producer writes `-1` ("skip to the start") and begins the next lap.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

pub const HEADER_WORDS: usize = 32;
const TAIL_SLOT: usize = 0;
const TAIL_RECORDS: usize = 1;
const LOGGED: usize = 2;
const DROPPED: usize = 3;
pub const MAGIC_WORD: usize = 4;
const NOW: usize = 5;
const HEAD_SLOT: usize = 16;
const HEAD_RECORDS: usize = 17;
/// The "skip to the start of the slot array" marker.
pub const WRAP: f64 = -1.0;
/// Largest slot array (positions are u32; differences must stay below 2^31).
pub const MAX_SLOTS: usize = 1 << 28;

/// The queue's memory: header + slots, owned jointly by Rust and (through an external
/// ArrayBuffer) JavaScript.
pub struct RingMemory {
    words: Box<[AtomicU64]>,
    mask: u32,
    max_records: u32,
}

impl RingMemory {
    fn word_u32(&self, i: usize) -> &AtomicU32 {
        // SAFETY: an AtomicU64 is 8-aligned and 8 bytes; its low half (little endian on
        // every platform we build for) is a valid, aligned AtomicU32 — the same 4 bytes a
        // JS Int32Array reads at index 2*i.
        unsafe { &*(self.words[i].as_ptr() as *const AtomicU32) }
    }

    fn f64_at(&self, i: usize) -> f64 {
        f64::from_bits(self.words[i].load(Ordering::Acquire))
    }

    fn slot(&self, pos: u32) -> &AtomicU64 {
        &self.words[HEADER_WORDS + (pos & self.mask) as usize]
    }

    pub fn capacity_slots(&self) -> u32 {
        self.mask + 1
    }

    pub fn max_records(&self) -> u32 {
        self.max_records
    }

    /// Start and length in bytes of the whole block, for the JS view.
    pub fn as_bytes_ptr(&self) -> (*mut u8, usize) {
        (self.words.as_ptr() as *mut u8, self.words.len() * 8)
    }

    /// Step records logged (written by the producer, JS or Rust).
    pub fn logged(&self) -> u64 {
        self.f64_at(LOGGED) as u64
    }

    /// Step records refused by a full queue.
    pub fn dropped(&self) -> u64 {
        self.f64_at(DROPPED) as u64
    }

    pub fn magic(&self) -> f64 {
        self.f64_at(MAGIC_WORD)
    }

    /// Publishes the wall clock for producers to stamp records with: reading the clock
    /// costs ~90 ns on a VM, a quarter of a `logStep`; this word costs one load.
    pub fn set_now(&self, unix_seconds: f64) {
        self.words[NOW].store(unix_seconds.to_bits(), Ordering::Release);
    }

    pub fn now(&self) -> f64 {
        self.f64_at(NOW)
    }
}

/// The producing end. `!Sync`: exactly one thread may push.
pub struct Producer {
    mem: Arc<RingMemory>,
    _not_sync: PhantomData<Cell<()>>,
}

/// The consuming end, owned by the writer thread.
pub struct Consumer {
    mem: Arc<RingMemory>,
}

/// Why a record was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushError {
    /// The queue holds `max_records` records or has no room for this many slots.
    Full,
    /// The record is larger than the whole queue could ever hold.
    TooLarge,
}

/// Creates a queue bounded to `max_records` records and at least `min_slots` f64 slots.
pub fn channel(max_records: usize, min_slots: usize) -> (Producer, Consumer) {
    let slots = min_slots.clamp(64, MAX_SLOTS).next_power_of_two();
    let mem = Arc::new(RingMemory {
        words: (0..HEADER_WORDS + slots)
            .map(|_| AtomicU64::new(0))
            .collect(),
        mask: (slots - 1) as u32,
        max_records: max_records.clamp(1, u32::MAX as usize / 2) as u32,
    });
    (
        Producer {
            mem: mem.clone(),
            _not_sync: PhantomData,
        },
        Consumer { mem },
    )
}

fn bump_f64(w: &AtomicU64, by: f64) {
    // one writer (the producing thread): load + store, no locked instruction
    w.store(
        (f64::from_bits(w.load(Ordering::Relaxed)) + by).to_bits(),
        Ordering::Release,
    );
}

impl Producer {
    pub fn memory(&self) -> &Arc<RingMemory> {
        &self.mem
    }

    /// Counts a record as logged (every `log_step`, whatever becomes of it).
    pub fn count_logged(&self) {
        bump_f64(&self.mem.words[LOGGED], 1.0);
    }

    fn count_dropped(&self) {
        bump_f64(&self.mem.words[DROPPED], 1.0);
    }

    /// Copies `payload` into the queue as one record. Never blocks. Counts a drop on error.
    pub fn push(&self, payload: &[f64]) -> Result<(), PushError> {
        self.push_with_header(&[], payload)
    }

    /// Pushes `header ++ payload` as one record (a caller can prepend a few slots without
    /// copying the payload first). Counts a drop on error.
    pub fn push_with_header(&self, header: &[f64], payload: &[f64]) -> Result<(), PushError> {
        let m = &*self.mem;
        let len = (header.len() + payload.len()) as u32;
        let cap = m.capacity_slots();
        if len as u64 + 1 > cap as u64 {
            self.count_dropped();
            return Err(PushError::TooLarge);
        }
        let mut tail = m.word_u32(TAIL_SLOT).load(Ordering::Relaxed);
        let records = m.word_u32(TAIL_RECORDS).load(Ordering::Relaxed);
        let head = m.word_u32(HEAD_SLOT).load(Ordering::Acquire);
        let popped = m.word_u32(HEAD_RECORDS).load(Ordering::Acquire);
        let room_to_end = cap - (tail & m.mask);
        let skip = if room_to_end < len + 1 {
            room_to_end
        } else {
            0
        };
        let used = tail.wrapping_sub(head);
        if records.wrapping_sub(popped) >= m.max_records
            || used as u64 + skip as u64 + len as u64 + 1 > cap as u64
        {
            self.count_dropped();
            return Err(PushError::Full);
        }
        if skip > 0 {
            m.slot(tail).store(WRAP.to_bits(), Ordering::Relaxed);
            tail = tail.wrapping_add(skip);
        }
        let mut pos = tail.wrapping_add(1);
        for &v in header.iter().chain(payload) {
            m.slot(pos).store(v.to_bits(), Ordering::Relaxed);
            pos = pos.wrapping_add(1);
        }
        m.slot(tail)
            .store((len as f64).to_bits(), Ordering::Relaxed);
        m.word_u32(TAIL_SLOT).store(pos, Ordering::Release);
        m.word_u32(TAIL_RECORDS)
            .store(records.wrapping_add(1), Ordering::Release);
        Ok(())
    }
}

impl Consumer {
    pub fn memory(&self) -> &Arc<RingMemory> {
        &self.mem
    }

    /// Pops one record into `out` (cleared first). Returns false when the queue is empty.
    pub fn pop_into(&self, out: &mut Vec<f64>) -> bool {
        let m = &*self.mem;
        let mut head = m.word_u32(HEAD_SLOT).load(Ordering::Relaxed);
        // Acquire pairs with the producer's Release (JS: Atomics.store) of the tail
        let tail = m.word_u32(TAIL_SLOT).load(Ordering::Acquire);
        if head == tail {
            return false;
        }
        let mut len = f64::from_bits(m.slot(head).load(Ordering::Relaxed));
        if len == WRAP {
            head = head.wrapping_add(m.capacity_slots() - (head & m.mask));
            if head == tail {
                m.word_u32(HEAD_SLOT).store(head, Ordering::Release);
                return false;
            }
            len = f64::from_bits(m.slot(head).load(Ordering::Relaxed));
        }
        out.clear();
        // a corrupt length (a producer bug) must not run past the tail
        let len = if len >= 0.0 && (len as u64) < tail.wrapping_sub(head) as u64 {
            len as u32
        } else {
            tail.wrapping_sub(head) - 1
        };
        out.reserve(len as usize);
        for i in 1..=len {
            out.push(f64::from_bits(
                m.slot(head.wrapping_add(i)).load(Ordering::Relaxed),
            ));
        }
        m.word_u32(HEAD_SLOT)
            .store(head.wrapping_add(1 + len), Ordering::Release);
        let popped = m.word_u32(HEAD_RECORDS).load(Ordering::Relaxed);
        m.word_u32(HEAD_RECORDS)
            .store(popped.wrapping_add(1), Ordering::Release);
        true
    }

    /// Records waiting to be consumed.
    pub fn len(&self) -> u32 {
        let m = &*self.mem;
        m.word_u32(TAIL_RECORDS)
            .load(Ordering::Acquire)
            .wrapping_sub(m.word_u32(HEAD_RECORDS).load(Ordering::Relaxed))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_roundtrip_with_wraparound() {
        let (p, c) = channel(1000, 64);
        let mut out = Vec::new();
        for round in 0..300u32 {
            let rec: Vec<f64> = (0..(round % 13 + 1))
                .map(|i| (round * 100 + i) as f64)
                .collect();
            p.push(&rec).unwrap();
            assert!(c.pop_into(&mut out));
            assert_eq!(out, rec);
        }
        assert!(!c.pop_into(&mut out));
    }

    #[test]
    fn refuses_when_record_bound_reached() {
        let (p, c) = channel(3, 1024);
        for i in 0..3 {
            p.push(&[i as f64]).unwrap();
        }
        assert_eq!(p.push(&[9.0]), Err(PushError::Full));
        let mut out = Vec::new();
        assert!(c.pop_into(&mut out));
        p.push(&[9.0]).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(p.memory().dropped(), 1);
    }

    #[test]
    fn refuses_when_slots_exhausted_and_oversized() {
        let (p, c) = channel(1000, 64);
        assert_eq!(p.push(&[0.0; 64]), Err(PushError::TooLarge));
        p.push(&[1.0; 40]).unwrap();
        // 41 used, 23 left to the end: a 30-slot record must wrap, and there is no room
        assert_eq!(p.push(&[1.0; 30]), Err(PushError::Full));
        p.push(&[1.0; 20]).unwrap();
        let mut out = Vec::new();
        assert!(c.pop_into(&mut out));
        // now the wrap fits: marker at 62, record at 0
        p.push(&[2.0; 30]).unwrap();
        assert!(c.pop_into(&mut out) && out.len() == 20);
        assert!(c.pop_into(&mut out) && out == vec![2.0; 30]);
        assert!(!c.pop_into(&mut out));
    }

    #[test]
    fn header_is_prepended() {
        let (p, c) = channel(10, 64);
        p.push_with_header(&[7.0, 8.0], &[1.0, 2.0]).unwrap();
        let mut out = Vec::new();
        c.pop_into(&mut out);
        assert_eq!(out, vec![7.0, 8.0, 1.0, 2.0]);
    }

    #[test]
    fn nan_and_infinities_survive() {
        let (p, c) = channel(10, 64);
        p.push(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0])
            .unwrap();
        let mut out = Vec::new();
        c.pop_into(&mut out);
        assert!(out[0].is_nan());
        assert_eq!(out[1], f64::INFINITY);
        assert_eq!(out[2], f64::NEG_INFINITY);
        assert!(out[3] == 0.0 && out[3].is_sign_negative());
    }

    #[test]
    fn cursors_wrap_past_u32() {
        let (p, c) = channel(1000, 64);
        // start both cursors just below 2^32
        let m = p.memory();
        let start = u32::MAX - 100;
        m.word_u32(TAIL_SLOT).store(start, Ordering::Relaxed);
        m.word_u32(HEAD_SLOT).store(start, Ordering::Relaxed);
        let mut out = Vec::new();
        for k in 0..500u32 {
            let rec = vec![k as f64; (k % 9 + 1) as usize];
            p.push(&rec).unwrap();
            assert!(c.pop_into(&mut out));
            assert_eq!(out, rec);
        }
    }

    #[test]
    fn concurrent_producer_consumer_preserves_order_and_counts() {
        let (p, c) = channel(256, 4096);
        let n = 200_000u64;
        let consumer = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut seen = 0u64;
            let mut last: Option<u64> = None;
            loop {
                if !c.pop_into(&mut out) {
                    std::hint::spin_loop();
                    continue;
                }
                let k = out[0] as u64;
                if k == n {
                    return seen; // terminator
                }
                assert!(
                    last.is_none_or(|l| k > l),
                    "out of order: {k} after {last:?}"
                );
                assert_eq!(out.len(), (k % 7 + 1) as usize);
                assert!(out.iter().all(|&v| v == k as f64));
                last = Some(k);
                seen += 1;
            }
        });
        let (mut accepted, mut refused) = (0u64, 0u64);
        for k in 0..n {
            match p.push(&vec![k as f64; (k % 7 + 1) as usize]) {
                Ok(()) => accepted += 1,
                Err(PushError::Full) => refused += 1,
                Err(e) => panic!("{e:?}"),
            }
        }
        while p.push(&[n as f64]).is_err() {
            std::hint::spin_loop();
        }
        assert_eq!(accepted + refused, n);
        assert_eq!(consumer.join().unwrap(), accepted);
        assert!(p.memory().dropped() >= refused, "every refusal is counted");
    }
}

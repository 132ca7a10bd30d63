//! A bounded, lock-free, single-producer single-consumer queue of variable-length
//! `f64` records.
//!
//! The training thread is the only producer (one recorder lives on one JS thread) and the
//! writer thread the only consumer, so two monotonically increasing cursors are all the
//! synchronisation needed: no locks, no CAS, no allocation per record. A record is framed
//! as `[len, payload...]` and may wrap around the end of the slot array.
//!
//! The queue is bounded twice: by slots (memory) and by records (the user-facing
//! `queue_capacity`). When either bound would be exceeded the record is refused and the
//! caller counts a drop; the producer never waits.

use std::cell::{Cell, UnsafeCell};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

struct Shared {
    slots: Box<[UnsafeCell<f64>]>,
    mask: u64,
    max_records: u64,
    /// Slot cursor written by the producer (Release) after a record is complete.
    tail: AtomicU64,
    /// Records published by the producer.
    pushed: AtomicU64,
    /// Slot cursor written by the consumer (Release) after a record has been read.
    head: AtomicU64,
    /// Records consumed.
    popped: AtomicU64,
}

// SAFETY: slots are only written by the single producer in the range [tail, tail+n) that the
// consumer cannot observe until `tail` is released, and only read by the single consumer in
// [head, tail) which the producer does not reuse until `head` is released.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// The producing end. `!Sync`: exactly one thread may push.
pub struct Producer {
    shared: Arc<Shared>,
    /// Producer-local copy of `tail` (only this side writes it).
    tail: Cell<u64>,
    pushed: Cell<u64>,
    _not_sync: PhantomData<Cell<()>>,
}

/// The consuming end, owned by the writer thread.
pub struct Consumer {
    shared: Arc<Shared>,
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
    let slots = min_slots.max(64).next_power_of_two();
    let shared = Arc::new(Shared {
        slots: (0..slots).map(|_| UnsafeCell::new(0.0)).collect(),
        mask: (slots - 1) as u64,
        max_records: max_records.max(1) as u64,
        tail: AtomicU64::new(0),
        pushed: AtomicU64::new(0),
        head: AtomicU64::new(0),
        popped: AtomicU64::new(0),
    });
    (
        Producer {
            shared: shared.clone(),
            tail: Cell::new(0),
            pushed: Cell::new(0),
            _not_sync: PhantomData,
        },
        Consumer { shared },
    )
}

impl Shared {
    #[inline]
    fn slot(&self, pos: u64) -> *mut f64 {
        self.slots[(pos & self.mask) as usize].get()
    }
}

impl Producer {
    /// Copies `payload` into the queue as one record. Never blocks.
    #[inline]
    pub fn push(&self, payload: &[f64]) -> Result<(), PushError> {
        self.push_with_header(&[], payload)
    }

    /// Pushes `header ++ payload` as one record, so a caller can prepend a few slots
    /// (a timestamp, say) without first copying the payload.
    pub fn push_with_header(&self, header: &[f64], payload: &[f64]) -> Result<(), PushError> {
        let s = &*self.shared;
        let len = (header.len() + payload.len()) as u64;
        let capacity = s.mask + 1;
        if len + 1 > capacity {
            return Err(PushError::TooLarge);
        }
        let pushed = self.pushed.get();
        if pushed - s.popped.load(Ordering::Acquire) >= s.max_records {
            return Err(PushError::Full);
        }
        let tail = self.tail.get();
        if tail + 1 + len - s.head.load(Ordering::Acquire) > capacity {
            return Err(PushError::Full);
        }
        // SAFETY: [tail, tail+1+len) is free (checked above) and invisible to the consumer
        // until the Release store below.
        unsafe {
            *s.slot(tail) = len as f64;
            let mut pos = tail + 1;
            for &v in header.iter().chain(payload) {
                *s.slot(pos) = v;
                pos += 1;
            }
        }
        self.tail.set(tail + 1 + len);
        self.pushed.set(pushed + 1);
        s.tail.store(tail + 1 + len, Ordering::Release);
        s.pushed.store(pushed + 1, Ordering::Release);
        Ok(())
    }

    /// Records currently queued (an upper bound seen from the producer).
    pub fn len(&self) -> u64 {
        self.pushed.get() - self.shared.popped.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Consumer {
    /// Pops one record into `out` (cleared first). Returns false when the queue is empty.
    pub fn pop_into(&self, out: &mut Vec<f64>) -> bool {
        let s = &*self.shared;
        let head = s.head.load(Ordering::Relaxed);
        let tail = s.tail.load(Ordering::Acquire);
        if head == tail {
            return false;
        }
        out.clear();
        // SAFETY: [head, tail) was published by the producer's Release store of `tail`.
        unsafe {
            let len = *s.slot(head) as u64;
            out.reserve(len as usize);
            for pos in head + 1..head + 1 + len {
                out.push(*s.slot(pos));
            }
            s.head.store(head + 1 + len, Ordering::Release);
        }
        s.popped.fetch_add(1, Ordering::Release);
        true
    }

    /// Records waiting to be consumed.
    pub fn len(&self) -> u64 {
        let s = &*self.shared;
        s.pushed.load(Ordering::Acquire) - s.popped.load(Ordering::Relaxed)
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
        for round in 0..100u32 {
            let rec: Vec<f64> = (0..(round % 13 + 1)).map(|i| (round * 100 + i) as f64).collect();
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
    }

    #[test]
    fn refuses_when_slots_exhausted_and_oversized() {
        let (p, _c) = channel(1000, 64);
        assert_eq!(p.push(&[0.0; 64]), Err(PushError::TooLarge));
        p.push(&[1.0; 40]).unwrap();
        assert_eq!(p.push(&[1.0; 40]), Err(PushError::Full));
        p.push(&[1.0; 20]).unwrap();
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
        p.push(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0]).unwrap();
        let mut out = Vec::new();
        c.pop_into(&mut out);
        assert!(out[0].is_nan());
        assert_eq!(out[1], f64::INFINITY);
        assert_eq!(out[2], f64::NEG_INFINITY);
        assert!(out[3] == 0.0 && out[3].is_sign_negative());
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
                assert!(last.map_or(true, |l| k > l), "out of order: {k} after {last:?}");
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
    }
}

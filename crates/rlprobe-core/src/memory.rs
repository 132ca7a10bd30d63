//! Heap memory handed back to the system after a burst of small allocations. Listing a run
//! with thousands of sample shards parses every footer and what each shard absorbed: tens of
//! thousands of small strings and maps, freed when the listing ends. glibc keeps freed heap
//! pages for reuse, but what a reader allocates next (column buffers of megabytes) comes from
//! fresh mappings, so the freed pages stay in the process's resident set for its whole life:
//! at 1,954 shards, about 170 MB added to the peak of every later phase of a read.

/// Files listed from which a listing's garbage is worth a trim (it walks the heap: ~ms).
const TRIM_AFTER_FILES: usize = 256;

/// After a listing of `files` files: returns the heap's free pages to the system.
pub fn give_back_after(files: usize) {
    if files >= TRIM_AFTER_FILES {
        trim();
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only releases free memory of the process's own heap
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

/// Buffers from which huge pages are asked for: at least one whole 2 MiB page inside.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Asks the kernel to back the 2 MiB-aligned interior of a large buffer that is about to be
/// filled whole (a column of a step read) with transparent huge pages. A fresh buffer is
/// zeroed by the kernel a page at a time on first touch: at 4 KiB pages, a 1M-step table
/// (376 MB) takes ~92,000 faults, 15-26% of the read; with 2 MiB pages, a few hundred. The
/// advice covers the whole 2 MiB pages inside the buffer only (memory the allocator later
/// carves from the same range, once the buffer is freed into its heap, keeps it); under
/// `never` mode it is ignored. Advice only: an error changes nothing and is not reported.
pub fn advise_huge_pages(ptr: *const u8, bytes: usize) {
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    advise(ptr as usize, bytes);
}

const HUGE_PAGE: usize = 2 << 20;

/// The whole 2 MiB pages inside `bytes` bytes from `start` (start, length), if any.
fn huge_page_range(start: usize, bytes: usize) -> Option<(usize, usize)> {
    let first = start.div_ceil(HUGE_PAGE) * HUGE_PAGE;
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    (end > first).then(|| (first, end - first))
}

#[cfg(target_os = "linux")]
fn advise(start: usize, bytes: usize) {
    if let Some((first, len)) = huge_page_range(start, bytes) {
        // SAFETY: the range lies inside a live allocation of ours; MADV_HUGEPAGE changes
        // how its pages are backed, never their contents
        unsafe {
            libc::madvise(first as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_start: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_huge_pages_inside_the_buffer_are_advised() {
        let mb = 1 << 20;
        assert_eq!(huge_page_range(16, 4 * mb), Some((2 * mb, 2 * mb)));
        assert_eq!(huge_page_range(2 * mb, 4 * mb), Some((2 * mb, 4 * mb)));
        assert_eq!(huge_page_range(16, 2 * mb), None);
        assert_eq!(huge_page_range(0, 0), None);
    }

    /// The kernel's view of the mapping that holds `addr` (from /proc/self/smaps).
    #[cfg(target_os = "linux")]
    fn smaps_entry(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut entry: Option<String> = None;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    if entry.is_some() {
                        break;
                    }
                    if (a..b).contains(&addr) {
                        entry = Some(String::new());
                    }
                    continue;
                }
            }
            if let Some(e) = &mut entry {
                e.push_str(line);
                e.push('\n');
            }
        }
        entry
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_buffer_is_advised_to_use_huge_pages_where_the_kernel_allows() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !mode.contains("[madvise]") && !mode.contains("[always]") {
            eprintln!("transparent huge pages off here ({mode:?}): nothing to check");
            return;
        }
        // a mapping of its own, so no earlier advice on an allocator's heap can answer for it
        let len = 8 << 20;
        // SAFETY: an anonymous private mapping, unmapped below; nothing else refers to it
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(at, libc::MAP_FAILED);
        let flagged = |entry: &str| {
            entry
                .lines()
                .find(|l| l.starts_with("VmFlags:"))
                .is_some_and(|l| l.split_whitespace().any(|f| f == "hg"))
        };
        let (first, _) = huge_page_range(at as usize, len).unwrap();
        assert!(!flagged(&smaps_entry(first).unwrap()), "not advised yet");
        advise_huge_pages(at as *const u8, len);
        let entry = smaps_entry(first).expect("the buffer is mapped");
        // SAFETY: the mapping made above, of `len` bytes
        unsafe { libc::munmap(at, len) };
        // `hg`: the mapping carries MADV_HUGEPAGE
        assert!(flagged(&entry), "{entry}");
    }
}

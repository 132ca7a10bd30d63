//! Scoped threads for the reads that split their work (step columns or row shares, shard
//! footers): results in order, and a thread the system refuses costs speed, not the read.

/// Runs `read` on each item on a thread of its own (scoped), results in item order. A
/// thread the system refuses (a pids limit) is read on the calling thread.
pub(crate) fn on_threads<T: Sync, R: Send>(items: &[T], read: impl Fn(&T) -> R + Sync) -> Vec<R> {
    std::thread::scope(|scope| {
        let read = &read;
        let handles: Vec<_> = items
            .iter()
            .map(|item| {
                std::thread::Builder::new()
                    .name("rlprobe-read".into())
                    .spawn_scoped(scope, move || read(item))
                    .map_err(|_| item)
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(item) => read(item),
            })
            .collect()
    })
}

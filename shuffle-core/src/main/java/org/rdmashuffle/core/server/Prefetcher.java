package org.rdmashuffle.core.server;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.VerbsException;

/**
 * For map outputs registered on demand (ODP): asks the device to fault in a block's pages when a
 * reducer is told where the block is, so its reads do not each wait for a page fault ({@code
 * ibv_advise_mr} PREFETCH, asynchronous). Advice only: a device that cannot take it (EOPNOTSUPP) or
 * refuses it is not asked again, said once in the log; the reads still work, faulting as they go.
 *
 * <p>A reducer chooses how often it names a block (one request may name a 16 GiB block thousands of
 * times), so what it makes the kernel do is bounded here, not by its requests: a range advised within
 * the last second is not advised again, and one application's registry advises at most {@value
 * #MAX_PER_SECOND} ranges and {@value #MAX_BYTES_PER_SECOND} bytes a second (beyond, a range is cut
 * to what is left, or skipped: its reads fault its pages in).
 *
 * <p>Called by its registry under the registry's lock, with a region that is registered (so never
 * one being deregistered: advised outside the lock, a region closed meanwhile would be advised by a
 * stale key); the call only queues the advice, at most the bounds above. From the completion poller or
 * a server thread. Thread-safe.
 */
final class Prefetcher {
    private static final System.Logger LOG = System.getLogger(Prefetcher.class.getName());
    /**
     * Ranges advised a second, per application: far more blocks than one application's reducers read
     * from one node a second at the sizes where faulting matters.
     */
    static final int MAX_PER_SECOND = 16_384;
    /** Bytes advised a second, per application: more than a 100 Gb/s port carries, and than a disk reads. */
    static final long MAX_BYTES_PER_SECOND = 8L << 30;
    /** Ranges remembered as advised (the last second's, at most this many: the oldest forgotten first). */
    static final int REMEMBERED = 4096;
    private static final long SECOND_NANOS = 1_000_000_000L;

    private record Range(MemoryRegion region, long offset, long length) {
    }

    private final ProtectionDomain pd;
    private final LongSupplier clock;
    /** Ranges advised, with when: a range named again within a second is not advised again. Guarded by this. */
    private final Map<Range, Long> advised = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Range, Long> eldest) {
            return size() > REMEMBERED;
        }
    };
    /** The current second's start (nanoTime) and what was advised in it. Guarded by this. */
    private long secondStart;
    private int advisedThisSecond;
    private long bytesThisSecond;
    /** Ranges advised, and ranges not advised (advised less than a second before, or beyond the bounds). */
    private long calls;
    private long skipped;
    private volatile boolean off;

    Prefetcher(ProtectionDomain pd) {
        this(pd, System::nanoTime);
    }

    Prefetcher(ProtectionDomain pd, LongSupplier clock) {
        this.pd = pd;
        this.clock = clock;
        this.secondStart = clock.getAsLong();
    }

    void prefetch(MemoryRegion region, long offset, long length) {
        if (off || length == 0) {
            return;
        }
        long advise;
        synchronized (this) {
            long now = clock.getAsLong();
            if (now - secondStart >= SECOND_NANOS) {
                secondStart = now;
                advisedThisSecond = 0;
                bytesThisSecond = 0;
            }
            Range range = new Range(region, offset, length);
            Long at = advised.get(range);
            if ((at != null && now - at < SECOND_NANOS) || advisedThisSecond >= MAX_PER_SECOND
                    || bytesThisSecond >= MAX_BYTES_PER_SECOND) {
                skipped++;
                return;
            }
            advise = Math.min(length, MAX_BYTES_PER_SECOND - bytesThisSecond);
            advised.remove(range); // put again: the most recent last, the order the eldest is found by
            advised.put(range, now);
            advisedThisSecond++;
            bytesThisSecond += advise;
            calls++;
        }
        try {
            if (!pd.prefetch(region, offset, advise)) {
                stop("the device takes no advice on on-demand regions (ibv_advise_mr: EOPNOTSUPP): reads fault pages in");
            }
        } catch (VerbsException | IllegalArgumentException | IllegalStateException e) {
            stop("ibv_advise_mr refused a prefetch (" + e.getMessage() + "): reads fault pages in, no more prefetches");
        }
    }

    private void stop(String why) {
        if (!off) {
            off = true;
            LOG.log(System.Logger.Level.INFO, "rdma-shuffle: " + why);
        }
    }

    boolean stopped() {
        return off;
    }

    /** Ranges the device was advised of, since the start. */
    synchronized long calls() {
        return calls;
    }

    /** Ranges not advised: named again within a second of their advice, or beyond the bounds. */
    synchronized long skipped() {
        return skipped;
    }
}

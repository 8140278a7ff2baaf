package org.rdmashuffle.core.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;

/**
 * What a reducer's requests make the device do through on-demand prefetches: each described block was
 * advised (ibv_advise_mr), so a request naming one 16 GiB block 10,900 times queued 10,900 kernel
 * prefetches of 16 GiB. A range is advised at most once a second, and an application's advice is
 * bounded a second in ranges and bytes. A device stub counts the advice; the clock is the test's.
 */
class PrefetcherTest {
    private static final long GIB = 1L << 30;

    /** The advice a device took: (offset, length) per call. */
    private final List<long[]> advised = new ArrayList<>();
    private final ProtectionDomain pd = (ProtectionDomain) Proxy.newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {ProtectionDomain.class}, (proxy, method, args) -> switch (method.getName()) {
                case "prefetch" -> {
                    advised.add(new long[] {(long) args[1], (long) args[2]});
                    yield true;
                }
                case "hashCode" -> System.identityHashCode(proxy);
                case "equals" -> proxy == args[0];
                case "toString" -> "a device stub";
                default -> throw new UnsupportedOperationException(method.getName());
            });
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    private static MemoryRegion region() {
        return (MemoryRegion) Proxy.newProxyInstance(PrefetcherTest.class.getClassLoader(), new Class<?>[] {MemoryRegion.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    case "toString" -> "a region stub";
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }

    @Test
    void oneSixteenGibBlockNamedTenThousandTimesIsAdvisedOnce() {
        Prefetcher p = new Prefetcher(pd, now::get);
        MemoryRegion r = region();
        for (int i = 0; i < 10_900; i++) {
            p.prefetch(r, 0, 16 * GIB);
        }
        assertEquals(1, advised.size(), "advice for one block named 10,900 times");
        assertEquals(10_899, p.skipped());
        now.addAndGet(1_000_000_000L); // a second later: advised again (its pages may have gone)
        p.prefetch(r, 0, 16 * GIB);
        assertEquals(2, advised.size());
    }

    @Test
    void distinctRangesAreAdvisedNoMoreThanTheBoundASecond() {
        Prefetcher p = new Prefetcher(pd, now::get);
        MemoryRegion r = region();
        for (int i = 0; i < 3 * Prefetcher.MAX_PER_SECOND; i++) {
            p.prefetch(r, (long) i << 12, 4096);
        }
        assertEquals(Prefetcher.MAX_PER_SECOND, advised.size(), "ranges advised in one second");
        now.addAndGet(1_000_000_000L);
        int before = advised.size();
        for (int i = 0; i < 8; i++) { // 16 GiB blocks, each its own: cut at the bytes a second
            p.prefetch(r, (1L << 40) + i * 16 * GIB, 16 * GIB);
        }
        long bytes = 0;
        for (long[] a : advised.subList(before, advised.size())) {
            bytes += a[1];
        }
        assertTrue(advised.size() > before, "the second's first block advised");
        assertTrue(bytes <= Prefetcher.MAX_BYTES_PER_SECOND, "bytes advised in one second: " + bytes);
        now.addAndGet(1_000_000_000L);
        int beforeNext = advised.size();
        p.prefetch(r, 1L << 41, 4096);
        assertEquals(beforeNext + 1, advised.size(), "the next second's first range advised");
    }
}

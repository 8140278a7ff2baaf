package org.rdmashuffle.spark;

import java.net.InetSocketAddress;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * What this executor's fetches moved over each transport: blocks and bytes over the engine (RDMA on a
 * verbs device, TCP on the software provider; the engine's carrier names which), and from which serving engine, blocks and bytes handed to Spark's transport and why. The "carried by" report, the
 * tests' counts and the metrics plugin's report all read these. Lock-free; counted on completion
 * pollers (RDMA) and Spark's threads (the fallback).
 */
final class TransportCounts {
    private final AtomicLong blocksOverRdma = new AtomicLong();
    private final AtomicLong bytesOverRdma = new AtomicLong();
    private final AtomicLong blocksOverFallback = new AtomicLong();
    private final AtomicLong bytesOverFallback = new AtomicLong();
    /** Blocks handed to Spark's transport, by {@link FallbackReason} ordinal. */
    private final AtomicLongArray fallbackBlocksByReason = new AtomicLongArray(FallbackReason.values().length);
    /** Blocks fetched over RDMA by the address of the engine that served them (what crossed which link). */
    private final ConcurrentMap<String, LongAdder> rdmaBlocksByServer = new ConcurrentSkipListMap<>();

    /** One block fetched over RDMA from the engine at {@code server}. */
    void fetchedOverRdma(InetSocketAddress server, long bytes) {
        blocksOverRdma.incrementAndGet();
        bytesOverRdma.addAndGet(bytes);
        rdmaBlocksByServer.computeIfAbsent(server.getHostString(), k -> new LongAdder()).increment();
    }

    /** {@code blocks} handed to Spark's transport for {@code why} (counted when asked for). */
    void fellBack(FallbackReason why, int blocks) {
        blocksOverFallback.addAndGet(blocks);
        fallbackBlocksByReason.addAndGet(why.ordinal(), blocks);
    }

    /** Bytes Spark's transport delivered in our stead (counted when delivered). */
    void deliveredByFallback(long bytes) {
        bytesOverFallback.addAndGet(bytes);
    }

    /** {@code [blocks over RDMA, blocks over the built-in transport, bytes over RDMA, bytes over the built-in transport]}. */
    long[] snapshot() {
        return new long[] {blocksOverRdma.get(), blocksOverFallback.get(), bytesOverRdma.get(), bytesOverFallback.get()};
    }

    /** Blocks handed to Spark's transport, by reason's metric name (every reason, 0 where none). */
    Map<String, Long> fallbackBlocksByReason() {
        Map<String, Long> m = new TreeMap<>();
        for (FallbackReason r : FallbackReason.values()) {
            m.put(r.metricName(), fallbackBlocksByReason.get(r.ordinal()));
        }
        return m;
    }

    /** Blocks fetched over RDMA by the host of the engine that served them. */
    Map<String, Long> rdmaBlocksByServer() {
        Map<String, Long> m = new TreeMap<>();
        rdmaBlocksByServer.forEach((server, blocks) -> m.put(server, blocks.sum()));
        return m;
    }

    /**
     * The "carried by" report's counts: {@code fetched N blocks (B bytes) <over> from A (n), ..., M over the built-in
     * transport}, {@code over} naming the engine's carrier ({@code over RDMA}, {@code over the software provider (TCP)}).
     */
    String describe(String over) {
        StringBuilder from = new StringBuilder();
        rdmaBlocksByServer.forEach((server, blocks) -> from.append(from.isEmpty() ? " from " : ", ").append(server)
                .append(" (").append(blocks.sum()).append(')'));
        return "fetched " + blocksOverRdma.get() + " blocks (" + bytesOverRdma.get() + " bytes) " + over + from + ", "
                + blocksOverFallback.get() + " over the built-in transport";
    }
}

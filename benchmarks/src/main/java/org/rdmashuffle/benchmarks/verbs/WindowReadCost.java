package org.rdmashuffle.benchmarks.verbs;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.MemoryWindowType;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * What reading through memory windows costs against reading a region under its own key, with the
 * engine's access pattern: a request is a batch of {@value #READS} reads of {@value #BLOCK}-byte
 * blocks, consecutive in one map output, posted as one chain. Three ways, each round in turn first:
 * <ul>
 * <li>{@code region}: the region's rkey;
 * <li>{@code cached window}: a type 2 window bound once (per connection) over the whole region on
 *     the serving QP, read under its key;
 * <li>{@code window per request}: the serving QP binds a type 2 window over the request's range,
 *     the reads go through it, then it is invalidated ({@code LOCAL_INV}): the per-request cost a
 *     storage system found too high without a cache of bound windows (ydb-platform/nbs #6542).
 * </ul>
 * Reported per round: microseconds per request (median) and MB/s. Usage:
 * {@code WindowReadCost [requests] [rounds]}; runs on any device with type 2 windows (the software
 * provider has them; rxe too).
 */
public final class WindowReadCost {
    private static final int BLOCK = 4096;
    private static final int READS = 16;
    private static final int REQUEST_BYTES = BLOCK * READS;
    private static final int REQUESTS_IN_REGION = 256;

    private WindowReadCost() {
    }

    private record Sample(String way, int round, double microsPerRequest, double mbPerSecond) {
    }

    public static void main(String[] args) {
        int requests = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        List<Sample> samples = new ArrayList<>();
        try (VerbsBench bench = new VerbsBench(REQUEST_BYTES, READS + 1);
             MemoryRegion served = bench.pd.allocateAndRegister((long) REQUEST_BYTES * REQUESTS_IN_REGION,
                     Access.LOCAL_WRITE | Access.REMOTE_READ | Access.MW_BIND);
             SendWorkRequests chain = SendWorkRequests.allocate(READS, 1);
             SendWorkRequests local = SendWorkRequests.allocate(1, 1);
             WorkCompletions wc = WorkCompletions.allocate(READS)) {
            if (bench.context.queryDevice().memoryWindowType2() == null) {
                System.out.println(bench.context.device().name() + " has no type 2 memory windows: nothing to compare");
                return;
            }
            System.out.println("device " + bench.context.device().name() + ", " + requests + " requests of " + READS + " x "
                    + BLOCK + " B per way and round");
            String[] ways = {"region", "cached window", "window per request"};
            for (int r = 1; r <= rounds; r++) {
                for (int k = 0; k < ways.length; k++) {
                    String way = ways[(k + r) % ways.length];
                    Sample s = measure(bench, served, chain, local, wc, way, r, requests);
                    samples.add(s);
                    System.out.printf(Locale.ROOT, "round %d %-20s %8.1f us per request (median), %7.1f MB/s%n", r, way,
                            s.microsPerRequest(), s.mbPerSecond());
                }
            }
            System.out.println();
            System.out.println("| way | us per request | MB/s | (medians of " + rounds + " rounds) |");
            System.out.println("|---|---|---|---|");
            for (String way : ways) {
                List<Sample> of = samples.stream().filter(s -> s.way().equals(way)).toList();
                System.out.printf(Locale.ROOT, "| %s | %.1f | %.1f | |%n", way,
                        median(of.stream().mapToDouble(Sample::microsPerRequest).toArray()),
                        median(of.stream().mapToDouble(Sample::mbPerSecond).toArray()));
            }
        }
    }

    private static Sample measure(VerbsBench bench, MemoryRegion served, SendWorkRequests chain, SendWorkRequests local,
                                  WorkCompletions wc, String way, int round, int requests) {
        double[] micros = new double[requests];
        try (MemoryWindow window = way.equals("region") ? null : bench.pd.allocateWindow(MemoryWindowType.TYPE_2)) {
            if (way.equals("cached window")) {
                bind(bench, local, wc, window, served, served.address(), served.length());
            }
            long start = System.nanoTime();
            for (int q = 0; q < requests; q++) {
                long offset = (long) (q % REQUESTS_IN_REGION) * REQUEST_BYTES;
                long t = System.nanoTime();
                int key = served.rkey();
                if (way.equals("window per request")) {
                    key = bind(bench, local, wc, window, served, served.address() + offset, REQUEST_BYTES);
                } else if (window != null) {
                    key = window.rkey();
                }
                for (int i = 0; i < READS; i++) {
                    chain.get(i).rdmaRead(i, i == READS - 1 ? SendFlags.SIGNALED : 0, bench.destination, (long) i * BLOCK, BLOCK,
                            served.address() + offset + (long) i * BLOCK, key);
                }
                bench.requester.postSend(chain, READS);
                bench.awaitCompletion(wc);
                if (way.equals("window per request")) {
                    local.get(0).reset().wrId(2).flags(SendFlags.SIGNALED).localInvalidate(key);
                    bench.responder.postSend(local, 1);
                    awaitServing(bench, wc);
                }
                micros[q] = (System.nanoTime() - t) / 1e3;
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            return new Sample(way, round, median(micros), (double) requests * REQUEST_BYTES / seconds / 1e6);
        }
    }

    /** Binds {@code window} on the serving QP over {@code [address, address + length)}; returns its key. */
    private static int bind(VerbsBench bench, SendWorkRequests local, WorkCompletions wc, MemoryWindow window,
                            MemoryRegion served, long address, long length) {
        int key = MemoryWindow.nextRkey(window.rkey());
        local.get(0).reset().wrId(1).flags(SendFlags.SIGNALED).bindWindow(window, key, served, address, length, Access.REMOTE_READ);
        bench.responder.postSend(local, 1);
        awaitServing(bench, wc);
        return key;
    }

    private static void awaitServing(VerbsBench bench, WorkCompletions wc) {
        int n;
        do {
            n = bench.responderCq.poll(wc);
        } while (n == 0);
        if (!wc.isSuccess(0)) {
            throw wc.failure(0);
        }
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }
}

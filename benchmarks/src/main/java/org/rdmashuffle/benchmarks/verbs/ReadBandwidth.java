package org.rdmashuffle.benchmarks.verbs;

import java.util.Locale;

import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * RDMA_READ bandwidth through this project's verbs layer, measured the way perftest's
 * {@code ib_read_bw} does: one QP, reads of {@code size} bytes kept {@code depth} deep in chains of
 * {@code chain} with the last one signaled, {@code iterations} reads in all, wall-clock time from the
 * first post to the last completion. Prints one line with Gb/s (10^9 bits, as {@code --report_gbits}).
 * A first, untimed pass of the same reads lets the JIT compile the loop: a JVM's first thousand
 * iterations run interpreted, which says nothing about the verbs layer.
 *
 * <pre>ReadBandwidth SIZE ITERATIONS [DEPTH] [CHAIN]</pre>
 */
public final class ReadBandwidth {
    private ReadBandwidth() {
    }

    public static void main(String[] args) {
        int size = Integer.parseInt(args[0]);
        int iterations = Integer.parseInt(args[1]);
        int depth = args.length > 2 ? Integer.parseInt(args[2]) : 128;
        int chainLength = args.length > 3 ? Integer.parseInt(args[3]) : 16;
        if (depth % chainLength != 0 || iterations % chainLength != 0) {
            throw new IllegalArgumentException("depth and iterations must be multiples of the chain length " + chainLength);
        }
        try (VerbsBench bench = new VerbsBench((long) size * depth, depth + 1)) {
            measure(bench.requester, bench.cq, bench.destination, bench.source.address(), bench.source.rkey(), size,
                    iterations, depth, chainLength);
        }
    }

    /**
     * Reads {@code iterations} blocks of {@code size} from {@code (remote, rkey)} into {@code destination}
     * through {@code requester}, once untimed and once timed, and prints the timed pass's line.
     */
    static void measure(org.rdmashuffle.verbs.QueuePair requester, org.rdmashuffle.verbs.CompletionQueue cq,
                        org.rdmashuffle.verbs.MemoryRegion destination, long remote, int rkey, int size, int iterations,
                        int depth, int chainLength) {
        int slots = depth / chainLength;
        SendWorkRequests[] chains = new SendWorkRequests[slots];
        try (WorkCompletions wc = WorkCompletions.allocate(slots)) {
            for (int s = 0; s < slots; s++) {
                chains[s] = SendWorkRequests.allocate(chainLength, 1);
                for (int i = 0; i < chainLength; i++) {
                    long off = ((long) s * chainLength + i) * size;
                    chains[s].get(i).rdmaRead(s, i == chainLength - 1 ? SendFlags.SIGNALED : 0, destination, off, size,
                            remote + off, rkey);
                }
            }
            run(requester, cq, chains, wc, iterations / chainLength); // warm-up, untimed
            long nanos = run(requester, cq, chains, wc, iterations / chainLength);
            double gbits = (double) size * iterations * 8 / nanos;
            System.out.printf(Locale.ROOT, "rdma-shuffle RDMA_READ size=%d iterations=%d depth=%d chain=%d seconds=%.3f Gb/s=%.4f%n",
                    size, iterations, depth, chainLength, nanos / 1e9, gbits);
        } finally {
            for (SendWorkRequests c : chains) {
                if (c != null) {
                    c.close();
                }
            }
        }
    }

    /** Posts {@code toPost} chains, keeping every slot busy, and returns the nanoseconds it took. */
    private static long run(org.rdmashuffle.verbs.QueuePair requester, org.rdmashuffle.verbs.CompletionQueue cq,
                            SendWorkRequests[] chains, WorkCompletions wc, int toPost) {
        int posted = 0;
        int completed = 0;
        long start = System.nanoTime();
        for (int s = 0; s < chains.length && posted < toPost; s++, posted++) {
            requester.postSend(chains[s], chains[s].capacity());
        }
        while (completed < toPost) {
            int n = cq.poll(wc);
            for (int i = 0; i < n; i++) {
                if (!wc.isSuccess(i)) {
                    throw wc.failure(i);
                }
                completed++;
                if (posted < toPost) {
                    SendWorkRequests next = chains[(int) wc.wrId(i)];
                    requester.postSend(next, next.capacity());
                    posted++;
                }
            }
        }
        return System.nanoTime() - start;
    }
}

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
        int slots = depth / chainLength;
        try (VerbsBench bench = new VerbsBench((long) size * depth, depth + 1);
             WorkCompletions wc = WorkCompletions.allocate(slots)) {
            SendWorkRequests[] chains = new SendWorkRequests[slots];
            for (int s = 0; s < slots; s++) {
                chains[s] = SendWorkRequests.allocate(chainLength, 1);
                for (int i = 0; i < chainLength; i++) {
                    long off = ((long) s * chainLength + i) * size;
                    chains[s].get(i).rdmaRead(s, i == chainLength - 1 ? SendFlags.SIGNALED : 0, bench.destination, off, size,
                            bench.source.address() + off, bench.source.rkey());
                }
            }
            run(bench, chains, wc, iterations / chainLength); // warm-up, untimed
            long nanos = run(bench, chains, wc, iterations / chainLength);
            double gbits = (double) size * iterations * 8 / nanos;
            System.out.printf(Locale.ROOT, "rdma-shuffle RDMA_READ size=%d iterations=%d depth=%d chain=%d seconds=%.3f Gb/s=%.4f%n",
                    size, iterations, depth, chainLength, nanos / 1e9, gbits);
            for (SendWorkRequests c : chains) {
                c.close();
            }
        }
    }

    /** Posts {@code toPost} chains, keeping every slot busy, and returns the nanoseconds it took. */
    private static long run(VerbsBench bench, SendWorkRequests[] chains, WorkCompletions wc, int toPost) {
        int posted = 0;
        int completed = 0;
        long start = System.nanoTime();
        for (int s = 0; s < chains.length && posted < toPost; s++, posted++) {
            bench.requester.postSend(chains[s], chains[s].capacity());
        }
        while (completed < toPost) {
            int n = bench.cq.poll(wc);
            for (int i = 0; i < n; i++) {
                if (!wc.isSuccess(i)) {
                    throw wc.failure(i);
                }
                completed++;
                if (posted < toPost) {
                    SendWorkRequests next = chains[(int) wc.wrId(i)];
                    bench.requester.postSend(next, next.capacity());
                    posted++;
                }
            }
        }
        return System.nanoTime() - start;
    }
}
